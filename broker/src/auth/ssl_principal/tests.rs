//! SslPrincipalMapperTest, ported by name.
use super::*;

fn valid(rules: &str) {
    SslPrincipalMapper::from_rules(rules)
        .unwrap_or_else(|e| panic!("{rules} should be valid: {e}"));
}

fn invalid(rules: &str) {
    assert!(
        SslPrincipalMapper::from_rules(rules).is_err(),
        "{rules} should be refused"
    );
}

#[test]
fn test_valid_rules() {
    valid("DEFAULT");
    valid("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/");
    valid("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT");
    valid("RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/");
    valid("RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L");
    valid("RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U");
    valid("RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/");
    valid("RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/");
}

#[test]
fn test_invalid_rules() {
    invalid("default");
    invalid("DEFAUL");
    invalid("DEFAULT/L");
    invalid("DEFAULT/U");
    invalid("RULE:CN=(.*?),OU=ServiceUsers.*/$1");
    invalid("rule:^CN=(.*?),OU=ServiceUsers.*$/$1/");
    invalid("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U");
    invalid("RULE:^CN=(.*?),OU=ServiceUsers.*$/L");
    invalid("RULE:^CN=(.*?),OU=ServiceUsers.*$/U");
    invalid("RULE:^CN=(.*?),OU=ServiceUsers.*$/LU");
}

#[test]
fn test_ssl_principal_mapper() {
    let rules = [
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L",
        "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
        "RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U",
        "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
        "DEFAULT",
    ]
    .join(", ");
    let mapper = SslPrincipalMapper::from_rules(&rules).unwrap();
    let name = |dn| mapper.name(dn).unwrap();
    assert_eq!(name("CN=Duke,OU=ServiceUsers,O=Org,C=US"), "duke");
    assert_eq!(
        name("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US"),
        "duke@sme"
    );
    assert_eq!(name("cn=duke,ou=sme,dc=mycp,dc=com"), "DUKE@SME");
    assert_eq!(name("cN=duke,OU=JavaSoft,O=Sun Microsystems"), "DUKE");
    assert_eq!(
        name("OU=JavaSoft,O=Sun Microsystems,C=US"),
        "OU=JavaSoft,O=Sun Microsystems,C=US"
    );
}

fn splits(expected: &str, rules: &str) {
    assert_eq!(
        SslPrincipalMapper::from_rules(rules).unwrap().to_string(),
        format!("SslPrincipalMapper(rules = {expected})"),
        "rules {rules:?}"
    );
}

#[test]
fn test_rules_splitting() {
    splits("[]", "");
    splits("[DEFAULT]", "DEFAULT");
    splits("[RULE:/]", "RULE://");
    splits("[RULE:/.*]", "RULE:/.*/");
    splits("[RULE:/.*/L]", "RULE:/.*/L");
    splits("[RULE:/, DEFAULT]", "RULE://,DEFAULT");
    splits("[RULE:/, DEFAULT]", "  RULE:// ,  DEFAULT  ");
    splits(
        "[RULE:   /     , DEFAULT]",
        "  RULE:   /     / ,  DEFAULT  ",
    );
    splits(
        "[RULE:  /     /U, DEFAULT]",
        "  RULE:  /     /U   ,DEFAULT  ",
    );
    splits(
        "[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]",
        "  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  ",
    );
    // Empty rules are ignored.
    splits("[]", ",   , , ,      , , ,   ");
    splits("[RULE:/, DEFAULT]", ",,RULE://,,,DEFAULT,,");
    splits(
        "[RULE: /   , DEFAULT]",
        ",  , RULE: /   /    ,,,   DEFAULT, ,   ",
    );
    splits(
        "[RULE:   /  /U, DEFAULT]",
        "     ,  , RULE:   /  /U    ,,  ,DEFAULT, ,",
    );
    // Escape sequences.
    splits(r"[RULE:\/\\\(\)\n\t/\/\/]", r"RULE:\/\\\(\)\n\t/\/\//");
    splits(
        r"[RULE:\**\/+/*/L, RULE:\/*\**/**]",
        r"RULE:\**\/+/*/L,RULE:\/*\**/**/",
    );
}

#[test]
fn test_comma_with_whitespace() {
    let mapper =
        SslPrincipalMapper::from_rules(r"RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT").unwrap();
    assert_eq!(
        mapper
            .name(r"CN=Tkac\, Adam,OU=ITZ,DC=geodis,DC=cz")
            .unwrap(),
        r"Tkac\, Adam"
    );
}

#[test]
fn a_rule_that_applies_to_nobody_names_no_one() {
    let mapper = SslPrincipalMapper::from_rules("RULE:^CN=(.*),OU=x$/$1/").unwrap();
    let err = mapper.name("CN=a,OU=y").unwrap_err();
    assert!(err.starts_with("No rules apply to CN=a,OU=y"), "{err}");
}

#[test]
fn a_reference_to_a_missing_group_stays_literal() {
    let mapper = SslPrincipalMapper::from_rules("RULE:^CN=(.*)$/$1@$2/").unwrap();
    assert_eq!(mapper.name("CN=a").unwrap(), "a@$2");
    let mapper = SslPrincipalMapper::from_rules("RULE:^CN=(.*)$/$12/").unwrap();
    assert_eq!(
        mapper.name("CN=a").unwrap(),
        "a2",
        "$12 with one group is $1 then 2"
    );
}

#[test]
fn values_are_escaped_as_rfc_2253() {
    assert_eq!(escape_value("Tkac, Adam"), r"Tkac\, Adam");
    assert_eq!(escape_value(" #x "), r"\ #x\ ");
    assert_eq!(escape_value("a+b\"c<d>e;f\\"), r#"a\+b\"c\<d\>e\;f\\"#);
}
