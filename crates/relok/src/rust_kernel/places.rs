//! Places beyond a slice parameter and a 1-D array: 2-D arrays
//! ([`Array2`]: `[[T; C]; R]` per thread, `shared::<[T; C], R>()` per
//! block), their rows, and sub-slices (`&x[lo..hi]`) of any indexable
//! place ([`SubSlice`], [`SubSliceMut`]).
//!
//! - A 2-D array is one IR variable of `R * C` elements, row-major;
//!   `m[r][c]` checks `r < R` then `c < C` (each with Rust's message at
//!   its index, as Rust checks each dimension: an index past the row but
//!   inside the whole array still throws) and reads `p[r * C + c]`, the
//!   index a hand-written flat array would compute.
//! - A row `m[r]` (`m[r].len()`, `m[r].iter()`, `&m[r]`, the rows of
//!   `m.iter()`) is a [`View`]: the row's first element (`offset p, r *
//!   C`) and `C`.
//! - A sub-slice is the same pointer and length pair, after Rust's checks
//!   in Rust's order: `range start index {lo} out of range for slice of
//!   length {len}`, `range end index {hi} …`, `slice index starts at {lo}
//!   but ends at {hi}`. A slice parameter's sub-slice is a [`Slice`] /
//!   [`SliceMut`] again (a device function takes it); an array's a
//!   [`View`] (an array lives in per-thread or shared memory, which a
//!   device function's `&[T]` parameter does not take).

use super::build::Cx;
use super::iter::{Cursor, Staged};
use super::staged::*;
use relok_ir::{HostRef, Scalar, Type, Value};
use std::marker::PhantomData;

/// A 2-D array `[[T; C]; R]`: per-thread (`let mut m = [[0.0f32; 3];
/// 3];`) or block-shared (`shared::<[f32; 17], 16>()`).
#[derive(Debug)]
pub struct Array2<T, const R: usize, const C: usize> {
    var: relok_ir::Var,
    _t: PhantomData<T>,
}
impl<T, const R: usize, const C: usize> Clone for Array2<T, R, C> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, const R: usize, const C: usize> Copy for Array2<T, R, C> {}

/// Elements from a pointer on: a row of a 2-D array, a sub-slice of an
/// array (per-thread or shared memory).
#[derive(Debug)]
pub struct View<T> {
    ptr: Value,
    len: Val<usize>,
    _t: PhantomData<T>,
}
impl<T> Clone for View<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for View<T> {}

impl<T: DevScalar> Indexed<T> for View<T> {
    fn base(self, _: &mut Cx<'_>) -> (Value, Val<usize>) {
        (self.ptr, self.len)
    }
}

/// What `&x[lo..hi]` gives for a place `x`.
pub trait SubSlice<T: DevScalar>: Indexed<T> {
    /// The read-only sub-slice.
    type Sub;
    /// The sub-slice at `ptr`, of `len` elements.
    fn sub(ptr: Value, len: Val<usize>) -> Self::Sub;
}

/// What `&mut x[lo..hi]` gives for a place `x` that may be written.
pub trait SubSliceMut<T: DevScalar>: Indexed<T> {
    /// The writable sub-slice.
    type SubMut;
    /// The sub-slice at `ptr`, of `len` elements.
    fn sub_mut(ptr: Value, len: Val<usize>) -> Self::SubMut;
}

fn slice<T>(ptr: Value, len: Val<usize>) -> Slice<T> {
    Slice { ptr, len: len.v, _t: PhantomData }
}

fn view<T>(ptr: Value, len: Val<usize>) -> View<T> {
    View { ptr, len, _t: PhantomData }
}

macro_rules! sub_slices {
    ($($place:ident => $sub:ident, $mk:ident $(, mut $sub_mut:ident, $mk_mut:ident)?;)*) => {$(
        impl<T: DevScalar> SubSlice<T> for $place<T> {
            type Sub = $sub<T>;
            fn sub(ptr: Value, len: Val<usize>) -> $sub<T> {
                $mk(ptr, len)
            }
        }
        $(impl<T: DevScalar> SubSliceMut<T> for $place<T> {
            type SubMut = $sub_mut<T>;
            fn sub_mut(ptr: Value, len: Val<usize>) -> $sub_mut<T> {
                $mk_mut(ptr, len)
            }
        })?
    )*};
}

fn slice_mut<T>(ptr: Value, len: Val<usize>) -> SliceMut<T> {
    SliceMut { ptr, len: len.v, _t: PhantomData }
}

sub_slices! {
    Slice => Slice, slice;
    SliceMut => Slice, slice, mut SliceMut, slice_mut;
    HostArray => Slice, slice;
    View => View, view, mut View, view;
    LocalArray => View, view, mut View, view;
    SharedArray => View, view, mut View, view;
}

/// The rows of a 2-D array (`m.iter()`, `m.iter_mut()`, `for row in
/// &m`), each a [`View`].
#[derive(Debug)]
pub struct Rows<T, const R: usize, const C: usize> {
    a: Array2<T, R, C>,
}

/// A [`Rows`]' state: the first element and the next row.
#[derive(Debug)]
pub struct RowsCursor<T, const R: usize, const C: usize> {
    p: Value,
    at: Var<usize>,
    _t: PhantomData<T>,
}

impl<T: DevScalar, const R: usize, const C: usize> Staged for Rows<T, R, C> {
    type Item = View<T>;
    type Cursor = RowsCursor<T, R, C>;

    fn start(self, cx: &mut Cx<'_>) -> Self::Cursor {
        let p = cx.b.addr(self.a.var);
        let zero = cx.lit(0usize);
        RowsCursor { p, at: cx.var(zero), _t: PhantomData }
    }
}

impl<T: DevScalar, const R: usize, const C: usize> Cursor for RowsCursor<T, R, C> {
    type Item = View<T>;

    fn done(&self, cx: &mut Cx<'_>) -> Val<bool> {
        let i = cx.get(self.at);
        let rows = cx.lit(R);
        cx.ge(i, rows)
    }

    fn next(&self, cx: &mut Cx<'_>) -> View<T> {
        let i = cx.get(self.at);
        let one = cx.lit(1usize);
        let next = cx.add(i, one);
        cx.set(self.at, next);
        let cols = cx.lit(C);
        let first = cx.mul(i, cols);
        view(cx.b.offset(self.p, first.v), cols)
    }
}

impl Cx<'_> {
    fn new_array2<T: DevScalar, const R: usize, const C: usize>(&mut self, shared: bool) -> Array2<T, R, C> {
        const { assert!(R > 0 && C > 0, "a kernel's 2-D array has at least one row and one column") };
        let ty = Type::array(Type::Scalar(T::MEM), (R * C) as u32);
        let name = format!("{}{}", if shared { "s" } else { "a" }, self.next_local());
        let var = if shared { self.b.shared(name, ty) } else { self.b.local(name, ty) };
        Array2 { var, _t: PhantomData }
    }

    /// `[[init; C]; R]`: a per-thread 2-D array of `R * C` copies of `init`.
    pub fn local_array2<T: DevScalar, const R: usize, const C: usize>(&mut self, init: Val<T>) -> Array2<T, R, C> {
        let a = self.new_array2::<T, R, C>(false);
        let p = self.b.addr(a.var);
        let zero = self.lit(0usize);
        let end = self.lit(R * C);
        self.for_range(zero, end, None, |cx, i| cx.b.store(p, Some(i.v), init.v));
        a
    }

    /// `[[a, b], [c, d]]` (rows of equal length, as Rust's type says): a
    /// per-thread 2-D array of these values.
    pub fn local_array2_of<T: DevScalar, const R: usize, const C: usize>(
        &mut self,
        rows: &[[Val<T>; C]; R],
    ) -> Array2<T, R, C> {
        let a = self.new_array2::<T, R, C>(false);
        let p = self.b.addr(a.var);
        for (k, v) in rows.iter().flatten().enumerate() {
            let i = self.lit(k);
            self.b.store(p, Some(i.v), v.v);
        }
        a
    }

    /// `shared::<[T; C], R>()`: a block-shared 2-D array.
    pub fn shared2<T: DevScalar, const R: usize, const C: usize>(&mut self) -> Array2<T, R, C> {
        self.new_array2::<T, R, C>(true)
    }

    /// `m.len()`: the rows.
    pub fn len2<T, const R: usize, const C: usize>(&mut self, _: Array2<T, R, C>) -> Val<usize> {
        self.lit(R)
    }

    /// The first element of the row `m[r]` (`r * C`), after Rust's check
    /// of `r` (at `at`).
    pub fn row_start<T: DevScalar, const R: usize, const C: usize>(
        &mut self,
        a: Array2<T, R, C>,
        r: Val<usize>,
        at: Loc,
    ) -> Val<usize> {
        let p = self.b.addr(a.var);
        let rows = view::<T>(p, self.lit(R));
        self.checked(rows, r, at);
        let width = self.lit(C);
        self.mul(r, width)
    }

    /// The pointer and the flat index of `m[r][c]` (`start`: the row's,
    /// from [`Cx::row_start`]), after Rust's check of `c`.
    fn element2<T: DevScalar, const R: usize, const C: usize>(
        &mut self,
        a: Array2<T, R, C>,
        start: Val<usize>,
        c: Val<usize>,
        at: Loc,
    ) -> (Value, Val<usize>) {
        let p = self.b.addr(a.var);
        let cols = view::<T>(p, self.lit(C));
        self.checked(cols, c, at);
        (p, self.add(start, c))
    }

    /// `m[r][c]` (`start`: the row's first element, `r` checked), `c`
    /// bounds-checked at `at`.
    pub fn load2<T: DevScalar, const R: usize, const C: usize>(
        &mut self,
        a: Array2<T, R, C>,
        start: Val<usize>,
        c: Val<usize>,
        at: Loc,
    ) -> Val<T> {
        let (p, i) = self.element2(a, start, c, at);
        Val::new(self.b.load(p, Some(i.v)))
    }

    /// `m[r][c] = v`, as [`Cx::load2`].
    pub fn store2<T: DevScalar, const R: usize, const C: usize>(
        &mut self,
        a: Array2<T, R, C>,
        start: Val<usize>,
        c: Val<usize>,
        v: Val<T>,
        at: Loc,
    ) {
        let (p, i) = self.element2(a, start, c, at);
        self.b.store(p, Some(i.v), v.v);
    }

    /// The row `m[r]` (bounds-checked).
    pub fn row<T: DevScalar, const R: usize, const C: usize>(
        &mut self,
        a: Array2<T, R, C>,
        r: Val<usize>,
        at: Loc,
    ) -> View<T> {
        let p = self.b.addr(a.var);
        let rows = view::<T>(p, self.lit(R));
        self.checked(rows, r, at);
        let width = self.lit(C);
        let first = self.mul(r, width);
        view(self.b.offset(p, first.v), width)
    }

    /// `m.iter()`: the rows.
    pub fn rows<T: DevScalar, const R: usize, const C: usize>(&mut self, a: Array2<T, R, C>) -> Rows<T, R, C> {
        Rows { a }
    }

    /// Throws `text` (holding `{0}` and `{1}`, written with `a` and `b`)
    /// at `at` when `fail` holds.
    fn throw_if(&mut self, fail: Val<bool>, text: &str, a: Val<usize>, b: Val<usize>, at: Loc) {
        let throw_with = self.throw_with;
        self.if_(
            fail,
            |cx| {
                let m = cx.b.host_ref(HostRef::Str(format!("{}:{}:{}: {text}", at.file, at.line, at.col)));
                let a = cx.b.convert(a.v, Scalar::U64);
                let b = cx.b.convert(b.v, Scalar::U64);
                cx.b.call_void(throw_with, vec![m, a, b]);
            },
            |_| {},
        );
    }

    /// The pointer and length of `s[lo..hi]` (`None`: an open end), or of
    /// `s[lo..=hi]` when `inclusive`, after Rust's checks, in Rust's order
    /// and with its messages (an inclusive end is reported as written, and
    /// as `hi + 1` where it is below the start).
    fn range_of<T: DevScalar, S: Indexed<T>>(
        &mut self,
        s: S,
        lo: Option<Val<usize>>,
        hi: Option<Val<usize>>,
        inclusive: bool,
        at: Loc,
    ) -> (Value, Val<usize>) {
        const START: &str = "range start index {0} out of range for slice of length {1}";
        const END: &str = "range end index {0} out of range for slice of length {1}";
        let (p, len) = s.base(self);
        // The exclusive end: `hi + 1` for `..=hi` (it wraps only where
        // `hi >= len` already failed).
        let end = hi.map(|hi| {
            if inclusive {
                let one = self.lit(1usize);
                self.add(hi, one)
            } else {
                hi
            }
        });
        // `hi` is past the end: `hi > len`, or `hi >= len` for `..=hi`.
        let past = |cx: &mut Self, hi| if inclusive { cx.ge(hi, len) } else { cx.gt(hi, len) };
        match (lo, hi, end) {
            (Some(lo), Some(hi), Some(end)) => {
                // Two compares on the way through, as Rust's `lo <= end &&
                // end <= len`; which message, only when one fails.
                let order = self.gt(lo, end);
                let past_end = past(self, hi);
                let fail = self.bitor(order, past_end);
                self.if_(
                    fail,
                    |cx| {
                        let start = cx.gt(lo, len);
                        cx.throw_if(start, START, lo, len, at);
                        cx.throw_if(past_end, END, hi, len, at);
                        cx.throw_if(order, "slice index starts at {0} but ends at {1}", lo, end, at);
                    },
                    |_| {},
                );
            }
            (Some(lo), None, _) => {
                let out = self.gt(lo, len);
                self.throw_if(out, START, lo, len, at);
            }
            (None, Some(hi), _) => {
                let out = past(self, hi);
                self.throw_if(out, END, hi, len, at);
            }
            _ => {}
        }
        let end = end.unwrap_or(len);
        match lo {
            Some(lo) => {
                let n = self.sub(end, lo);
                (self.b.offset(p, lo.v), n)
            }
            None => (p, end),
        }
    }

    /// `&s[lo..hi]` (`&s[lo..]`, `&s[..hi]`, `&s[..]`; `&s[lo..=hi]` and
    /// `&s[..=hi]` when `inclusive`).
    pub fn sub_slice<T: DevScalar, S: SubSlice<T>>(
        &mut self,
        s: S,
        lo: Option<Val<usize>>,
        hi: Option<Val<usize>>,
        inclusive: bool,
        at: Loc,
    ) -> S::Sub {
        let (p, n) = self.range_of(s, lo, hi, inclusive, at);
        S::sub(p, n)
    }

    /// `&mut s[lo..hi]` (as [`Cx::sub_slice`]).
    pub fn sub_slice_mut<T: DevScalar, S: SubSliceMut<T>>(
        &mut self,
        s: S,
        lo: Option<Val<usize>>,
        hi: Option<Val<usize>>,
        inclusive: bool,
        at: Loc,
    ) -> S::SubMut {
        let (p, n) = self.range_of(s, lo, hi, inclusive, at);
        S::sub_mut(p, n)
    }
}
