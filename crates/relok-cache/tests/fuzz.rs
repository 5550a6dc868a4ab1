//! The readers of untrusted bytes — [`entry::header`], [`entry::decode`],
//! [`bundle::decode`] — over arbitrary input and over valid entries and
//! bundles with random damage: they never panic, damage never yields a
//! different payload, and no length or count field makes them allocate
//! more than the input's size (a counting global allocator measures every
//! allocation made inside the call).

use proptest::prelude::*;
use relok_cache::entry::{self, EntryError, Expect, Kind};
use relok_cache::{Key, bundle};
use sha2::{Digest, Sha256};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

// ---------------------------------------------------------------------------
// A global allocator that records, for the current thread while a
// measurement is on, how many allocations were made and the largest one.
// Thread-local, so that the other tests of this binary (running in parallel)
// and proptest's own allocations outside the window are not counted.

thread_local! {
    static MEASURING: Cell<bool> = const { Cell::new(false) };
    static COUNT: Cell<usize> = const { Cell::new(0) };
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

/// Records one allocation of `size` bytes if this thread is measuring.
/// The thread-locals are const-initialised `Cell`s without destructors:
/// reaching them never allocates, so the allocator cannot recurse.
fn note(size: usize) {
    let _ = MEASURING.try_with(|m| {
        if m.get() {
            COUNT.set(COUNT.get() + 1);
            LARGEST.set(LARGEST.get().max(size));
        }
    });
}

struct Counting;

// SAFETY: every method passes its arguments unchanged to `System`, which
// upholds `GlobalAlloc`'s contract; `note` only updates thread-local cells
// and neither allocates nor unwinds.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: the caller upholds `alloc`'s contract (non-zero size),
        // which is `System.alloc`'s.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` (every allocation goes
        // through this allocator to `System`) with this `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        // SAFETY: `ptr` was allocated by `System` with `layout`, and the
        // caller upholds `realloc`'s contract for `new_size`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// What a measured call allocated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Allocs {
    count: usize,
    largest: usize,
}

/// Runs `f` with this thread's allocations counted.
fn measure<R>(f: impl FnOnce() -> R) -> (R, Allocs) {
    COUNT.set(0);
    LARGEST.set(0);
    MEASURING.set(true);
    let r = f();
    MEASURING.set(false);
    (r, Allocs { count: COUNT.get(), largest: LARGEST.get() })
}

/// The most one allocation may take while reading `n` bytes.
fn bound(n: usize) -> usize {
    n + (64 << 10)
}

// ---------------------------------------------------------------------------
// The readers, measured, with the checks that hold for any input.

const ID: &str = "relok-fuzz-1";

/// `entry::header` and `entry::decode` (with and without a key) on `bytes`:
/// they never allocate, except the two strings of an identity mismatch
/// (bounded by the identity's 255 bytes). Returns decode's result.
fn read_entry<'a>(bytes: &'a [u8], kind: Kind, identity: &str, key: Key) -> Result<&'a [u8], EntryError> {
    let (h, a) = measure(|| entry::header(bytes));
    assert_eq!(a.count, 0, "entry::header allocated: {a:?}");
    if let Ok(h) = &h {
        assert!(h.payload_at + 32 <= bytes.len(), "header {h:?} of {} bytes", bytes.len());
    }
    let mut result = None;
    for key in [Some(key), None] {
        let expect = Expect { kind, identity, key };
        let (r, a) = measure(|| entry::decode(bytes, &expect));
        assert!(a.largest <= bound(bytes.len()), "entry::decode of {} bytes allocated {a:?}", bytes.len());
        match &r {
            Err(EntryError::Identity { .. }) => assert!(a.largest <= 4 * 255, "{a:?}"),
            _ => assert_eq!(a.count, 0, "entry::decode allocated: {a:?} for {r:?}"),
        }
        if let Ok(p) = r {
            // A payload is exactly the bytes its header says, before the checksum.
            let h = h.clone().expect("decode accepted what header refused");
            assert_eq!(h.payload_len, p.len() as u64);
            assert_eq!(p, &bytes[h.payload_at..bytes.len() - 32]);
        }
        result.get_or_insert(r);
    }
    result.unwrap()
}

/// `bundle::decode` on `bytes`, measured.
fn read_bundle(bytes: &[u8]) -> Result<Vec<bundle::BundleEntry<'_>>, bundle::BundleError> {
    let (r, a) = measure(|| bundle::decode(bytes, ID));
    assert!(a.largest <= bound(bytes.len()), "bundle::decode of {} bytes allocated {a:?}", bytes.len());
    if let Ok(v) = &r {
        for e in v {
            // Every entry it returns is valid, of the kind and under the key
            // it is listed with.
            let expect = Expect { kind: e.kind, identity: ID, key: Some(e.key) };
            assert!(entry::decode(e.bytes, &expect).is_ok());
        }
    }
    r
}

// ---------------------------------------------------------------------------
// Damage.

#[derive(Clone, Debug)]
enum Mutation {
    Flip {
        at: usize,
        mask: u8,
    },
    Truncate {
        to: usize,
    },
    Insert {
        at: usize,
        bytes: Vec<u8>,
    },
    Remove {
        at: usize,
        n: usize,
    },
    /// Overwrites one of the length or count fields (picked by `which`)
    /// with `value`, little-endian, cut to the field's width.
    Field {
        which: usize,
        value: u64,
    },
}

fn huge() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(u64::MAX),
        Just(u64::MAX / 2),
        Just(1 << 63),
        Just(u64::from(u32::MAX)),
        Just(1 << 32),
        Just(1 << 31),
        Just(0),
        0..1024u64,
        any::<u64>(),
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 1..=255u8).prop_map(|(at, mask)| Mutation::Flip { at, mask }),
        any::<usize>().prop_map(|to| Mutation::Truncate { to }),
        (any::<usize>(), prop::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(at, bytes)| Mutation::Insert { at, bytes }),
        (any::<usize>(), 1..16usize).prop_map(|(at, n)| Mutation::Remove { at, n }),
        (any::<usize>(), huge()).prop_map(|(which, value)| Mutation::Field { which, value }),
    ]
}

/// Applies `m` to `b`; `fields` are (offset, width) of the length fields.
fn apply(b: &mut Vec<u8>, m: &Mutation, fields: &[(usize, usize)]) {
    let len = b.len();
    match m {
        Mutation::Flip { at, mask } if len > 0 => b[at % len] ^= mask,
        Mutation::Truncate { to } => b.truncate(to % (len + 1)),
        Mutation::Insert { at, bytes } => {
            let at = at % (len + 1);
            b.splice(at..at, bytes.iter().copied());
        }
        Mutation::Remove { at, n } if len > 0 => {
            let at = at % len;
            b.drain(at..(at + n).min(len));
        }
        Mutation::Field { which, value } if !fields.is_empty() => {
            let (off, width) = fields[which % fields.len()];
            if off + width <= len {
                b[off..off + width].copy_from_slice(&value.to_le_bytes()[..width]);
            }
        }
        _ => {}
    }
}

/// Recomputes the trailing SHA-256 (both formats end with one), so that
/// damage reaches the checks after the checksum.
fn reseal(b: &mut [u8]) {
    if b.len() >= 32 {
        let body = b.len() - 32;
        let sum = Sha256::digest(&b[..body]);
        b[body..].copy_from_slice(&sum);
    }
}

/// Rewrites a bundle's checksum (format version 3: the header, then each
/// entry's length field and last 32 bytes) as a forger would, walking the
/// length fields as far as they lead in damaged bytes.
fn reseal_bundle(b: &mut [u8]) {
    if b.len() < 32 + 11 {
        return;
    }
    let body = b.len() - 32;
    let header = (15 + usize::from(b[10])).min(body);
    let mut sum = bundle::Checksum::new(&b[..header]);
    let mut at = header;
    while at + 4 <= body {
        let len: [u8; 4] = b[at..at + 4].try_into().unwrap();
        let end = (at + 4).saturating_add(u32::from_le_bytes(len) as usize).min(body);
        sum.entry(len, &b[at + 4..end]);
        at = end;
    }
    let sum = sum.finish();
    b[body..].copy_from_slice(&sum);
}

/// The length fields of an entry framed with an identity of `n` bytes.
fn entry_fields(at: usize, n: usize) -> [(usize, usize); 2] {
    [(at + 11, 1), (at + 44 + n, 8)]
}

fn key_strategy() -> impl Strategy<Value = Key> {
    any::<[u8; 32]>().prop_map(Key)
}

fn kind_strategy() -> impl Strategy<Value = Kind> {
    prop_oneof![Just(Kind::Artifact), Just(Kind::Binary)]
}

/// Arbitrary bytes, sometimes behind a valid start (so that the readers get
/// past the magic number and version), sometimes with a valid checksum.
fn arbitrary_input() -> impl Strategy<Value = Vec<u8>> {
    let mut id_entry = b"RELOKENT\x01\x00\x01".to_vec();
    id_entry.push(ID.len() as u8);
    id_entry.extend_from_slice(ID.as_bytes());
    // Bundles of the version whose checksum covers every byte (1) and of
    // the one whose checksum chains the entries' own (this build's).
    let id_bundle = |version: u16| {
        let mut b = b"RELOKBDL".to_vec();
        b.extend_from_slice(&version.to_le_bytes());
        b.push(ID.len() as u8);
        b.extend_from_slice(ID.as_bytes());
        b
    };
    let prefix = prop_oneof![
        Just(Vec::new()),
        Just(b"RELOKENT\x01\x00".to_vec()),
        Just(id_entry),
        Just(b"RELOKBDL\x01\x00".to_vec()),
        Just(id_bundle(1)),
        Just(id_bundle(2)),
        Just(id_bundle(bundle::FORMAT_VERSION)),
    ];
    (prefix, prop::collection::vec(any::<u8>(), 0..600), any::<bool>()).prop_map(move |(mut p, tail, seal)| {
        p.extend_from_slice(&tail);
        if seal && p.starts_with(&id_bundle(bundle::FORMAT_VERSION)) {
            reseal_bundle(&mut p);
        } else if seal {
            reseal(&mut p);
        }
        p
    })
}

fn config() -> ProptestConfig {
    ProptestConfig { cases: 2048, ..ProptestConfig::default() }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_bytes_are_read_safely(bytes in arbitrary_input(), key in key_strategy(), kind in kind_strategy()) {
        let _ = read_entry(&bytes, kind, ID, key);
        let _ = read_entry(&bytes, kind, "", key);
        let _ = read_bundle(&bytes);
    }

    #[test]
    fn a_damaged_entry_never_reads_as_another_payload(
        identity in "[a-z0-9.-]{0,40}",
        key in key_strategy(),
        kind in kind_strategy(),
        payload in prop::collection::vec(any::<u8>(), 0..400),
        damage in prop::collection::vec(mutation(), 1..4),
        seal in any::<bool>(),
    ) {
        let original = entry::encode(kind, &identity, key, &payload);
        let mut bytes = original.clone();
        let fields = entry_fields(0, identity.len());
        for m in &damage {
            apply(&mut bytes, m, &fields);
        }
        if seal {
            reseal(&mut bytes);
        }
        let r = read_entry(&bytes, kind, &identity, key);
        if bytes == original {
            prop_assert_eq!(r, Ok(&payload[..]));
        } else if !seal {
            // Without a new checksum, damage is an error (SHA-256 would
            // have to collide for it to be anything else).
            prop_assert!(r.is_err() || r == Ok(&payload[..]), "damaged entry read as {:?}", r);
        }
    }

    #[test]
    fn a_huge_length_field_is_a_length_error(
        identity in "[a-z0-9.-]{0,40}",
        key in key_strategy(),
        payload in prop::collection::vec(any::<u8>(), 0..400),
        value in huge(),
        seal in any::<bool>(),
    ) {
        let mut bytes = entry::encode(Kind::Artifact, &identity, key, &payload);
        let at = 44 + identity.len();
        bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
        if seal {
            reseal(&mut bytes);
        }
        let r = read_entry(&bytes, Kind::Artifact, &identity, key);
        let actual = payload.len() as u64;
        if value == actual {
            // The field was overwritten with itself: the entry is intact.
            prop_assert_eq!(r, Ok(&payload[..]));
        } else {
            prop_assert_eq!(r, Err(EntryError::Length { declared: value, actual }));
        }
    }

    #[test]
    fn a_damaged_bundle_never_reads_as_other_entries(
        entries in prop::collection::vec((key_strategy(), prop::collection::vec(any::<u8>(), 0..200)), 0..5),
        damage in prop::collection::vec(mutation(), 1..4),
        seal in any::<bool>(),
    ) {
        let framed: Vec<Vec<u8>> = entries.iter().map(|(k, p)| entry::encode(Kind::Artifact, ID, *k, p)).collect();
        let original = bundle::encode(ID, framed.iter().map(Vec::as_slice)).unwrap();
        let want = bundle::decode(&original, ID).unwrap();
        // The identity length, the count, and each entry's length field
        // and its own identity and payload length fields.
        let n = ID.len();
        let mut fields = vec![(10, 1), (11 + n, 4)];
        let mut at = 15 + n;
        for e in &want {
            fields.push((at, 4));
            fields.extend(entry_fields(at + 4, n));
            at += 4 + e.bytes.len();
        }
        let mut bytes = original.clone();
        for m in &damage {
            apply(&mut bytes, m, &fields);
        }
        if seal {
            reseal_bundle(&mut bytes);
        }
        let r = read_bundle(&bytes);
        if bytes == original {
            prop_assert_eq!(r, Ok(want));
        } else if !seal {
            prop_assert!(r.is_err() || r.as_ref() == Ok(&want), "damaged bundle read as {:?}", r);
        } else if let Ok(got) = &r {
            // Behind a forged seal the entries still check themselves: what
            // reads is some of the original entries, never another one.
            prop_assert!(got.iter().all(|e| want.iter().any(|w| w.key == e.key && w.bytes == e.bytes)), "forged bundle read as {:?}", got);
        }
    }
}

// ---------------------------------------------------------------------------
// The worst length fields, each behind a valid checksum.

#[test]
fn maximal_length_and_count_fields_allocate_nothing_large() {
    let key = Key([9; 32]);
    let n = ID.len();

    let mut e = entry::encode(Kind::Artifact, ID, key, b"payload");
    e[44 + n..52 + n].copy_from_slice(&u64::MAX.to_le_bytes());
    reseal(&mut e);
    let expect = Expect { kind: Kind::Artifact, identity: ID, key: Some(key) };
    let (r, a) = measure(|| entry::decode(&e, &expect));
    assert_eq!(r, Err(EntryError::Length { declared: u64::MAX, actual: 7 }));
    assert_eq!(a.count, 0);

    let good = entry::encode(Kind::Artifact, ID, key, b"payload");
    let b = bundle::encode(ID, [good.as_slice()]).unwrap();
    let count_at = 11 + n;
    let first_len_at = 15 + n;

    // A count of u32::MAX with one entry present.
    let mut c = b.clone();
    c[count_at..count_at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    reseal_bundle(&mut c);
    let (r, a) = measure(|| bundle::decode(&c, ID));
    assert_eq!(r, Err(bundle::BundleError::Truncated));
    assert!(a.largest <= bound(c.len()), "{a:?}");

    // An entry length of u32::MAX.
    let mut l = b.clone();
    l[first_len_at..first_len_at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    reseal_bundle(&mut l);
    let (r, a) = measure(|| bundle::decode(&l, ID));
    assert_eq!(r, Err(bundle::BundleError::Truncated));
    assert!(a.largest <= bound(l.len()), "{a:?}");

    // An entry inside a well-sealed bundle whose payload length is u64::MAX:
    // with the entry's own checksum made to match (as a forger would), the
    // length is what is reported; without, the entry is damage.
    let mut p = b.clone();
    let field = first_len_at + 4 + 44 + n;
    p[field..field + 8].copy_from_slice(&u64::MAX.to_le_bytes());
    reseal_bundle(&mut p);
    assert_eq!(bundle::decode(&p, ID), Err(bundle::BundleError::Checksum));
    let entry_at = first_len_at + 4;
    reseal(&mut p[entry_at..entry_at + good.len()]);
    reseal_bundle(&mut p);
    let r = bundle::decode(&p, ID);
    assert_eq!(
        r,
        Err(bundle::BundleError::Entry { index: 0, source: EntryError::Length { declared: u64::MAX, actual: 7 } })
    );

    // Many entries: what decoding allocates grows with the input, never
    // with a field.
    let many: Vec<Vec<u8>> = (0..2000u32)
        .map(|i| {
            let mut k = [0u8; 32];
            k[..4].copy_from_slice(&i.to_le_bytes());
            entry::encode(Kind::Artifact, ID, Key(k), b"")
        })
        .collect();
    let big = bundle::encode(ID, many.iter().map(Vec::as_slice)).unwrap();
    let (r, a) = measure(|| bundle::decode(&big, ID));
    assert_eq!(r.map(|v| v.len()), Ok(2000));
    assert!(a.largest <= bound(big.len()), "{a:?}");
}

/// The allocator does count: a measured allocation is seen, with its size.
#[test]
fn the_allocator_counts() {
    let (v, a) = measure(|| Vec::<u8>::with_capacity(100_000));
    assert!(a.count >= 1 && a.largest >= 100_000, "{a:?}");
    drop(v);
    let ((), a) = measure(|| ());
    assert_eq!(a, Allocs { count: 0, largest: 0 });
}
