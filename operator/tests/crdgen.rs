//! The committed CRD files must be what `crdgen` prints: the repository's
//! `crds/` and the chart's copy (Helm installs CRDs only from the chart's
//! own `crds/` folder).
//!
//! To refresh: `cargo run -p kaas-operator --bin crdgen > crds/kaascluster.yaml`,
//! `cargo run -p kaas-operator --bin crdgen -- kaasuser > crds/kaasuser.yaml`,
//! then `cp crds/*.yaml charts/kaas-operator/crds/`.

use std::path::Path;

#[test]
fn committed_crds_are_current() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for (file, generated, arg) in [
        ("kaascluster.yaml", kaas_operator::crd_yaml(), ""),
        (
            "kaasuser.yaml",
            kaas_operator::user_crd_yaml(),
            " -- kaasuser",
        ),
    ] {
        for place in ["crds", "charts/kaas-operator/crds"] {
            let committed =
                std::fs::read_to_string(root.join(place).join(file)).unwrap_or_default();
            assert!(
                committed == generated,
                "{place}/{file} is stale: run `cargo run -p kaas-operator --bin crdgen{arg} > crds/{file} && cp crds/{file} charts/kaas-operator/crds/`"
            );
        }
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
