//! The committed CRD files must be what `crdgen` prints: the repository's
//! `crds/` and the chart's copy (Helm installs CRDs only from the chart's
//! own `crds/` folder).
//!
//! To refresh both: `cargo run -p kaas-operator --bin crdgen > crds/kaascluster.yaml
//! && cp crds/kaascluster.yaml charts/kaas-operator/crds/`

use std::path::Path;

#[test]
fn committed_crds_are_current() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let generated = kaas_operator::crd_yaml();
    for file in [
        "crds/kaascluster.yaml",
        "charts/kaas-operator/crds/kaascluster.yaml",
    ] {
        let committed = std::fs::read_to_string(root.join(file)).unwrap_or_default();
        assert!(
            committed == generated,
            "{file} is stale: run `cargo run -p kaas-operator --bin crdgen > crds/kaascluster.yaml && cp crds/kaascluster.yaml charts/kaas-operator/crds/`"
        );
    }
}

#[test]
fn crdgen_prints_the_crd() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_crdgen"))
        .output()
        .expect("run crdgen");
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        kaas_operator::crd_yaml()
    );
}
