use super::*;

/// RE2/J's `matches()`: the whole topic name.
#[test]
fn a_regex_matches_whole_topic_names() {
    let re = compile("foo*").unwrap();
    for (name, matches) in [
        ("fo", true),
        ("foo", true),
        ("fooo", true),
        ("foobar", false),
    ] {
        assert_eq!(re.is_match(name), matches, "{name}");
    }
    let alternation = compile("a|b").unwrap();
    assert!(alternation.is_match("b") && !alternation.is_match("ab"));
    // librdkafka's "^..." and an explicit "$" are harmless.
    assert!(compile("^py-.*$").unwrap().is_match("py-a"));
}

/// What RE2/J refuses, the `regex` crate refuses, with Apache's
/// message around its reason; backreferences and look-around are in
/// neither.
#[test]
fn invalid_regexes_are_refused_with_apaches_message() {
    for (regex, reason) in [
        ("[", "unclosed character class"),
        ("(a", "unclosed group"),
        (
            "a{2,1}",
            "invalid repetition count range, the start must be <= the end",
        ),
        ("(a)\\1", "backreferences are not supported"),
        (
            "(?=a)",
            "look-around, including look-ahead and look-behind, is not supported",
        ),
    ] {
        let e = compile(regex).unwrap_err();
        assert_eq!(e.code, INVALID_REGULAR_EXPRESSION);
        assert_eq!(
            e.message,
            format!("SubscribedTopicRegex `{regex}` is not a valid regular expression: {reason}."),
        );
    }
}

/// A difference from RE2/J: `\Q...\E` quoting is not supported.
#[test]
fn quoting_with_q_and_e_is_not_supported() {
    assert!(compile("\\Qa.b\\E").is_err());
}
