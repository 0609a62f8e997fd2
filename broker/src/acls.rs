//! The broker's ACLs: Apache's StandardAuthorizer ([`crate::auth::standard`])
//! kept in step with the cluster's ACL document on the shared volume
//! (`__cluster/acls`, [`Followed`]).

use std::collections::BTreeSet;
use std::io;
use std::path::Path;
use std::sync::Arc;

use crate::auth::acl::{AclBinding, AclFilter};
use crate::auth::standard::{AuthorizerSettings, StandardAuthorizer};
use crate::followed::Followed;

pub struct Acls {
    pub authorizer: Arc<StandardAuthorizer>,
    pub doc: Arc<Followed<BTreeSet<AclBinding>>>,
}

impl Acls {
    /// The authorizer with the volume's ACLs installed. Blocking I/O.
    pub fn open(cluster_dir: &Path, settings: AuthorizerSettings) -> io::Result<Acls> {
        let authorizer = Arc::new(StandardAuthorizer::new(settings));
        let installs = authorizer.clone();
        let doc = Followed::open(cluster_dir, "acls", move |acls: &BTreeSet<AclBinding>| {
            installs.replace(acls.iter().cloned())
        })?;
        Ok(Acls {
            authorizer,
            doc: Arc::new(doc),
        })
    }

    /// Adds the bindings (those present already are kept as they are).
    /// Blocking I/O.
    pub fn create(&self, bindings: &[AclBinding]) -> io::Result<()> {
        self.doc
            .update(|acls| acls.extend(bindings.iter().cloned()))
    }

    /// Removes every ACL each filter matches: per filter, what it matched.
    /// Blocking I/O.
    pub fn delete(&self, filters: &[AclFilter]) -> io::Result<Vec<Vec<AclBinding>>> {
        self.doc.update(|acls| {
            let matched: Vec<Vec<AclBinding>> = filters
                .iter()
                .map(|f| acls.iter().filter(|a| f.matches(a)).cloned().collect())
                .collect();
            let gone: BTreeSet<&AclBinding> = matched.iter().flatten().collect();
            acls.retain(|a| !gone.contains(a));
            matched
        })
    }

    /// The installed ACLs a filter matches.
    pub fn describe(&self, filter: &AclFilter) -> Vec<AclBinding> {
        self.doc
            .current()
            .iter()
            .filter(|a| filter.matches(a))
            .cloned()
            .collect()
    }

    /// Loads changes made through other brokers. Blocking I/O.
    pub fn refresh(&self) -> io::Result<()> {
        self.doc.refresh()
    }
}
