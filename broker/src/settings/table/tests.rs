//! The settings table's own consistency, and the docs made from it.

use super::*;

const BEGIN: &str = "<!-- broker settings table: made from broker/src/settings/table.rs -->\n";
const END: &str = "<!-- end of the broker settings table -->";

/// docs/operations.md shows the table as it is: a setting added, renamed
/// or given another default shows up there or this fails, printing the
/// rows to paste.
#[test]
fn the_operations_doc_lists_every_setting_of_the_table() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/operations.md");
    let doc = std::fs::read_to_string(path).unwrap();
    let start = doc.find(BEGIN).expect("the table's start marker") + BEGIN.len();
    let end = doc[start..].find(END).expect("the table's end marker") + start;
    let rows = markdown_rows();
    assert!(
        doc[start..end] == rows,
        "docs/operations.md's broker settings table is not the table's; between the \
         markers it should read:\n{rows}"
    );
}

/// Each default reads back as itself: what `get` shows, `set` takes.
#[test]
fn every_default_reads_back_as_itself() {
    let defaults = defaults();
    for s in BROKER_SETTINGS {
        let Some(shown) = (s.get)(&defaults) else {
            continue;
        };
        let mut c = super::defaults();
        (s.set)(&mut c, &shown).unwrap_or_else(|why| panic!("{}={shown}: {why}", s.key));
        assert_eq!((s.get)(&c), Some(shown), "{}", s.key);
    }
}

#[test]
fn keys_and_flags_are_each_named_once() {
    let mut keys: Vec<&str> = BROKER_SETTINGS.iter().map(|s| s.key).collect();
    let mut flags: Vec<&str> = BROKER_SETTINGS.iter().map(|s| s.flag.name()).collect();
    for names in [&mut keys, &mut flags] {
        let count = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), count, "a name twice: {names:?}");
    }
    assert_eq!(
        find("kaas.group.log.sync").unwrap().flag.env().as_deref(),
        Some("KAAS_GROUP_LOG_SYNC")
    );
    assert_eq!(find("auto.create.topics.enable").unwrap().flag.env(), None);
}

/// Bounds refuse with the reason, and NaN is below every minimum.
#[test]
fn values_out_of_bounds_are_refused_with_the_reason() {
    for (key, value, reason) in [
        ("num.partitions", "0", "0 is below the minimum of 1"),
        ("num.partitions", "zero", "'zero' is not a valid number"),
        (
            "log.cleaner.io.max.bytes.per.second",
            "NaN",
            "NaN is below the minimum of 1",
        ),
        (
            "kaas.group.log.sync",
            "sometimes",
            "not one of journal, volume, file",
        ),
        (
            "group.consumer.regex.refresh.interval.ms",
            "9999",
            "below the minimum of 10000",
        ),
        ("log.cleaner.enable", "yes", "'yes' is not true or false"),
    ] {
        let why = check(find(key).unwrap(), value).unwrap_err();
        assert!(why.contains(reason), "{key}={value}: {why}");
    }
}
