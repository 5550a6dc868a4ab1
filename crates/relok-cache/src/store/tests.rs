use super::*;
use std::fs;

fn config(dir: &Path) -> StoreConfig {
    StoreConfig::artifacts(dir, "relok-test-1")
}

#[test]
fn folder_names_are_safe() {
    assert_eq!(folder_name("relok-0.1.0-abc"), "relok-0.1.0-abc");
    assert_eq!(folder_name("../../etc/passwd"), ".._.._etc_passwd");
    assert_eq!(folder_name(&"x".repeat(300)).len(), 100);
}

#[test]
fn put_get_and_paths() {
    let t = tempfile::tempdir().unwrap();
    let s = Store::open(config(&t.path().join("c"))).unwrap();
    let k = Key([0xab; 32]);
    assert_eq!(s.get(k), Lookup::Miss);
    s.put(k, b"hello").unwrap();
    assert_eq!(s.get(k), Lookup::Hit(b"hello".to_vec()));
    let p = s.entry_path(k);
    assert!(p.starts_with(t.path().join("c/artifacts/v1-relok-test-1/ab")));
    assert_eq!(p.file_name().unwrap().len(), 62);
    let st = s.stats();
    assert_eq!((st.hits, st.misses, st.corrupt), (1, 1, 0));
    assert_eq!(st.bytes_read, st.bytes_written);
    assert_eq!(s.entries().len(), 1);
    assert!(s.verify().iter().all(|(_, r)| r.is_ok()));
    assert_eq!(s.clear(), ClearReport { removed: 1, left: Vec::new() });
    assert_eq!(s.get(k), Lookup::Miss);
}

#[cfg(unix)]
#[test]
fn created_private_and_refuses_open_folders() {
    use std::os::unix::fs::PermissionsExt;
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("c");
    let s = Store::open(config(&root)).unwrap();
    for p in [root.clone(), root.join("artifacts"), s.dir().to_owned()] {
        assert_eq!(fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o700, "{}", p.display());
    }
    drop(s);
    fs::set_permissions(&root, fs::Permissions::from_mode(0o777)).unwrap();
    let err = Store::open(config(&root)).unwrap_err().to_string();
    assert!(err.contains("lets other users write it"), "{err}");
    let file = t.path().join("file");
    fs::write(&file, b"x").unwrap();
    assert!(Store::open(config(&file)).is_err());
}

#[test]
fn a_rejected_hit_after_a_flush_never_wraps_the_counters() {
    let t = tempfile::tempdir().unwrap();
    let k = Key([2; 32]);
    let s = Store::open(config(t.path())).unwrap();
    s.put(k, b"x").unwrap();
    assert!(matches!(s.get(k), Lookup::Hit(_)));
    s.flush_stats();
    s.reject(k, "test");
    drop(s);
    let s = Store::open(config(t.path())).unwrap();
    let life = s.lifetime_stats();
    assert_eq!((life.hits, life.misses, life.corrupt), (1, 1, 1));
}

#[test]
fn stats_log_sums_processes() {
    let t = tempfile::tempdir().unwrap();
    let k = Key([1; 32]);
    for _ in 0..3 {
        let s = Store::open(config(t.path())).unwrap();
        s.get(k);
        s.put(k, b"x").unwrap();
    }
    let s = Store::open(config(t.path())).unwrap();
    let life = s.lifetime_stats();
    assert_eq!((life.misses, life.hits, life.bytes_written > 0), (1, 2, true));
    s.get(k);
    assert_eq!(s.lifetime_stats().hits, 3);
}
