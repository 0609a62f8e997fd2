//! Prints the KaasCluster CRD: `cargo run -p kaas-operator --bin crdgen > crds/kaascluster.yaml`.
//! A test fails when the committed file differs from this output.

fn main() {
    print!("{}", kaas_operator::crd_yaml());
}
