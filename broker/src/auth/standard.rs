//! Apache's StandardAuthorizer over a set of ACLs: super users first, then
//! the ACLs whose pattern covers the resource (LITERAL by name or `*`,
//! PREFIXED by prefix) and whose principal (`User:name` or `User:*`) and
//! host (the client's address or `*`) are the requester's; a DENY of the
//! operation (or ALL) wins over any ALLOW; an ALLOW of the operation, of
//! ALL, or of one that implies it (Read, Write, Delete and Alter imply
//! Describe; AlterConfigs implies DescribeConfigs) allows; with no ACL on
//! the resource at all, `allow.everyone.if.no.acl.found` decides. Pure: the
//! ACLs are handed in (`replace`), no I/O.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;

use parking_lot::RwLock;

use super::acl::{
    AclBinding, PatternType, Permission, WILDCARD_HOST, WILDCARD_PRINCIPAL, WILDCARD_RESOURCE,
};
use super::{Action, Authorizer, Operation, Principal, ResourceType};

/// The name `authorizeByResourceType` first asks about: any resource a
/// wildcard or a prefix of it covers.
const SOME_RESOURCE: &str = "hardcode";

/// The settings Apache's StandardAuthorizer reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuthorizerSettings {
    /// `super.users`: principals allowed everything.
    pub super_users: BTreeSet<String>,
    /// `allow.everyone.if.no.acl.found`.
    pub allow_if_no_acl: bool,
}

/// `super.users` as Apache parses it (`getConfiguredSuperUsers`):
/// `;`-separated `Type:name` principals, blanks skipped.
pub fn parse_super_users(value: &str) -> Result<BTreeSet<String>, String> {
    value
        .split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| match s.split_once(':') {
            Some((kind, _)) if !kind.is_empty() => Ok(s.to_string()),
            _ => Err(format!(
                "expected a string in format principalType:principalName but got {s}"
            )),
        })
        .collect()
}

/// The ACLs of one resource type, indexed for `authorize`: literal names
/// (the wildcard among them) and prefixes, each pattern's ACLs sorted by
/// principal, then host.
#[derive(Debug, Default)]
struct TypeIndex {
    literal: HashMap<String, Vec<AclBinding>, foldhash::fast::RandomState>,
    prefixed: HashMap<String, Vec<AclBinding>, foldhash::fast::RandomState>,
    /// The byte lengths of the prefixes in `prefixed`, ascending: only a
    /// name's prefixes of these lengths are looked up.
    prefix_lengths: Vec<usize>,
}

#[derive(Debug, Default)]
struct Index {
    by_type: HashMap<ResourceType, TypeIndex>,
    all: BTreeSet<AclBinding>,
}

impl Index {
    fn new(acls: impl IntoIterator<Item = AclBinding>) -> Index {
        let mut index = Index::default();
        for acl in acls {
            if !index.all.insert(acl.clone()) {
                continue;
            }
            let t = index.by_type.entry(acl.resource_type).or_default();
            let map = match acl.pattern {
                PatternType::Literal => &mut t.literal,
                PatternType::Prefixed => &mut t.prefixed,
            };
            map.entry(acl.name.clone()).or_default().push(acl);
        }
        for t in index.by_type.values_mut() {
            for acls in t.literal.values_mut().chain(t.prefixed.values_mut()) {
                acls.sort_by(|a, b| (&a.principal, &a.host).cmp(&(&b.principal, &b.host)));
            }
            t.prefix_lengths = t.prefixed.keys().map(String::len).collect();
            t.prefix_lengths.sort_unstable();
            t.prefix_lengths.dedup();
        }
        index
    }

    /// The ACLs of each pattern that covers the resource (LITERAL by name
    /// or `*`, PREFIXED by any prefix of the name, itself and "" included).
    fn covering<'a>(
        &'a self,
        resource_type: ResourceType,
        name: &'a str,
    ) -> impl Iterator<Item = &'a [AclBinding]> + 'a {
        let t = self.by_type.get(&resource_type);
        let literal = t.into_iter().flat_map(move |t| {
            let wildcard = (name != WILDCARD_RESOURCE)
                .then(|| t.literal.get(WILDCARD_RESOURCE))
                .flatten();
            t.literal.get(name).into_iter().chain(wildcard)
        });
        let prefixed = t.into_iter().flat_map(move |t| {
            t.prefix_lengths
                .iter()
                .take_while(move |&&len| len <= name.len())
                .filter(move |&&len| name.is_char_boundary(len))
                .filter_map(move |&len| t.prefixed.get(&name[..len]))
        });
        literal.chain(prefixed).map(Vec::as_slice)
    }
}

/// The ACLs of one pattern (sorted by principal, then host) that name
/// `principal` or `User:*`, and `host` or `*`: a few binary searches
/// rather than a look at each ACL. `*` sorts before every address, so a
/// principal's `*` ACLs come first among its own. An ACL may come twice (a
/// principal named `*`), which changes no verdict.
fn applicable<'a>(
    acls: &'a [AclBinding],
    principal: &'a str,
    host: &'a str,
) -> impl Iterator<Item = &'a AclBinding> + 'a {
    [principal, WILDCARD_PRINCIPAL]
        .into_iter()
        .flat_map(move |p| {
            let start = acls
                .partition_point(|a| (a.principal.as_str(), a.host.as_str()) < (p, WILDCARD_HOST));
            let own = &acls[start..];
            let any_host = own
                .iter()
                .take_while(move |a| a.principal == p && a.host == WILDCARD_HOST);
            let at = match own.first() {
                Some(a) if a.principal == p => {
                    own.partition_point(|a| a.principal == p && a.host.as_str() < host)
                }
                _ => own.len(),
            };
            let this_host = own[at..]
                .iter()
                .take_while(move |a| a.principal == p && a.host == host);
            any_host.chain(this_host)
        })
}

/// Text of up to 128 bytes written on the stack, so that a check does not
/// allocate to compare a principal or an address.
struct StackText {
    buf: [u8; 128],
    len: usize,
}

impl fmt::Write for StackText {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        let room = self.buf.get_mut(self.len..end).ok_or(fmt::Error)?;
        room.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// `f` of the text `args` make (on the heap only when it is long).
fn with_text<R>(args: fmt::Arguments<'_>, f: impl FnOnce(&str) -> R) -> R {
    let mut text = StackText {
        buf: [0; 128],
        len: 0,
    };
    match fmt::write(&mut text, args) {
        Ok(()) => f(std::str::from_utf8(&text.buf[..text.len]).expect("written from strs")),
        Err(_) => f(&args.to_string()),
    }
}

/// Apache's StandardAuthorizer: the settings, and the ACLs the broker hands
/// it (from the volume) whenever they change.
#[derive(Debug, Default)]
pub struct StandardAuthorizer {
    settings: AuthorizerSettings,
    acls: RwLock<Arc<Index>>,
}

impl StandardAuthorizer {
    pub fn new(settings: AuthorizerSettings) -> StandardAuthorizer {
        StandardAuthorizer {
            settings,
            acls: RwLock::default(),
        }
    }

    /// Installs a new set of ACLs (duplicates count once).
    pub fn replace(&self, acls: impl IntoIterator<Item = AclBinding>) {
        let index = Arc::new(Index::new(acls));
        *self.acls.write() = index;
    }

    /// Every ACL, in a stable order.
    pub fn acls(&self) -> Vec<AclBinding> {
        self.index().all.iter().cloned().collect()
    }

    fn index(&self) -> Arc<Index> {
        self.acls.read().clone()
    }

    fn is_super_user(&self, principal: &str) -> bool {
        self.settings.super_users.contains(principal)
    }
}

/// Whether an ALLOW of `granted` allows `asked` (`IMPLIES_DESCRIBE`,
/// `IMPLIES_DESCRIBE_CONFIGS`).
fn allow_covers(granted: Operation, asked: Operation) -> bool {
    use Operation::*;
    names(granted, asked)
        || (asked == Describe && matches!(granted, Read | Write | Delete | Alter))
        || (asked == DescribeConfigs && granted == AlterConfigs)
}

/// Whether an ACL of `named` is about `asked` without implication (how a
/// DENY applies): the operation itself, or ALL.
fn names(named: Operation, asked: Operation) -> bool {
    named == Operation::All || named == asked
}

fn principal_matches(acl: &AclBinding, principal: &str) -> bool {
    acl.principal == principal || acl.principal == WILDCARD_PRINCIPAL
}

fn host_matches(acl: &AclBinding, host: &str) -> bool {
    acl.host == WILDCARD_HOST || acl.host == host
}

impl Authorizer for StandardAuthorizer {
    fn authorize(&self, principal: &Principal, host: IpAddr, action: Action<'_>) -> bool {
        with_text(format_args!("{principal}"), |principal| {
            if self.is_super_user(principal) {
                return true;
            }
            with_text(format_args!("{host}"), |host| {
                let index = self.index();
                let mut covered = false;
                let mut allowed = false;
                for acls in index.covering(action.resource_type, action.name) {
                    // Any ACL on the resource, whoever it names, turns off
                    // the no-ACL default.
                    covered |= !acls.is_empty();
                    for acl in applicable(acls, principal, host) {
                        match acl.permission {
                            Permission::Deny if names(acl.operation, action.operation) => {
                                return false
                            }
                            Permission::Allow if allow_covers(acl.operation, action.operation) => {
                                allowed = true
                            }
                            _ => {}
                        }
                    }
                }
                allowed || (!covered && self.settings.allow_if_no_acl)
            })
        })
    }

    /// Apache's `Authorizer.authorizeByResourceType`: allowed on some
    /// resource of the type, unless every ALLOW that could give one is
    /// dominated by a DENY (a literal of the same name or a prefix of it; a
    /// DENY of `*` dominates all). Operations are not implied here.
    fn authorize_any(
        &self,
        principal: &Principal,
        host: IpAddr,
        operation: Operation,
        resource_type: ResourceType,
    ) -> bool {
        if self.authorize(
            principal,
            host,
            Action {
                operation,
                resource_type,
                name: SOME_RESOURCE,
            },
        ) {
            return true;
        }
        let principal = principal.to_string();
        let host = host.to_string();
        let index = self.index();
        let Some(t) = index.by_type.get(&resource_type) else {
            return false;
        };
        let mut deny_literal = HashSet::new();
        let mut deny_prefix = HashSet::new();
        let mut allow_literal = Vec::new();
        let mut allow_prefix = Vec::new();
        let applicable = t
            .literal
            .values()
            .chain(t.prefixed.values())
            .flatten()
            .filter(|acl| {
                host_matches(acl, &host)
                    && principal_matches(acl, &principal)
                    && names(acl.operation, operation)
            });
        for acl in applicable {
            let name = acl.name.as_str();
            match (acl.permission, acl.pattern) {
                (Permission::Deny, PatternType::Literal) if name == WILDCARD_RESOURCE => {
                    return false
                }
                (Permission::Deny, PatternType::Literal) => {
                    deny_literal.insert(name);
                }
                (Permission::Deny, PatternType::Prefixed) => {
                    deny_prefix.insert(name);
                }
                (Permission::Allow, PatternType::Literal) if name == WILDCARD_RESOURCE => {
                    return true
                }
                (Permission::Allow, PatternType::Literal) => allow_literal.push(name),
                (Permission::Allow, PatternType::Prefixed) => allow_prefix.push(name),
            }
        }
        let dominated_by_prefix = |name: &str| {
            name.char_indices()
                .map(|(i, c)| i + c.len_utf8())
                .any(|end| deny_prefix.contains(&name[..end]))
        };
        allow_literal
            .into_iter()
            .any(|name| !deny_literal.contains(name) && !dominated_by_prefix(name))
            || allow_prefix
                .into_iter()
                .any(|name| !dominated_by_prefix(name))
    }
}

#[cfg(test)]
mod tests;
