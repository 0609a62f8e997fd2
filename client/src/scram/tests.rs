use super::*;

/// RFC 7677's example, from the client's side.
#[test]
fn rfc_7677_example_from_the_client() {
    let (mut c, first) = ScramClient::first(Mechanism::ScramSha256, "user", "rOprNGfwEbeRWgbNEkqO");
    assert_eq!(first, "n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
    let last = c
            .finish(
                "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
                "pencil",
            )
            .unwrap();
    assert_eq!(
            last,
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        );
    assert!(c.verify("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="));
    assert!(!c.verify("v=AAAA"));
    assert!(c.finish("r=someone-else,s=AAAA,i=4096", "pencil").is_err());
}
