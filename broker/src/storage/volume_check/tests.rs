use super::*;

const MOUNTINFO: &str = "\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard
40 22 0:35 / /data rw,relatime shared:20 - nfs4 srv:/export rw,vers=4.1,rsize=1048576,hard,proto=tcp,local_lock=none,addr=10.0.0.2
41 22 0:36 / /old rw,relatime shared:21 - nfs srv:/old rw,vers=3,nolock,soft
42 22 0:37 / /mnt/with\\040space rw - fuse.glusterfs host:kaas rw,user_id=0
43 40 0:38 / /data/inner rw - tmpfs tmpfs rw";

#[test]
fn mountinfo_is_read_and_the_deepest_mount_holds_a_path() {
    let mounts = parse_mountinfo(MOUNTINFO);
    assert_eq!(mounts.len(), 5);
    assert_eq!(mounts[3].mount_point, PathBuf::from("/mnt/with space"));
    assert_eq!(
        mount_of(&mounts, Path::new("/data/x")).unwrap().fs_type,
        "nfs4"
    );
    assert_eq!(
        mount_of(&mounts, Path::new("/data/inner/y"))
            .unwrap()
            .fs_type,
        "tmpfs"
    );
    assert_eq!(
        mount_of(&mounts, Path::new("/var/z")).unwrap().fs_type,
        "ext4"
    );
    assert!(mounts[1].has("hard"));
    assert_eq!(mounts[1].option("vers"), Some("4.1"));
}

#[test]
fn nfs_options_are_judged_by_the_contract() {
    let mounts = parse_mountinfo(MOUNTINFO);
    let none = |_: &Path| None;
    let good = judge_mount(&mounts[1], &none);
    assert_eq!(
        good.iter().map(|f| f.property).collect::<Vec<_>>(),
        ["listings that show other clients' new files"],
        "only lookupcache is missing"
    );
    let mut fixed = mounts[1].clone();
    fixed.options.push("lookupcache=positive".into());
    assert!(judge_mount(&fixed, &none).is_empty());
    let bad: Vec<&str> = judge_mount(&mounts[2], &none)
        .iter()
        .map(|f| f.property)
        .collect();
    assert!(bad.contains(&"NFS version 4"), "{bad:?}");
    assert!(bad.contains(&"lock exclusion across clients"), "{bad:?}");
    assert!(bad.contains(&"durable writes"), "{bad:?}");
    assert!(
        judge_mount(&mounts[0], &none).is_empty(),
        "a local file system"
    );
}

#[test]
fn a_glusterfs_client_must_not_cache_and_one_out_of_view_is_said_so() {
    let mounts = parse_mountinfo(MOUNTINFO);
    let gluster = &mounts[3];
    let coherent = |_: &Path| {
        Some(
            [
                "/usr/sbin/glusterfs",
                "--attribute-timeout=0",
                "--entry-timeout=0",
                "--negative-timeout=0",
                "--fopen-keep-cache=false",
                "/mnt/with space",
            ]
            .map(String::from)
            .to_vec(),
        )
    };
    assert!(judge_mount(gluster, &coherent).is_empty());
    let default = |_: &Path| {
        Some(
            ["/usr/sbin/glusterfs", "/mnt/with space"]
                .map(String::from)
                .to_vec(),
        )
    };
    let found = judge_mount(gluster, &default);
    assert_eq!(found.len(), 1);
    assert!(
        found[0].fix.contains("--attribute-timeout=0"),
        "{}",
        found[0]
    );
    let unseen = judge_mount(gluster, &|_| None);
    assert!(
        unseen[0].detail.contains("cannot be checked"),
        "{}",
        unseen[0]
    );
}

#[test]
fn a_local_folder_passes_the_probes() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(probe_volume(dir.path()), vec![]);
    assert_eq!(
        fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing left behind"
    );
}
