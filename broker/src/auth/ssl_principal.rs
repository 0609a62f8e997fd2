//! `ssl.principal.mapping.rules`: a client certificate's subject to a user
//! name, as Apache's SslPrincipalMapper, and the subject written as Java's
//! `X500Principal.getName()` writes it (RFC 2253), which the rules match.

use regex::{Captures, Regex};

/// The rules, tried in order; the first that applies names the user.
#[derive(Debug, Clone)]
pub struct SslPrincipalMapper {
    rules: Vec<Rule>,
}

#[derive(Debug, Clone)]
enum Rule {
    Default,
    Replace {
        pattern: Regex,
        /// The pattern against the whole name (Java's `matches()`).
        whole: Regex,
        replacement: String,
        case: Case,
    },
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Case {
    Keep,
    Lower,
    Upper,
}

/// Apache's RULE_PATTERN, in `regex` syntax: Java's and the `regex` crate's
/// agree on every construct it uses.
const RULE_PATTERN: &str = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)";

impl Default for SslPrincipalMapper {
    fn default() -> Self {
        SslPrincipalMapper {
            rules: vec![Rule::Default],
        }
    }
}

impl SslPrincipalMapper {
    /// Parses `ssl.principal.mapping.rules`; the error says which rule is
    /// wrong, in Apache's words.
    pub fn from_rules(rules: &str) -> Result<SslPrincipalMapper, String> {
        let splitter = Regex::new(&format!(r"\s*({RULE_PATTERN})\s*(,\s*|$)")).expect("valid");
        let parser = Regex::new(&format!("^(?:{RULE_PATTERN})")).expect("valid");
        let mut parsed = Vec::new();
        for rule in find_all(&splitter, rules.trim()).map(|c| c.get(1).map_or("", |m| m.as_str())) {
            let caps = parser
                .captures(rule)
                .ok_or_else(|| format!("Invalid rule: {rule}"))?;
            let end = caps.get(0).map_or(0, |m| m.end());
            if end != rule.len() {
                return Err(format!(
                    "Invalid rule: `{rule}`, unmatched substring: `{}`",
                    &rule[end..]
                ));
            }
            if caps.get(1).is_some() {
                parsed.push(Rule::Default);
            } else if let Some(pattern) = caps.get(2) {
                let compile =
                    |p: &str| Regex::new(p).map_err(|e| format!("Invalid rule: {rule}: {e}"));
                parsed.push(Rule::Replace {
                    whole: compile(&format!("^(?:{})$", pattern.as_str()))?,
                    pattern: compile(pattern.as_str())?,
                    replacement: caps.get(4).map_or("", |m| m.as_str()).to_string(),
                    case: match caps.get(6).map(|m| m.as_str()) {
                        Some("L") => Case::Lower,
                        Some("U") => Case::Upper,
                        _ => Case::Keep,
                    },
                });
            }
            // An empty rule is ignored.
        }
        Ok(SslPrincipalMapper { rules: parsed })
    }

    /// The user a subject maps to, or why none does.
    pub fn name(&self, distinguished_name: &str) -> Result<String, String> {
        self.rules
            .iter()
            .find_map(|r| r.apply(distinguished_name))
            .ok_or_else(|| format!("No rules apply to {distinguished_name}, rules {self}"))
    }
}

impl Rule {
    fn apply(&self, dn: &str) -> Option<String> {
        let Rule::Replace {
            pattern,
            whole,
            replacement,
            case,
        } = self
        else {
            return Some(dn.to_string());
        };
        if !whole.is_match(dn) {
            return None;
        }
        let result = replace_all(pattern, dn, replacement);
        Some(match case {
            Case::Keep => result,
            Case::Lower => result.to_lowercase(),
            Case::Upper => result.to_uppercase(),
        })
    }
}

/// Java's `Matcher.find()` loop: after an empty match the search moves on
/// one character; an empty match right after a non-empty one counts.
fn find_all<'h>(re: &'h Regex, text: &'h str) -> impl Iterator<Item = Captures<'h>> + 'h {
    let mut at = 0;
    std::iter::from_fn(move || {
        if at > text.len() {
            return None;
        }
        let caps = re.captures_at(text, at)?;
        let m = caps.get(0).expect("group 0");
        at = if m.is_empty() {
            // Past the next character, never inside one.
            m.end() + text[m.end()..].chars().next().map_or(1, char::len_utf8)
        } else {
            m.end()
        };
        Some(caps)
    })
}

/// Java's `String.replaceAll` with Apache's treatment of back references
/// to groups the pattern does not have (kept as literal text).
fn replace_all(re: &Regex, text: &str, replacement: &str) -> String {
    let mut out = String::new();
    let mut copied = 0;
    for caps in find_all(re, text) {
        let m = caps.get(0).expect("group 0");
        if m.start() < copied {
            continue;
        }
        out.push_str(&text[copied..m.start()]);
        expand(&caps, replacement, &mut out);
        copied = m.end();
    }
    out.push_str(&text[copied..]);
    out
}

/// Java's `appendReplacement`: `\x` is `x`; `$` and digits name a group,
/// taking as many digits as still name one.
fn expand(caps: &Captures, replacement: &str, out: &mut String) {
    let groups = caps.len() - 1;
    let mut chars = replacement.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    out.push(next);
                }
            }
            '$' if chars.peek().is_some_and(char::is_ascii_digit) => {
                let mut digits = String::new();
                let mut group: usize = 0;
                while let Some(d) = chars.peek().and_then(|d| d.to_digit(10)) {
                    let next = group * 10 + d as usize;
                    if !digits.is_empty() && next > groups {
                        break;
                    }
                    group = next;
                    digits.push(chars.next().expect("peeked"));
                }
                if group > groups || (groups == 0 && group > 0) {
                    // Apache escapes a reference to a missing group.
                    out.push('$');
                    out.push_str(&digits);
                } else {
                    out.push_str(caps.get(group).map_or("", |m| m.as_str()));
                }
            }
            c => out.push(c),
        }
    }
}

impl std::fmt::Display for SslPrincipalMapper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let rules: Vec<String> = self.rules.iter().map(Rule::to_string).collect();
        write!(f, "SslPrincipalMapper(rules = [{}])", rules.join(", "))
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rule::Default => write!(f, "DEFAULT"),
            Rule::Replace {
                pattern,
                replacement,
                case,
                ..
            } => {
                write!(f, "RULE:{}/{replacement}", pattern.as_str())?;
                match case {
                    Case::Keep => Ok(()),
                    Case::Lower => write!(f, "/L"),
                    Case::Upper => write!(f, "/U"),
                }
            }
        }
    }
}

/// A certificate's subject as Java's `X500Principal.getName()`: RFC 2253,
/// last RDN first, the keywords Java knows, any other attribute as its OID
/// and `#` with the hex of its DER value.
pub fn subject_name(der: &[u8]) -> Result<String, String> {
    use x509_parser::prelude::{FromDer, X509Certificate};
    let (_, cert) = X509Certificate::from_der(der)
        .map_err(|e| format!("cannot read the client certificate: {e}"))?;
    let mut rdns = Vec::new();
    for rdn in cert.subject().iter() {
        let mut parts = Vec::new();
        for attr in rdn.iter() {
            let oid = attr.attr_type().to_id_string();
            let keyword = match oid.as_str() {
                "2.5.4.3" => Some("CN"),
                "2.5.4.6" => Some("C"),
                "2.5.4.7" => Some("L"),
                "2.5.4.8" => Some("ST"),
                "2.5.4.10" => Some("O"),
                "2.5.4.11" => Some("OU"),
                "2.5.4.9" => Some("STREET"),
                "0.9.2342.19200300.100.1.25" => Some("DC"),
                "0.9.2342.19200300.100.1.1" => Some("UID"),
                _ => None,
            };
            let text = attr.as_str().ok();
            parts.push(match (keyword, text) {
                (Some(k), Some(v)) => format!("{k}={}", escape_value(v)),
                (k, _) => {
                    let raw = attr.attr_value();
                    let mut der = Vec::new();
                    // Tag and length as read, then the value.
                    der.push(raw.header.tag().0 as u8);
                    push_der_length(&mut der, raw.data.len());
                    der.extend_from_slice(raw.data);
                    let hex: String = der.iter().map(|b| format!("{b:02x}")).collect();
                    format!("{}=#{hex}", k.map_or(oid.clone(), str::to_string))
                }
            });
        }
        rdns.push(parts.join("+"));
    }
    rdns.reverse();
    Ok(rdns.join(","))
}

fn push_der_length(out: &mut Vec<u8>, len: usize) {
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len
            .to_be_bytes()
            .into_iter()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
}

/// RFC 2253 section 2.4: special characters escaped with a backslash.
fn escape_value(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    let last = v.chars().count().saturating_sub(1);
    for (i, c) in v.chars().enumerate() {
        let special = matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';')
            || (i == 0 && (c == '#' || c == ' '))
            || (i == last && c == ' ');
        if special {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests;
