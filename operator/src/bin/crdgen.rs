//! Prints the CRDs: `cargo run -p kaas-operator --bin crdgen > crds/kaascluster.yaml`
//! and `... --bin crdgen -- kaasuser > crds/kaasuser.yaml`. A test fails when
//! the committed files differ from this output.

fn main() {
    match std::env::args().nth(1).as_deref() {
        Some("kaasuser") => print!("{}", kaas_operator::user_crd_yaml()),
        _ => print!("{}", kaas_operator::crd_yaml()),
    }
}
