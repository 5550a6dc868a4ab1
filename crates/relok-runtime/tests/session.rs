//! The session: host objects and their words per device (docs/design.md §1), on the
//! cpu device.

use std::io::Write as _;
use std::process::Command;

use relok_compiler::reloc::{FrozenManifest, Manifest, Record, Target, ValueKey, record_name, record_name_interior};
use relok_runtime::{CpuDevice, DevicePtr, Session, SessionError};

fn read_u64(dev: &CpuDevice, p: DevicePtr) -> u64 {
    u64::from_le_bytes(dev.read(p, 8).unwrap().try_into().unwrap())
}

/// docs/design.md §1: a symbol's word is the address of the interned object in this
/// process — so it is the same on every device of the session.
#[test]
fn symbols_same_name_same_word_on_every_device() {
    let s = Session::new();
    let (a, b) = (CpuDevice::new(0), CpuDevice::new(1));
    let foo = s.symbol("foo");
    assert_eq!(foo, Target::Symbol("foo".into()));
    let bar = s.symbol("bar");
    let w_foo = s.resolve(&a, &foo).unwrap();
    assert_eq!(s.resolve(&a, &foo).unwrap(), w_foo);
    assert_eq!(s.resolve(&a, &s.symbol("foo")).unwrap(), w_foo, "interning twice keeps the word");
    let w_bar = s.resolve(&a, &bar).unwrap();
    assert_ne!(w_foo, w_bar);
    assert_eq!(s.resolve(&b, &foo).unwrap(), w_foo, "process-level identity: same word on device B");
    assert_eq!(s.resolve(&b, &bar).unwrap(), w_bar);
    assert_eq!(s.symbol_name(w_foo).as_deref(), Some("foo"));
    assert_eq!(s.symbol_name(w_bar).as_deref(), Some("bar"));
    assert_eq!(s.symbol_name(w_foo ^ 0x8000), None);
}

#[test]
fn unseen_symbol_is_interned_on_the_fly() {
    let s = Session::new();
    let dev = CpuDevice::new(0);
    let w = s.resolve(&dev, &Target::Symbol("late".into())).unwrap();
    assert_eq!(s.symbol_name(w).as_deref(), Some("late"));
    assert_eq!(s.resolve(&dev, &s.symbol("late")).unwrap(), w);
}

#[test]
fn symbols_of_two_sessions_differ() {
    let (s1, s2) = (Session::new(), Session::new());
    let dev = CpuDevice::new(0);
    let w1 = s1.resolve(&dev, &s1.symbol("foo")).unwrap();
    let w2 = s2.resolve(&dev, &s2.symbol("foo")).unwrap();
    assert_ne!(w1, w2, "each session interns its own object");
}

#[test]
fn value_one_copy_per_device() {
    let s = Session::new();
    let (a, b) = (CpuDevice::new(0), CpuDevice::new(1));
    let bytes = b"division by zero".to_vec();
    let t = s.value("str", &bytes);
    let key = ValueKey::of("str", &bytes);
    assert_eq!(t, Target::Value(key));
    assert_eq!(s.value_bytes(&key), Some(bytes.clone()));

    let wa = s.resolve(&a, &t).unwrap();
    assert_eq!(a.read(DevicePtr(wa), bytes.len() as u64).unwrap(), bytes);
    assert_eq!(s.resolve(&a, &t).unwrap(), wa, "one copy per device");
    assert_eq!(s.resolve(&a, &s.value("str", &bytes)).unwrap(), wa, "re-registering keeps the copy");

    let wb = s.resolve(&b, &t).unwrap();
    assert_ne!(wa, wb);
    assert_eq!(b.read(DevicePtr(wb), bytes.len() as u64).unwrap(), bytes);
    assert!(b.read(DevicePtr(wa), 1).is_err(), "A's word is not an address on B");

    // Another type tag is another value.
    let t2 = s.value("bytes", &bytes);
    assert_ne!(t2, t);
    assert_ne!(s.resolve(&a, &t2).unwrap(), wa);
}

#[test]
fn empty_value_has_its_own_address() {
    let s = Session::new();
    let dev = CpuDevice::new(0);
    let e1 = s.resolve(&dev, &s.value("str", b"")).unwrap();
    let e2 = s.resolve(&dev, &s.value("bytes", b"")).unwrap();
    assert_ne!(e1, e2);
    assert_eq!(s.value_bytes(&ValueKey::of("str", b"")), Some(vec![]));
}

#[test]
fn runtime_global_word_is_cell_plus_offset_per_device() {
    let s = Session::new();
    let (a, b) = (CpuDevice::new(0), CpuDevice::new(1));
    s.declare_global("counters", 32).unwrap();
    s.declare_global("counters", 32).unwrap(); // same size: no-op

    let cell_a = s.global_cell(&a, "counters").unwrap();
    let cell_b = s.global_cell(&b, "counters").unwrap();
    assert_ne!(cell_a, cell_b);
    assert_eq!(a.read(cell_a, 32).unwrap(), vec![0; 32], "zero-initialised");

    let g0 = s.global("counters", 0);
    assert_eq!(g0, Target::Global { name: "counters".into(), offset: 0 });
    assert_eq!(s.resolve(&a, &g0).unwrap(), cell_a.0);
    assert_eq!(s.resolve(&a, &s.global("counters", 8)).unwrap(), cell_a.0 + 8);
    assert_eq!(s.resolve(&a, &s.global("counters", 31)).unwrap(), cell_a.0 + 31);
    assert_eq!(s.resolve(&b, &s.global("counters", 8)).unwrap(), cell_b.0 + 8);
    assert_eq!(s.global_cell(&a, "counters").unwrap(), cell_a, "one cell per device");

    // A counter bumped on A is not seen on B.
    let w = s.resolve(&a, &s.global("counters", 8)).unwrap();
    a.write(DevicePtr(w), &41u64.to_le_bytes()).unwrap();
    a.write(DevicePtr(w), &42u64.to_le_bytes()).unwrap();
    assert_eq!(read_u64(&a, cell_a.offset(8)), 42);
    assert_eq!(read_u64(&b, cell_b.offset(8)), 0);
}

#[test]
fn errors() {
    let s = Session::new();
    let dev = CpuDevice::new(0);

    s.declare_global("exc_buf", 24).unwrap();
    assert_eq!(
        s.resolve(&dev, &s.global("exc_buf", 24)),
        Err(SessionError::GlobalOffsetOutOfRange { name: "exc_buf".into(), offset: 24, size: 24 })
    );
    assert!(matches!(
        s.resolve(&dev, &s.global("exc_buf", u64::MAX)),
        Err(SessionError::GlobalOffsetOutOfRange { .. })
    ));

    let key = ValueKey::of("str", b"never registered");
    assert_eq!(s.resolve(&dev, &Target::Value(key)), Err(SessionError::UnknownValue(key)));
    assert_eq!(s.value_bytes(&key), None);

    assert_eq!(s.resolve(&dev, &s.global("rng", 0)), Err(SessionError::UnknownGlobal("rng".into())));
    assert_eq!(s.global_cell(&dev, "rng"), Err(SessionError::UnknownGlobal("rng".into())));

    assert_eq!(
        s.declare_global("exc_buf", 32),
        Err(SessionError::GlobalSizeConflict { name: "exc_buf".into(), declared: 24, requested: 32 })
    );
    assert_eq!(s.declare_global("empty", 0), Err(SessionError::EmptyGlobal("empty".into())));

    // A value too large for the device is a wrapped device error naming it.
    let big = s.value("blob", &vec![0u8; 1 << 20]);
    s.declare_global("huge", 5 << 30).unwrap();
    let e = s.resolve(&dev, &s.global("huge", 0)).unwrap_err();
    assert!(matches!(e, SessionError::Device { .. }), "{e:?}");
    assert!(e.to_string().contains("huge") && e.to_string().contains("out of device memory"), "{e}");
    // The device is still usable for the rest.
    s.resolve(&dev, &big).unwrap();
}

/// A manifest mixing every kind of target, built the way the compiler does.
fn manifest(s: &Session) -> FrozenManifest {
    let targets = [
        s.symbol("foo"),
        s.symbol("bar"),
        s.value("str", b"index out of bounds"),
        s.value("f32[4]", &[0u8, 0, 128, 63, 0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 64]),
        s.global("exc_buf", 0),
        s.global("exc_buf", 8),
        s.global("rng", 0),
    ];
    let mut m = Manifest::new();
    for kernel in ["saxpy", "reduce"] {
        for t in &targets {
            m.add(Record::slot(record_name(kernel, t), t.clone())).unwrap();
        }
    }
    m.add(Record::interior(record_name_interior("saxpy", "boxed"), 0, s.symbol("tag"))).unwrap();
    m.add(Record::interior(record_name_interior("saxpy", "boxed"), 8, s.value("str", b"payload"))).unwrap();
    m.freeze()
}

/// The canary for a misindexed table: word `i` is the word of the record of
/// rank `i`.
#[test]
fn resolve_manifest_is_in_rank_order() {
    let s = Session::new();
    s.declare_global("exc_buf", 64).unwrap();
    s.declare_global("rng", 8).unwrap();
    let m = manifest(&s);
    assert_eq!(m.len(), 16);
    for dev in [CpuDevice::new(0), CpuDevice::new(1)] {
        let words = s.resolve_manifest(&dev, &m).unwrap();
        assert_eq!(words.len(), m.len());
        for (i, r) in m.records().iter().enumerate() {
            assert_eq!(m.rank(r.name(), r.offset()), Some(i));
            assert_eq!(words[i], s.resolve(&dev, r.target()).unwrap(), "rank {i}: {r}");
        }
        // Distinct targets have distinct words; equal targets equal words.
        for (i, ri) in m.records().iter().enumerate() {
            for (j, rj) in m.records().iter().enumerate() {
                assert_eq!(ri.target() == rj.target(), words[i] == words[j], "{ri} vs {rj}");
            }
        }
        // A second resolution delivers the same words (cached copies/cells).
        assert_eq!(s.resolve_manifest(&dev, &m).unwrap(), words);
    }
}

#[test]
fn resolve_manifest_reports_the_failing_object() {
    let s = Session::new();
    let dev = CpuDevice::new(0);
    // exc_buf and rng were never declared.
    let m = manifest(&s);
    assert!(matches!(s.resolve_manifest(&dev, &m), Err(SessionError::UnknownGlobal(_))));
    assert!(s.resolve_manifest(&dev, &FrozenManifest::default()).unwrap().is_empty());
}

#[test]
fn sessions_are_shared_between_threads() {
    let s = Session::new();
    let dev = CpuDevice::new(0);
    let t = s.value("str", b"shared");
    let words: Vec<u64> = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..4)
            .map(|_| sc.spawn(|| (s.resolve(&dev, &t).unwrap(), s.resolve(&dev, &s.symbol("x")).unwrap())))
            .collect();
        hs.into_iter()
            .flat_map(|h| {
                let (a, b) = h.join().unwrap();
                [a, b]
            })
            .collect()
    });
    assert!(words.chunks(2).all(|c| c == &words[..2]), "{words:x?}");
}

const CHILD_ENV: &str = "RELOK_SESSION_TEST_CHILD";
const CHILD_TEST: &str = "child_prints_words";

/// Run only as a child of [`words_differ_between_processes`]: prints the
/// words of one symbol and one value on a fresh device.
#[test]
fn child_prints_words() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let s = Session::new();
    let dev = CpuDevice::new(0);
    let sym = s.resolve(&dev, &s.symbol("foo")).unwrap();
    let val = s.resolve(&dev, &s.value("str", b"hello")).unwrap();
    let mut out = std::io::stdout().lock();
    // libtest prints "test … ... " before it on the same line.
    writeln!(out, "RELOK_WORDS symbol={sym:#x} value={val:#x}").unwrap();
}

fn child_words() -> (u64, u64) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", CHILD_TEST, "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let line = stdout
        .lines()
        .find_map(|l| l.split_once("RELOK_WORDS ").map(|(_, rest)| rest))
        .unwrap_or_else(|| panic!("no words in {stdout:?}"));
    let parse = |field: &str| {
        let v = line.split(' ').find_map(|kv| kv.strip_prefix(field)).unwrap();
        u64::from_str_radix(v.trim_start_matches("0x"), 16).unwrap()
    };
    (parse("symbol="), parse("value="))
}

/// docs/design.md §1: words differ between processes, so a test can tell a
/// relocated kernel from one that baked a stale address. Value words come
/// from the cpu device's per-process random base and always differ. Symbol
/// words are heap addresses, which differ only under address-space layout
/// randomisation: asserted only where Linux reports it enabled.
#[test]
fn words_differ_between_processes() {
    let (sym1, val1) = child_words();
    let (sym2, val2) = child_words();
    assert_ne!(val1, val2, "value words must differ between processes");
    let aslr = std::fs::read_to_string("/proc/sys/kernel/randomize_va_space").map(|s| s.trim() == "2").unwrap_or(false);
    if aslr {
        assert_ne!(sym1, sym2, "symbol words (heap addresses) must differ between processes under ASLR");
    }
}

#[test]
fn value_at_maps_a_device_word_back_to_its_value() {
    let session = Session::new();
    let (a, b) = (CpuDevice::new(0), CpuDevice::new(1));
    let msg = session.value("str", b"index out of bounds");
    let wa = session.resolve(&a, &msg).expect("resolves on a");
    assert_eq!(session.value_at(&a, wa), Some(("str".to_string(), b"index out of bounds".to_vec())));
    // Not resolved on b yet, and a's word means nothing on b.
    assert_eq!(session.value_at(&b, wa), None);
    assert_eq!(session.value_at(&a, wa + 8), None);
}
