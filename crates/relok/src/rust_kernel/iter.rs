//! A kernel's `for` loops, loop labels and `loop` values, and the
//! iterators `for` runs over: ranges ([`RangeIter`]: `a..b`, `a..=b`,
//! `.rev()`, `.step_by(k)`), slices and arrays ([`SliceIter`]: `x.iter()`,
//! `x.iter_mut()`, `.rev()`), the strides of a tree ([`Halving`]:
//! `halving(n)`, [`Doubling`]: `doubling(from, below)`), and the adapters
//! [`Enumerate`] and [`Zip`].
//! Each starts ([`Staged::start`]) as a [`Cursor`] of `local`s: declared before the loop,
//! tested at the top of each iteration, moved on *before* the body runs
//! (so `continue` cannot skip the step), all in one IR `loop` — so `break`
//! and `continue` are the IR's, and a labelled one leaves the loops in
//! between through a flag ([`Cx::exit_to`], [`Cx::exit_through`]).
//!
//! The ranges compute what Rust's do for every integer type, at the ends
//! of the type too: the next element is taken only when the distance left
//! (as the unsigned type of the same width; in 32 bits for `u8 i8 u16
//! i16`, whose step may exceed the type) is at least the step, so
//! nothing wraps (a forward `a..b` then moves to the end instead, and is
//! tested `cur < end` at the top, as a counted loop; the others keep a
//! flag); `step_by(0)` throws Rust's `assertion failed: step != 0`;
//! `(a..b).step_by(k).rev()` starts from the last element of the forward
//! sequence (`a + (b - 1 - a) / k * k`), as Rust's does.
//!
//! `halving(n)` gives `n, n >> 1, …` while non-zero, `doubling(from,
//! below)` gives `from, 2 from, …` while below `below` (the loops of a tree
//! reduction and of a Hillis-Steele scan). A doubling never wraps: it ends
//! where the next value would reach `below`, which it tests before
//! doubling; `doubling(0, …)` would never end and throws
//! `assertion failed: from != 0`.
//!
//! A slice's element is read without a bounds check: its index is the
//! loop's counter, below the length (which cannot change during a launch).

use super::build::Cx;
use super::staged::*;
use super::structs::Stored;
use relok_ir::Value;
use std::marker::PhantomData;

/// An iterator a kernel's `for` runs over.
pub trait Staged: Sized {
    /// What one iteration binds.
    type Item;
    /// Its state in the IR.
    type Cursor: Cursor<Item = Self::Item>;
    /// Declares the state (before the loop).
    fn start(self, cx: &mut Cx<'_>) -> Self::Cursor;

    /// `.enumerate()`
    fn enumerate(self) -> Enumerate<Self> {
        Enumerate { inner: self }
    }

    /// `.zip(other)`
    fn zip<B: Staged>(self, other: B) -> Zip<Self, B> {
        Zip { a: self, b: other }
    }
}

/// An iterator's state in the IR: `local`s.
pub trait Cursor {
    /// What one iteration binds.
    type Item;
    /// Whether the iteration is over (at the top of each iteration).
    fn done(&self, cx: &mut Cx<'_>) -> Val<bool>;
    /// This iteration's item; moves the state on.
    fn next(&self, cx: &mut Cx<'_>) -> Self::Item;
}

/// Which way a range runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    /// `.rev()` of the range (before any `step_by`).
    Back,
    /// `.step_by(k).rev()`: from the forward sequence's last element.
    BackFromLast,
}

/// `a..b` / `a..=b`, with `.rev()` and `.step_by(k)`.
#[derive(Debug)]
pub struct RangeIter<T: Int> {
    start: Val<T>,
    end: Val<T>,
    inclusive: bool,
    step: Option<(Val<usize>, Loc)>,
    direction: Direction,
}

/// A [`RangeIter`]'s state: the next element, whether there is one (a
/// forward `a..b` has no flag: its next element is below the end, or the
/// end, so the loop's test is `cur < end`, which tells the compiler the
/// counter's range), the step.
#[derive(Debug)]
pub struct RangeCursor<T: Int> {
    range: RangeIter<T>,
    cur: Var<T>,
    live: Option<Var<bool>>,
    k: Val<usize>,
}

impl<T: Int> RangeIter<T> {
    /// A forward `a..b`: tested against its end.
    fn to_end(&self) -> bool {
        self.direction == Direction::Forward && !self.inclusive
    }
}

impl<T: Int> RangeIter<T> {
    /// `.rev()`
    pub fn rev(mut self) -> Self {
        self.direction = if self.step.is_some() { Direction::BackFromLast } else { Direction::Back };
        self
    }

    /// `.step_by(k)` (`k` is a `usize`, as Rust's; `at`: where a zero
    /// step is reported).
    pub fn step_by(mut self, k: Val<usize>, at: Loc) -> Self {
        self.step = Some((k, at));
        self
    }
}

/// Whether `T` is narrower than a device `usize` (`u8 i8 u16 i16`).
fn narrow<T: DevScalar>() -> bool {
    T::MEM.bits() < 32
}

impl<T: Int> Staged for RangeIter<T> {
    type Item = Val<T>;
    type Cursor = RangeCursor<T>;

    fn start(self, cx: &mut Cx<'_>) -> RangeCursor<T> {
        let (start, end) = (self.start, self.end);
        let k = match self.step {
            Some((k, at)) => {
                let zero = cx.lit(0usize);
                let ok = cx.ne(k, zero);
                cx.assert(ok, "assertion failed: step != 0", at);
                k
            }
            None => cx.lit(1usize),
        };
        let live = if self.inclusive { cx.le(start, end) } else { cx.lt(start, end) };
        let one = cx.lit_bits::<T>(1);
        let first = match self.direction {
            Direction::Forward => start,
            Direction::Back if self.inclusive => end,
            Direction::Back => cx.sub(end, one),
            Direction::BackFromLast => {
                let last = if self.inclusive { end } else { cx.sub(end, one) };
                let dist = cx.sub(last, start);
                let dist = cx.cast::<T, T::Unsigned>(dist);
                let span = if narrow::<T>() {
                    // In 32 bits: the step may exceed the type (a `u8`
                    // range's `step_by(300)`); the span, at most `dist`,
                    // does not.
                    let d = cx.cast::<T::Unsigned, usize>(dist);
                    let q = cx.div(d, k);
                    let span = cx.mul(q, k);
                    cx.cast::<usize, T::Unsigned>(span)
                } else {
                    let ku = cx.cast::<usize, T::Unsigned>(k);
                    let q = cx.div(dist, ku);
                    cx.mul(q, ku)
                };
                let span = cx.cast::<T::Unsigned, T>(span);
                cx.add(start, span)
            }
        };
        let cur = cx.var(first);
        let live = if self.to_end() { None } else { Some(cx.var(live)) };
        RangeCursor { range: self, cur, live, k }
    }
}

impl<T: Int> Cursor for RangeCursor<T> {
    type Item = Val<T>;

    fn done(&self, cx: &mut Cx<'_>) -> Val<bool> {
        match self.live {
            Some(live) => {
                let l = cx.get(live);
                cx.not(l)
            }
            None => {
                let i = cx.get(self.cur);
                cx.ge(i, self.range.end)
            }
        }
    }

    fn next(&self, cx: &mut Cx<'_>) -> Val<T> {
        let RangeCursor { range, cur, live, k } = self;
        let (cur, live, k) = (*cur, *live, *k);
        let i = cx.get(cur);
        // (Wrapped to `T` where it exceeds it: then it is not taken.)
        let kt = cx.cast::<usize, T>(k);
        let (left, next) = match range.direction {
            Direction::Forward => (cx.sub(range.end, i), cx.add(i, kt)),
            Direction::Back | Direction::BackFromLast => (cx.sub(i, range.start), cx.sub(i, kt)),
        };
        let left = cx.cast::<T, T::Unsigned>(left);
        // The step against what is left, in 32 bits for a type narrower
        // than that (its step may exceed the type), else in the type's
        // unsigned twin (which holds every step).
        let step_le = |cx: &mut Cx<'_>, strict: bool| {
            if narrow::<T>() {
                let l = cx.cast::<T::Unsigned, usize>(left);
                if strict { cx.lt(k, l) } else { cx.le(k, l) }
            } else {
                let ku = cx.cast::<usize, T::Unsigned>(k);
                if strict { cx.lt(ku, left) } else { cx.le(ku, left) }
            }
        };
        // Forward `a..b`: the next is below the end (k < left); `a..=b`
        // and backwards: at most at the bound (k <= left).
        match live {
            Some(live) => {
                let more = step_le(cx, false);
                cx.set(live, more);
                cx.set(cur, next);
            }
            None => {
                let more = step_le(cx, true);
                let next = Val::new(cx.b.select(more.v, next.v, range.end.v));
                cx.set(cur, next);
            }
        }
        i
    }
}

/// `x.iter()` / `x.iter_mut()` (`M`: [`Val`] or [`ElemMut`] items), and
/// `.rev()`.
#[derive(Debug)]
pub struct SliceIter<T, S, M> {
    s: S,
    rev: bool,
    _t: PhantomData<(T, M)>,
}

/// A [`SliceIter`]'s state: the base pointer, the length, and the next
/// index (forward) or how many are left (backwards).
#[derive(Debug)]
pub struct SliceCursor<T, M> {
    p: Value,
    len: Val<usize>,
    at: Var<usize>,
    rev: bool,
    _t: PhantomData<(T, M)>,
}

/// The items of `x.iter()`: the element's value.
#[derive(Debug)]
pub struct ByValue;

/// An element of `x.iter_mut()`: `*e` reads it, `*e = v` writes it.
#[derive(Debug)]
pub struct ElemMut<T> {
    ptr: Value,
    i: Val<usize>,
    _t: PhantomData<T>,
}
impl<T> Clone for ElemMut<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for ElemMut<T> {}

impl<T, S, M> SliceIter<T, S, M> {
    /// `.rev()`
    pub fn rev(mut self) -> Self {
        self.rev = !self.rev;
        self
    }
}

/// What a [`SliceIter`] yields at a position.
pub trait ItemKind<T: Stored> {
    /// The item.
    type Item;
    /// The item at `p[i]` (`i` below the length).
    fn at(cx: &mut Cx<'_>, p: Value, i: Val<usize>) -> Self::Item;
}

impl<T: Stored> ItemKind<T> for ByValue {
    type Item = T::Val;
    fn at(cx: &mut Cx<'_>, p: Value, i: Val<usize>) -> T::Val {
        T::load_at(cx, p, Some(i.v))
    }
}

impl<T: Stored> ItemKind<T> for ElemMut<T> {
    type Item = ElemMut<T>;
    fn at(_: &mut Cx<'_>, ptr: Value, i: Val<usize>) -> ElemMut<T> {
        ElemMut { ptr, i, _t: PhantomData }
    }
}

impl<T: Stored, S: Indexed<T>, M: ItemKind<T>> Staged for SliceIter<T, S, M> {
    type Item = M::Item;
    type Cursor = SliceCursor<T, M>;

    fn start(self, cx: &mut Cx<'_>) -> SliceCursor<T, M> {
        let (p, len) = self.s.base(cx);
        let first = if self.rev { len } else { cx.lit(0usize) };
        let at = cx.var(first);
        SliceCursor { p, len, at, rev: self.rev, _t: PhantomData }
    }
}

impl<T: Stored, M: ItemKind<T>> Cursor for SliceCursor<T, M> {
    type Item = M::Item;

    fn done(&self, cx: &mut Cx<'_>) -> Val<bool> {
        let i = cx.get(self.at);
        if self.rev {
            let zero = cx.lit(0usize);
            cx.eq(i, zero)
        } else {
            cx.ge(i, self.len)
        }
    }

    fn next(&self, cx: &mut Cx<'_>) -> M::Item {
        let (p, at) = (self.p, self.at);
        let i = cx.get(at);
        let one = cx.lit(1usize);
        let (index, moved) = if self.rev {
            let j = cx.sub(i, one);
            (j, j)
        } else {
            (i, cx.add(i, one))
        };
        cx.set(at, moved);
        M::at(cx, p, index)
    }
}

/// `halving(n)`: `n, n >> 1, …, 1` (nothing for `n == 0`).
#[derive(Debug)]
pub struct Halving<T: UInt> {
    from: Val<T>,
}

impl<T: UInt> Staged for Halving<T> {
    type Item = Val<T>;
    type Cursor = HalvingCursor<T>;

    fn start(self, cx: &mut Cx<'_>) -> HalvingCursor<T> {
        HalvingCursor { cur: cx.var(self.from) }
    }
}

/// A [`Halving`]'s state: the next value (0 once there is none).
#[derive(Debug)]
pub struct HalvingCursor<T: UInt> {
    cur: Var<T>,
}

impl<T: UInt> Cursor for HalvingCursor<T> {
    type Item = Val<T>;

    fn done(&self, cx: &mut Cx<'_>) -> Val<bool> {
        let i = cx.get(self.cur);
        let zero = cx.lit_bits::<T>(0);
        cx.eq(i, zero)
    }

    fn next(&self, cx: &mut Cx<'_>) -> Val<T> {
        let i = cx.get(self.cur);
        let one = cx.lit_bits::<T>(1);
        let half = cx.shr(i, one);
        cx.set(self.cur, half);
        i
    }
}

/// `doubling(from, below)`: `from, 2 from, 4 from, …` while below `below`.
#[derive(Debug)]
pub struct Doubling<T: UInt> {
    from: Val<T>,
    below: Val<T>,
    at: Loc,
}

/// A [`Doubling`]'s state: the next value (`below` once there is none, so
/// the loop's test is `cur < below`, a counted loop's) and the largest
/// value that may still be doubled, `(below - 1) >> 1`.
#[derive(Debug)]
pub struct DoublingCursor<T: UInt> {
    cur: Var<T>,
    below: Val<T>,
    last: Val<T>,
}

impl<T: UInt> Staged for Doubling<T> {
    type Item = Val<T>;
    type Cursor = DoublingCursor<T>;

    fn start(self, cx: &mut Cx<'_>) -> DoublingCursor<T> {
        let zero = cx.lit_bits::<T>(0);
        let ok = cx.ne(self.from, zero);
        cx.assert(ok, "assertion failed: from != 0", self.at);
        let one = cx.lit_bits::<T>(1);
        // (Wraps when `below` is 0: then nothing is taken.)
        let before = cx.sub(self.below, one);
        let last = cx.shr(before, one);
        // Set right before the loop: checked mode's proof that a doubling
        // of a constant ends (relok-compiler's `finite`).
        DoublingCursor { cur: cx.var(self.from), below: self.below, last }
    }
}

impl<T: UInt> Cursor for DoublingCursor<T> {
    type Item = Val<T>;

    fn done(&self, cx: &mut Cx<'_>) -> Val<bool> {
        let i = cx.get(self.cur);
        cx.ge(i, self.below)
    }

    fn next(&self, cx: &mut Cx<'_>) -> Val<T> {
        let i = cx.get(self.cur);
        // `2 i < below` exactly when `i <= (below - 1) >> 1`: no doubling
        // that would wrap is taken.
        let more = cx.le(i, self.last);
        let one = cx.lit_bits::<T>(1);
        let twice = cx.shl(i, one);
        let next = Val::new(cx.b.select(more.v, twice.v, self.below.v));
        cx.set(self.cur, next);
        i
    }
}

/// `.enumerate()`: the count (`usize`) and the item.
#[derive(Debug)]
pub struct Enumerate<I> {
    inner: I,
}

/// An [`Enumerate`]'s state: the inner one's and the count.
#[derive(Debug)]
pub struct EnumerateCursor<C> {
    inner: C,
    count: Var<usize>,
}

impl<I: Staged> Staged for Enumerate<I> {
    type Item = (Val<usize>, I::Item);
    type Cursor = EnumerateCursor<I::Cursor>;

    fn start(self, cx: &mut Cx<'_>) -> Self::Cursor {
        let inner = self.inner.start(cx);
        let zero = cx.lit(0usize);
        EnumerateCursor { inner, count: cx.var(zero) }
    }
}

impl<C: Cursor> Cursor for EnumerateCursor<C> {
    type Item = (Val<usize>, C::Item);

    fn done(&self, cx: &mut Cx<'_>) -> Val<bool> {
        self.inner.done(cx)
    }

    fn next(&self, cx: &mut Cx<'_>) -> Self::Item {
        let item = self.inner.next(cx);
        let count = self.count;
        let n = cx.get(count);
        let one = cx.lit(1usize);
        let m = cx.add(n, one);
        cx.set(count, m);
        (n, item)
    }
}

/// `.zip(other)`: over as long as the shorter.
#[derive(Debug)]
pub struct Zip<A, B> {
    a: A,
    b: B,
}

impl<A: Staged, B: Staged> Staged for Zip<A, B> {
    type Item = (A::Item, B::Item);
    type Cursor = Zip<A::Cursor, B::Cursor>;

    fn start(self, cx: &mut Cx<'_>) -> Self::Cursor {
        let a = self.a.start(cx);
        let b = self.b.start(cx);
        Zip { a, b }
    }
}

impl<A: Cursor, B: Cursor> Cursor for Zip<A, B> {
    type Item = (A::Item, B::Item);

    fn done(&self, cx: &mut Cx<'_>) -> Val<bool> {
        let a = self.a.done(cx);
        let b = self.b.done(cx);
        cx.bitor(a, b)
    }

    fn next(&self, cx: &mut Cx<'_>) -> Self::Item {
        (self.a.next(cx), self.b.next(cx))
    }
}

impl Cx<'_> {
    /// `a..b` (`inclusive`: `a..=b`).
    pub fn range<T: Int>(&mut self, start: Val<T>, end: Val<T>, inclusive: bool) -> RangeIter<T> {
        RangeIter { start, end, inclusive, step: None, direction: Direction::Forward }
    }

    /// `halving(n)`
    pub fn halving<T: UInt>(&mut self, from: Val<T>) -> Halving<T> {
        Halving { from }
    }

    /// `doubling(from, below)` (`at`: where a zero `from` is reported).
    pub fn doubling<T: UInt>(&mut self, from: Val<T>, below: Val<T>, at: Loc) -> Doubling<T> {
        Doubling { from, below, at }
    }

    /// `x.iter()`
    pub fn iter<T: Stored, S: Indexed<T>>(&mut self, s: S) -> SliceIter<T, S, ByValue> {
        SliceIter { s, rev: false, _t: PhantomData }
    }

    /// `x.iter_mut()`
    pub fn iter_mut<T: Stored, S: Indexed<T>>(&mut self, s: S) -> SliceIter<T, S, ElemMut<T>> {
        SliceIter { s, rev: false, _t: PhantomData }
    }

    /// `for item in it { body }`
    pub fn each<I: Staged>(&mut self, it: I, body: impl FnOnce(&mut Self, I::Item)) {
        let it = it.start(self);
        self.loop_(|cx| {
            let done = it.done(cx);
            cx.if_(done, |cx| cx.break_(), |_| {});
            let item = it.next(cx);
            body(cx, item);
        });
    }

    /// `it.sum()`: from the empty sum of the host's Rust (`-0.0` for
    /// floats), adding in order, as Rust's.
    pub fn sum<T: Num + std::iter::Sum, I: Staged<Item = Val<T>>>(&mut self, it: I) -> Val<T> {
        let zero = self.lit(std::iter::empty::<T>().sum::<T>());
        let acc = self.var(zero);
        self.each(it, |cx, x| {
            let a = cx.get(acc);
            let s = cx.add(a, x);
            cx.set(acc, s);
        });
        self.get(acc)
    }

    /// `it.product()`, as [`Cx::sum`] from the empty product.
    pub fn product<T: Num + std::iter::Product, I: Staged<Item = Val<T>>>(&mut self, it: I) -> Val<T> {
        let one = self.lit(std::iter::empty::<T>().product::<T>());
        let acc = self.var(one);
        self.each(it, |cx, x| {
            let a = cx.get(acc);
            let s = cx.mul(a, x);
            cx.set(acc, s);
        });
        self.get(acc)
    }

    /// `*e` of an `iter_mut` element.
    pub fn elem_get<T: Stored>(&mut self, e: ElemMut<T>) -> T::Val {
        T::load_at(self, e.ptr, Some(e.i.v))
    }

    /// `*e = v` of an `iter_mut` element.
    pub fn elem_set<T: Stored>(&mut self, e: ElemMut<T>, v: T::Val) {
        T::store_at(self, e.ptr, Some(e.i.v), v);
    }

    /// The fields of an `iter_mut` element of a struct slice (`p.x`,
    /// `p.x += v`: one field loaded or stored).
    pub fn elem_fields<T: super::structs::DevStruct>(&mut self, e: ElemMut<T>) -> T::Place {
        let q = self.b.offset(e.ptr, e.i.v);
        T::place(q)
    }

    /// A `loop`'s value: a `local` its `break value`s set.
    pub fn loop_value<T: DevScalar>(&mut self) -> Var<T> {
        self.new_local()
    }

    /// A labelled loop's exit flag (0: none; 1: `break 'label`; 2:
    /// `continue 'label`), cleared where the loop starts.
    pub fn exit_flag(&mut self) -> Var<u32> {
        let zero = self.lit(0u32);
        self.var(zero)
    }

    /// Leaves the innermost loop, for a labelled loop further out: `1`
    /// breaks it, `2` continues it.
    pub fn exit_outer(&mut self, flag: Var<u32>, how: u32) {
        let v = self.lit(how);
        self.set(flag, v);
        self.break_();
    }

    /// After a loop, inside the labelled loop `flag` belongs to: carries
    /// out a `break` or `continue` of it from inside.
    pub fn exit_to(&mut self, flag: Var<u32>) {
        let f = self.get(flag);
        let one = self.lit(1u32);
        let two = self.lit(2u32);
        let brk = self.eq(f, one);
        self.if_(brk, |cx| cx.break_(), |_| {});
        let cont = self.eq(f, two);
        self.if_(
            cont,
            |cx| {
                let zero = cx.lit(0u32);
                cx.set(flag, zero);
                cx.continue_();
            },
            |_| {},
        );
    }

    /// After a loop, inside a loop between it and the labelled loop `flag`
    /// belongs to: leaves this one too.
    pub fn exit_through(&mut self, flag: Var<u32>) {
        let f = self.get(flag);
        let zero = self.lit(0u32);
        let out = self.ne(f, zero);
        self.if_(out, |cx| cx.break_(), |_| {});
    }
}
