use super::*;

#[test]
fn error_names_are_apaches() {
    assert_eq!(error_name(NONE), "NONE");
    assert_eq!(error_name(NOT_COORDINATOR), "NOT_COORDINATOR");
    assert_eq!(error_name(-1), "UNKNOWN_SERVER_ERROR");
    assert_eq!(error_name(14), "COORDINATOR_LOAD_IN_PROGRESS");
    assert_eq!(error_name(9999), "UNKNOWN(9999)");
}
