use super::*;
use proptest::prelude::*;
use std::collections::BTreeMap;

proptest! {
    /// Behaves like a BTreeMap under any sequence of inserts and removes.
    #[test]
    fn matches_btreemap(ops in proptest::collection::vec((any::<bool>(), 0u8..32, any::<u16>()), 0..200)) {
        let mut a: VecMap<u8, u16> = VecMap::default();
        let mut b: BTreeMap<u8, u16> = BTreeMap::new();
        for (insert, k, v) in ops {
            if insert {
                prop_assert_eq!(a.insert(k, v), b.insert(k, v));
            } else {
                prop_assert_eq!(a.remove(&k), b.remove(&k));
            }
            prop_assert_eq!(a.len(), b.len());
        }
        let av: Vec<(u8, u16)> = a.iter().map(|(k, v)| (*k, *v)).collect();
        let bv: Vec<(u8, u16)> = b.iter().map(|(k, v)| (*k, *v)).collect();
        prop_assert_eq!(av, bv);
        for k in 0u8..32 {
            prop_assert_eq!(a.get(&k), b.get(&k));
        }
    }
}

#[test]
fn borrowed_lookups_and_defaults() {
    let mut m: VecMap<String, VecMap<i32, u8>> = VecMap::default();
    m.get_or_default("t".to_string()).insert(3, 1);
    m.get_or_default("t".to_string()).insert(1, 2);
    assert_eq!(m.get("t").and_then(|p| p.get(&1)), Some(&2));
    assert_eq!(
        m.get("t")
            .map(|p| p.iter().map(|(k, _)| *k).collect::<Vec<_>>()),
        Some(vec![1, 3])
    );
    assert!(m.get_mut("u").is_none());
}
