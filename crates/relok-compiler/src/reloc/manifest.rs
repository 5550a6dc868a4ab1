//! The manifest: a module's relocation records, sorted and unique.
//!
//! [`Manifest`] (while a module is linked and optimised) and
//! [`FrozenManifest`] (after lowering, inside an artifact) are the same
//! sorted records ([`SortedRecords`], which keeps the invariant); only a
//! `Manifest` can change, and a `FrozenManifest` offers no way to.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize, Serializer};

use super::{ManifestError, Record, Site};

/// `Ok` when `incoming` is an agreeing duplicate of `existing` (same key).
fn agree(existing: &Record, incoming: &Record) -> Result<(), ManifestError> {
    if existing == incoming {
        Ok(())
    } else {
        Err(ManifestError::Conflict { existing: Box::new(existing.clone()), incoming: Box::new(incoming.clone()) })
    }
}

/// Relocation records, sorted: what both manifests are.
///
/// Invariants: strictly increasing by `(name, offset)` ([`Record::key`]),
/// so at most one record per word and iteration always in that order; every
/// record passed [`Record::check`]. Serialised as the plain sequence;
/// deserialising checks both ([`SortedRecords::new`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(try_from = "Vec<Record>")]
struct SortedRecords(Vec<Record>);

impl TryFrom<Vec<Record>> for SortedRecords {
    type Error = ManifestError;

    fn try_from(records: Vec<Record>) -> Result<Self, ManifestError> {
        SortedRecords::new(records)
    }
}

impl Serialize for SortedRecords {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl SortedRecords {
    /// `records`, checked: each passes [`Record::check`], and they are
    /// strictly increasing by `(name, offset)`.
    fn new(records: Vec<Record>) -> Result<Self, ManifestError> {
        for r in &records {
            r.check()?;
        }
        for (index, pair) in records.windows(2).enumerate() {
            let (prev, next) = (&pair[0], &pair[1]);
            if prev.key() >= next.key() {
                return Err(ManifestError::Unsorted {
                    index: index + 1,
                    record: Box::new(next.clone()),
                    previous: Box::new(prev.clone()),
                });
            }
        }
        Ok(SortedRecords(records))
    }

    /// Index of the record with identity `(name, offset)`, or where it
    /// would go.
    fn find(&self, name: &str, offset: u32) -> Result<usize, usize> {
        self.0.binary_search_by(|r| r.key().cmp(&(name, offset)))
    }

    fn get(&self, name: &str, offset: u32) -> Option<&Record> {
        self.find(name, offset).ok().map(|i| &self.0[i])
    }

    fn rank(&self, name: &str, offset: u32) -> Option<usize> {
        self.find(name, offset).ok()
    }

    /// See [`Manifest::add`].
    fn add(&mut self, record: Record) -> Result<(), ManifestError> {
        record.check()?;
        match self.find(record.name(), record.offset()) {
            Ok(i) => agree(&self.0[i], &record),
            Err(i) => {
                self.0.insert(i, record);
                Ok(())
            }
        }
    }

    /// See [`Manifest::merge`].
    fn merge(&mut self, other: &SortedRecords) -> Result<(), ManifestError> {
        // Pass 1: find conflicts without changing anything.
        let (mut i, mut j) = (0, 0);
        while i < self.0.len() && j < other.0.len() {
            let (a, b) = (&self.0[i], &other.0[j]);
            match a.key().cmp(&b.key()) {
                Ordering::Less => i += 1,
                Ordering::Greater => j += 1,
                Ordering::Equal => {
                    agree(a, b)?;
                    i += 1;
                    j += 1;
                }
            }
        }
        // Pass 2: a sorted merge; equal keys are known to agree.
        let mine = std::mem::take(&mut self.0);
        let mut out = Vec::with_capacity(mine.len() + other.0.len());
        let mut mine = mine.into_iter().peekable();
        let mut theirs = other.0.iter().peekable();
        loop {
            let order = match (mine.peek(), theirs.peek()) {
                (Some(a), Some(b)) => a.key().cmp(&b.key()),
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (None, None) => break,
            };
            match order {
                Ordering::Less => out.extend(mine.next()),
                Ordering::Greater => out.extend(theirs.next().cloned()),
                Ordering::Equal => {
                    out.extend(mine.next());
                    theirs.next();
                }
            }
        }
        self.0 = out;
        Ok(())
    }
}

/// A module's relocation records while it is being linked and optimised.
///
/// Invariants: those of its records (strictly increasing by
/// `(name, offset)`, every record checked), kept by every method.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Manifest {
    records: SortedRecords,
}

impl Manifest {
    /// An empty manifest.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `record`. An identical record already present makes this a
    /// no-op; one with the same `(name, offset)` but a different target or
    /// site is a [`ManifestError::Conflict`] naming both. A record that fails
    /// [`Record::check`] is rejected. On error the manifest is unchanged.
    pub fn add(&mut self, record: Record) -> Result<(), ManifestError> {
        self.records.add(record)
    }

    /// Adds every record of `other` (linking two modules). Records both
    /// share appear once; the first conflict (in sorted order) is an error
    /// naming both records, and then nothing is added.
    pub fn merge(&mut self, other: &Manifest) -> Result<(), ManifestError> {
        self.records.merge(&other.records)
    }

    /// Removes the records for which `live` returns false (their sites died
    /// in optimisation). The order of the rest is unchanged.
    pub fn prune(&mut self, mut live: impl FnMut(&Record) -> bool) {
        self.records.0.retain(|r| live(r));
    }

    /// Fixes the manifest after lowering: no further change is possible.
    pub fn freeze(self) -> FrozenManifest {
        FrozenManifest { records: self.records }
    }

    /// The records, sorted by `(name, offset)`.
    pub fn records(&self) -> &[Record] {
        &self.records.0
    }

    /// How many records.
    pub fn len(&self) -> usize {
        self.records.0.len()
    }

    /// Whether there are no records.
    pub fn is_empty(&self) -> bool {
        self.records.0.is_empty()
    }

    /// The record with identity `(name, offset)`.
    pub fn get(&self, name: &str, offset: u32) -> Option<&Record> {
        self.records.get(name, offset)
    }

    /// The position of `(name, offset)` in sorted order.
    pub fn rank(&self, name: &str, offset: u32) -> Option<usize> {
        self.records.rank(name, offset)
    }
}

/// A manifest after lowering: it travels inside the artifact, and a record's
/// [rank](FrozenManifest::rank) is its index in the `table` strategy's
/// relocation table.
///
/// Invariants: as for [`Manifest`] (strictly sorted by `(name, offset)`,
/// every record checked, also when deserialised); nothing changes it after
/// construction — it has no method that could:
///
/// ```compile_fail
/// # use relok_compiler::reloc::{FrozenManifest, Record, Target};
/// let mut frozen = FrozenManifest::default();
/// frozen.add(Record::slot("relok$k$sym$foo", Target::Symbol("foo".into())));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrozenManifest {
    records: SortedRecords,
}

impl FrozenManifest {
    /// Rebuilds a frozen manifest from its records (e.g. read from an
    /// artifact), checking every record and that they are strictly
    /// increasing by `(name, offset)`.
    pub fn from_records(records: Vec<Record>) -> Result<Self, ManifestError> {
        Ok(FrozenManifest { records: SortedRecords::new(records)? })
    }

    /// The records, sorted by `(name, offset)`.
    pub fn records(&self) -> &[Record] {
        &self.records.0
    }

    /// How many records (the `table` strategy's table length in words).
    pub fn len(&self) -> usize {
        self.records.0.len()
    }

    /// Whether there are no records (then `reloc_table` is null).
    pub fn is_empty(&self) -> bool {
        self.records.0.is_empty()
    }

    /// The record with identity `(name, offset)`.
    pub fn get(&self, name: &str, offset: u32) -> Option<&Record> {
        self.records.get(name, offset)
    }

    /// The position of `(name, offset)` in sorted order: its slot index in
    /// the `table` strategy's relocation table.
    pub fn rank(&self, name: &str, offset: u32) -> Option<usize> {
        self.records.rank(name, offset)
    }

    /// Checks the manifest against the sites the lowered code contains:
    /// every slot record's name is a slot, every interior record's aggregate
    /// exists and its word fits (`offset + 8 <= size`). Reports the first
    /// problem in sorted order.
    pub fn validate(&self, sites: &SiteTable) -> Result<(), ManifestError> {
        for r in self.records() {
            match r.site() {
                Site::Slot => {
                    if !sites.slots.contains(r.name()) {
                        return Err(ManifestError::MissingSite { name: r.name().to_owned() });
                    }
                }
                Site::Interior { offset } => {
                    let Some(&size) = sites.aggregates.get(r.name()) else {
                        return Err(ManifestError::MissingSite { name: r.name().to_owned() });
                    };
                    if u64::from(offset) + 8 > u64::from(size) {
                        return Err(ManifestError::OffsetOutOfRange { name: r.name().to_owned(), offset, size });
                    }
                }
            }
        }
        Ok(())
    }
}

/// What the lowered code actually contains, for [`FrozenManifest::validate`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SiteTable {
    /// Names of the word-sized slots.
    pub slots: BTreeSet<String>,
    /// Constant aggregates: name → size in bytes.
    pub aggregates: BTreeMap<String, u32>,
}

impl SiteTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a slot.
    pub fn with_slot(mut self, name: impl Into<String>) -> Self {
        self.slots.insert(name.into());
        self
    }

    /// Adds a constant aggregate of `size` bytes.
    pub fn with_aggregate(mut self, name: impl Into<String>, size: u32) -> Self {
        self.aggregates.insert(name.into(), size);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reloc::{Target, ValueKey, record_name, record_name_interior};
    use proptest::prelude::*;

    fn sym(kernel: &str, s: &str) -> Record {
        let t = Target::Symbol(s.into());
        Record::slot(record_name(kernel, &t), t)
    }

    fn val(kernel: &str, bytes: &[u8]) -> Record {
        let t = Target::Value(ValueKey::of("bytes", bytes));
        Record::slot(record_name(kernel, &t), t)
    }

    fn glob(kernel: &str, name: &str, offset: u64) -> Record {
        let t = Target::Global { name: name.into(), offset };
        Record::slot(record_name(kernel, &t), t)
    }

    fn interior(kernel: &str, agg: &str, offset: u32, s: &str) -> Record {
        Record::interior(record_name_interior(kernel, agg), offset, Target::Symbol(s.into()))
    }

    fn keys(records: &[Record]) -> Vec<(String, u32)> {
        records.iter().map(|r| (r.name().to_owned(), r.offset())).collect()
    }

    fn assert_strictly_sorted(records: &[Record]) {
        assert!(records.windows(2).all(|w| w[0].key() < w[1].key()), "{:?}", keys(records));
    }

    #[test]
    fn sorted_by_name_then_offset() {
        let mut m = Manifest::new();
        m.add(sym("k", "zeta")).unwrap();
        m.add(interior("k", "box", 16, "b")).unwrap();
        m.add(sym("k", "alpha")).unwrap();
        m.add(interior("k", "box", 0, "a")).unwrap();
        m.add(interior("k", "box", 8, "a")).unwrap();
        m.add(glob("k", "exc_buf", 8)).unwrap();
        assert_strictly_sorted(m.records());
        assert_eq!(m.len(), 6);
        let names = keys(m.records());
        assert_eq!(names[0], ("relok$k$agg$box".to_owned(), 0));
        assert_eq!(names[2], ("relok$k$agg$box".to_owned(), 16));
        assert_eq!(names[3].0, "relok$k$glob$exc_buf$8");
        assert_eq!(names[5].0, "relok$k$sym$zeta");
    }

    #[test]
    fn agreeing_duplicate_is_a_no_op() {
        let mut m = Manifest::new();
        m.add(sym("k", "foo")).unwrap();
        let before = m.clone();
        m.add(sym("k", "foo")).unwrap();
        assert_eq!(m, before);
        assert_eq!(m.len(), 1);
    }

    #[test]
    fn conflict_names_both_records() {
        let mut m = Manifest::new();
        let first = Record::slot("relok$k$sym$foo", Target::Symbol("foo".into()));
        let second = Record::slot("relok$k$sym$foo", Target::Symbol("bar".into()));
        m.add(first.clone()).unwrap();
        let err = m.add(second.clone()).unwrap_err();
        assert_eq!(err, ManifestError::Conflict { existing: Box::new(first), incoming: Box::new(second) });
        let text = err.to_string();
        assert!(text.contains("relok$k$sym$foo+0"), "{text}");
        assert!(text.contains("symbol \"foo\""), "{text}");
        assert!(text.contains("symbol \"bar\""), "{text}");
        assert_eq!(m.len(), 1);
        assert_eq!(m.get("relok$k$sym$foo", 0).unwrap().target(), &Target::Symbol("foo".into()));

        // Same key, different site kind: a slot and the word at +0 of an
        // aggregate of the same name also conflict.
        let as_interior = Record::interior("relok$k$sym$foo", 0, Target::Symbol("foo".into()));
        assert!(matches!(m.add(as_interior), Err(ManifestError::Conflict { .. })));
    }

    #[test]
    fn add_rejects_bad_records() {
        let mut m = Manifest::new();
        let t = Target::Symbol("x".into());
        assert!(matches!(m.add(Record::slot("relok$k$sym$a-b", t.clone())), Err(ManifestError::BadName { .. })));
        assert!(matches!(
            m.add(Record::interior("relok$k$agg$a", 12, t)),
            Err(ManifestError::Misaligned { offset: 12, .. })
        ));
        assert!(m.is_empty());
    }

    #[test]
    fn merge_shares_records_once() {
        let mut kernel = Manifest::new();
        kernel.add(sym("k", "foo")).unwrap();
        kernel.add(glob("k", "exc_buf", 0)).unwrap();
        let mut runtime = Manifest::new();
        runtime.add(glob("k", "exc_buf", 0)).unwrap();
        runtime.add(glob("k", "rng", 0)).unwrap();
        runtime.add(val("k", b"panic")).unwrap();
        kernel.merge(&runtime).unwrap();
        assert_eq!(kernel.len(), 4);
        assert_strictly_sorted(kernel.records());
        for r in runtime.records() {
            assert_eq!(kernel.get(r.name(), r.offset()), Some(r));
        }
        // Merging again changes nothing.
        let before = kernel.clone();
        kernel.merge(&runtime).unwrap();
        assert_eq!(kernel, before);
    }

    #[test]
    fn merge_conflict_names_both_and_changes_nothing() {
        let mut a = Manifest::new();
        a.add(Record::slot("relok$k$glob$x$0", Target::Symbol("one".into()))).unwrap();
        let mut b = Manifest::new();
        b.add(sym("k", "aaa")).unwrap();
        b.add(Record::slot("relok$k$glob$x$0", Target::Symbol("two".into()))).unwrap();
        let before = a.clone();
        let err = a.merge(&b).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("\"one\"") && text.contains("\"two\""), "{text}");
        assert_eq!(a, before);
    }

    #[test]
    fn prune_removes_dead_sites() {
        let mut m = Manifest::new();
        for s in ["a", "b", "c", "d"] {
            m.add(sym("k", s)).unwrap();
        }
        m.prune(|r| r.target() != &Target::Symbol("b".into()));
        assert_eq!(m.len(), 3);
        assert!(m.get("relok$k$sym$b", 0).is_none());
        assert_eq!(m.rank("relok$k$sym$c", 0), Some(1));
        assert_strictly_sorted(m.records());
    }

    #[test]
    fn rank_is_position() {
        let mut m = Manifest::new();
        for s in ["q", "w", "e", "r", "t", "y"] {
            m.add(sym("k", s)).unwrap();
        }
        m.add(interior("k", "box", 8, "tag")).unwrap();
        let frozen = m.clone().freeze();
        for (i, r) in frozen.records().iter().enumerate() {
            assert_eq!(frozen.rank(r.name(), r.offset()), Some(i));
            assert_eq!(m.rank(r.name(), r.offset()), Some(i));
            assert_eq!(frozen.get(r.name(), r.offset()), Some(r));
        }
        assert_eq!(frozen.rank("relok$k$sym$nope", 0), None);
        assert_eq!(frozen.rank("relok$k$agg$box", 0), None);
        assert_eq!(frozen.len(), 7);
    }

    #[test]
    fn validate_checks_sites() {
        let mut m = Manifest::new();
        let foo = sym("k", "foo");
        let agg = record_name_interior("k", "box");
        m.add(foo.clone()).unwrap();
        m.add(interior("k", "box", 8, "tag")).unwrap();
        let frozen = m.freeze();

        let good = SiteTable::new().with_slot(foo.name()).with_aggregate(&agg, 16);
        assert_eq!(frozen.validate(&good), Ok(()));

        let no_slot = SiteTable::new().with_aggregate(&agg, 16);
        let e = frozen.validate(&no_slot).unwrap_err();
        assert_eq!(e, ManifestError::MissingSite { name: "relok$k$sym$foo".into() });
        assert_eq!(e.to_string(), "record relok$k$sym$foo names a site that the code does not contain");

        let no_agg = SiteTable::new().with_slot(foo.name());
        assert_eq!(frozen.validate(&no_agg), Err(ManifestError::MissingSite { name: agg.clone() }));

        // The word at +8 needs 16 bytes.
        let small = SiteTable::new().with_slot(foo.name()).with_aggregate(&agg, 15);
        let e = frozen.validate(&small).unwrap_err();
        assert_eq!(e, ManifestError::OffsetOutOfRange { name: agg.clone(), offset: 8, size: 15 });
        assert!(e.to_string().contains("15 bytes"), "{e}");

        // A slot name is not an aggregate, and vice versa.
        let swapped = SiteTable::new().with_slot(&agg).with_aggregate(foo.name(), 64);
        assert!(matches!(frozen.validate(&swapped), Err(ManifestError::MissingSite { .. })));
    }

    #[test]
    fn validate_does_not_overflow() {
        let mut m = Manifest::new();
        m.add(Record::interior("relok$k$agg$a", u32::MAX - 7, Target::Symbol("x".into()))).unwrap();
        let sites = SiteTable::new().with_aggregate("relok$k$agg$a", u32::MAX);
        assert!(matches!(m.freeze().validate(&sites), Err(ManifestError::OffsetOutOfRange { .. })));
    }

    #[test]
    fn from_records_checks_order_uniqueness_and_names() {
        let a = sym("k", "a");
        let b = sym("k", "b");
        assert!(FrozenManifest::from_records(vec![a.clone(), b.clone()]).is_ok());
        let e = FrozenManifest::from_records(vec![b.clone(), a.clone()]).unwrap_err();
        assert!(matches!(e, ManifestError::Unsorted { index: 1, .. }), "{e}");
        assert!(matches!(
            FrozenManifest::from_records(vec![a.clone(), a.clone()]),
            Err(ManifestError::Unsorted { .. })
        ));
        assert!(matches!(
            FrozenManifest::from_records(vec![Record::slot("", Target::Symbol("x".into()))]),
            Err(ManifestError::BadName { .. })
        ));
    }

    #[test]
    fn serde_round_trip_and_checked_deserialisation() {
        let mut m = Manifest::new();
        m.add(sym("k", "foo")).unwrap();
        m.add(val("k", b"boom")).unwrap();
        m.add(glob("k", "exc_buf", 8)).unwrap();
        m.add(interior("k", "box", 8, "tag")).unwrap();
        let frozen = m.freeze();
        let json = serde_json::to_string(&frozen).unwrap();
        // The shape artifacts have always had: the records under `records`.
        assert!(json.starts_with(r#"{"records":[{"#), "{json}");
        let back: FrozenManifest = serde_json::from_str(&json).unwrap();
        assert_eq!(back, frozen);
        // Byte-stable: serialising again gives the same bytes.
        assert_eq!(serde_json::to_string(&back).unwrap(), json);

        // Reversed records are rejected on the way in.
        let mut reversed = frozen.records().to_vec();
        reversed.reverse();
        let bad = serde_json::json!({ "records": reversed }).to_string();
        let err = serde_json::from_str::<FrozenManifest>(&bad).unwrap_err();
        assert!(err.to_string().contains("strictly after"), "{err}");
    }

    fn arb_record() -> impl Strategy<Value = Record> {
        let kernel = prop::sample::select(vec!["k", "saxpy", "k$"]);
        let text = "[a-c$_ ]{0,3}";
        prop_oneof![
            (kernel.clone(), text).prop_map(|(k, s)| sym(k, &s)),
            (kernel.clone(), prop::collection::vec(any::<u8>(), 0..3)).prop_map(|(k, b)| val(k, &b)),
            (kernel.clone(), text, 0u64..3).prop_map(|(k, s, o)| glob(k, &s, o * 8)),
            (kernel, text, 0u32..4).prop_map(|(k, a, o)| {
                // The target is a function of the key, so records never conflict.
                let t = Target::Symbol(format!("{a}@{o}"));
                Record::interior(record_name_interior(k, &a), o * 8, t)
            }),
        ]
    }

    fn inserts() -> impl Strategy<Value = (Vec<Record>, Vec<Record>)> {
        prop::collection::vec(arb_record(), 0..24).prop_flat_map(|mut v| {
            // Duplicate some records so agreeing duplicates are exercised.
            let dups: Vec<Record> = v.iter().step_by(3).cloned().collect();
            v.extend(dups);
            (Just(v.clone()), Just(v).prop_shuffle())
        })
    }

    proptest! {
        #[test]
        fn insertion_order_does_not_matter((ordered, shuffled) in inserts()) {
            let mut a = Manifest::new();
            for r in ordered.iter().cloned() {
                a.add(r).unwrap();
            }
            let mut b = Manifest::new();
            for r in shuffled {
                b.add(r).unwrap();
            }
            prop_assert_eq!(&a, &b);
            assert_strictly_sorted(a.records());
            // Every inserted record is present, exactly once.
            for r in &ordered {
                prop_assert_eq!(a.get(r.name(), r.offset()), Some(r));
            }
            let distinct: BTreeSet<_> = ordered.iter().map(|r| r.key()).collect();
            prop_assert_eq!(a.len(), distinct.len());
            // Freezing and rebuilding from the records gives the same manifest.
            let frozen = a.clone().freeze();
            prop_assert_eq!(FrozenManifest::from_records(a.records().to_vec()), Ok(frozen));
        }

        #[test]
        fn merge_equals_inserting_everything(
            (left, _) in inserts(), (right, _) in inserts()
        ) {
            let mut l = Manifest::new();
            for r in left.iter().cloned() { l.add(r).unwrap(); }
            let mut r_m = Manifest::new();
            for r in right.iter().cloned() { r_m.add(r).unwrap(); }
            let mut all = Manifest::new();
            for r in left.into_iter().chain(right) { all.add(r).unwrap(); }
            l.merge(&r_m).unwrap();
            prop_assert_eq!(l, all);
        }
    }
}
