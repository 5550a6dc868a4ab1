//! The staged types a kernel's translated body computes with: Rust
//! scalar types and their IR scalars ([`DevScalar`] and the bounds
//! [`Num`], [`Int`], [`Signed`], [`Bits`], [`Float`]), IR values typed by
//! their Rust type ([`Val`]), `let mut`s ([`Var`]), indexable places
//! ([`Slice`], [`SharedArray`], [`LocalArray`], [`HostArray`] behind
//! [`Indexed`]), parameters ([`Param`]) and results ([`Ret`]).

use super::build::Cx;
use super::structs::Stored;
use relok_ir::{AddrSpace, FuncId, Scalar, Type, Value};
use std::marker::PhantomData;

/// A Rust scalar type a kernel computes with. `usize` is the IR's `u32`
/// (indices and lengths are 32-bit on the device).
pub trait DevScalar: Copy + 'static + Stored<Val = Val<Self>> {
    /// The IR's scalar of a value (`u32` for `u8` and `u16`, `i32` for
    /// `i8` and `i16`: no IR value has a storage type).
    const SCALAR: Scalar;
    /// The IR's scalar in memory (a slice's element, an array's): the
    /// storage type `u8 i8 u16 i16` for those, else [`DevScalar::SCALAR`].
    /// A value of a small type is kept in range in its 32-bit value
    /// ([`Cx`]'s arithmetic wraps it to the type's width after each
    /// operation), so a load and a store of it need nothing more.
    const MEM: Scalar = Self::SCALAR;
    /// Bits, zero-extended to 64 (the IR's literal convention; a small
    /// signed type's value sign-extended to its 32-bit value first).
    fn bits(self) -> u64;
    /// Whether the value fits the device's type (a `usize` above
    /// `u32::MAX` does not: the device's `usize` is 32 bits).
    fn fits(self) -> bool {
        true
    }
}

/// Numbers (not `bool`, not a symbol's word): arithmetic, ordering
/// (`<` `<=` `>` `>=`), casts.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a number in a kernel",
    label = "arithmetic and `<` `<=` `>` `>=` take numbers",
    note = "a symbol (`relok::Symbol`, `sym!`) is only compared with `==` and `!=`; to order `bool`s, compare `b as u32`"
)]
pub trait Num: DevScalar + Default {
    /// Zero (`T::ZERO` in a generic kernel).
    ///
    /// ```
    /// fn zero<T: relok::Number>() -> T {
    ///     T::ZERO
    /// }
    /// assert_eq!(zero::<f32>(), 0.0);
    /// ```
    const ZERO: Self;
    /// One (`T::ONE` in a generic kernel).
    ///
    /// ```
    /// fn one<T: relok::Number>() -> T {
    ///     T::ONE
    /// }
    /// assert_eq!(one::<u64>(), 1);
    /// ```
    const ONE: Self;
}
/// Integers: bit operations and shifts in a kernel; a generic kernel's
/// type parameter bounded by `relok::Int` ranges over `u32 i32 u64 i64`.
///
/// ```
/// fn integer<T: relok::Int>() {}
/// integer::<u64>();
/// ```
pub trait Int: Num + Bits {
    /// The unsigned type of the same width (itself when unsigned): the
    /// distance between two values, logical shifts.
    type Unsigned: Int;
}
/// Types with `-x` (`i32 i64 f32 f64`); a bound of generic kernels.
///
/// ```
/// fn signed<T: relok::Signed>() {}
/// signed::<i32>();
/// ```
pub trait Signed: Num {}
/// Types atomics add, min and max take: integers, and `f32`/`f64` (the
/// IR's float atomics; `f64` is refused by name on wgpu).
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no atomics in a kernel",
    label = "`atomic_add`, `atomic_min` and `atomic_max` take i32, u32, i64, u64, usize, f32 or f64",
    note = "u8, i8, u16 and i16 have no atomics: keep such values in a u32 slice"
)]
pub trait AtomicArith: Num {}

/// Types with `!x` (integers and `bool`).
pub trait Bits: DevScalar {}
/// Floating point (`f32 f64`): `sqrt` in a kernel; a bound of generic
/// kernels.
///
/// ```
/// fn float<T: relok::Float>() {}
/// float::<f32>();
/// ```
pub trait Float: Signed {
    /// The bits of 1.0.
    ///
    /// ```
    /// use relok::Float;
    /// assert_eq!(<f32 as Float>::ONE_BITS, u64::from(1.0f32.to_bits()));
    /// assert_eq!(<f64 as Float>::ONE_BITS, 1.0f64.to_bits());
    /// ```
    const ONE_BITS: u64;
    /// The unsigned integer of the same width (`to_bits`, `from_bits`).
    type Bits: Int;
}

macro_rules! dev_scalar {
    ($($t:ty => $s:ident, |$x:ident| $bits:expr, [$($tr:ident),*];)*) => {$(
        impl DevScalar for $t {
            const SCALAR: Scalar = Scalar::$s;
            fn bits(self) -> u64 {
                let $x = self;
                $bits
            }
        }
        $(impl $tr for $t {})*
    )*};
}

impl DevScalar for usize {
    const SCALAR: Scalar = Scalar::U32;
    /// The low 32 bits ([`DevScalar::fits`] tells whether that is all).
    fn bits(self) -> u64 {
        u64::from(self as u32)
    }
    fn fits(self) -> bool {
        u32::try_from(self).is_ok()
    }
}
impl Num for usize {
    const ZERO: usize = 0;
    const ONE: usize = 1;
}
impl Int for usize {
    type Unsigned = usize;
}
impl Bits for usize {}

dev_scalar! {
    bool => Bool, |x| u64::from(x), [Bits];
    i32 => I32, |x| u64::from(x as u32), [Signed, Bits];
    u32 => U32, |x| u64::from(x), [Bits];
    i64 => I64, |x| x as u64, [Signed, Bits];
    u64 => U64, |x| x, [Bits];
    f32 => F32, |x| u64::from(x.to_bits()), [Signed];
    f64 => F64, |x| x.to_bits(), [Signed];
}

/// The small integers: computed on as their 32-bit value, kept in range.
macro_rules! small_int {
    ($($t:ty => $s:ident / $mem:ident, unsigned $u:ty, [$($tr:ident),*];)*) => {$(
        impl DevScalar for $t {
            const SCALAR: Scalar = Scalar::$s;
            const MEM: Scalar = Scalar::$mem;
            fn bits(self) -> u64 {
                // i8/i16 sign-extend to i32; u8/u16 zero-extend to u32.
                u64::from(i64::from(self) as u32)
            }
        }
        impl Num for $t {
            const ZERO: $t = 0;
            const ONE: $t = 1;
        }
        impl Int for $t {
            type Unsigned = $u;
        }
        impl Bits for $t {}
        $(impl $tr for $t {})*
    )*};
}

small_int! {
    u8 => U32 / U8, unsigned u8, [];
    i8 => I32 / I8, unsigned u8, [Signed];
    u16 => U32 / U16, unsigned u16, [];
    i16 => I32 / I16, unsigned u16, [Signed];
}

macro_rules! num {
    ($($t:ty: $zero:literal, $one:literal;)*) => {$(
        impl Num for $t {
            const ZERO: $t = $zero;
            const ONE: $t = $one;
        }
    )*};
}

num! {
    i32: 0, 1;
    u32: 0, 1;
    i64: 0, 1;
    u64: 0, 1;
    f32: 0.0, 1.0;
    f64: 0.0, 1.0;
}

impl Int for i32 {
    type Unsigned = u32;
}
impl Int for u32 {
    type Unsigned = u32;
}
impl Int for i64 {
    type Unsigned = u64;
}
impl Int for u64 {
    type Unsigned = u64;
}

/// The unsigned integers (`u8 u16 u32 u64 usize`): what `halving` and
/// `doubling` count in (a signed value halved from below zero never
/// reaches it).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an unsigned integer",
    label = "`halving` and `doubling` count in u8, u16, u32, u64 or usize",
    note = "strides and offsets are usually `usize`s: `block_dim_x()` is one"
)]
pub trait UInt: Int {}
impl UInt for u8 {}
impl UInt for u16 {}
impl UInt for u32 {}
impl UInt for u64 {}
impl UInt for usize {}

/// Integers an atomic exchanges or compares-and-swaps (`atomic_exchange`,
/// `compare_exchange`): the IR's 32- and 64-bit integers, not the small
/// ones (no IR atomic has a storage type).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be exchanged atomically in a kernel",
    label = "`atomic_exchange` and `compare_exchange` take i32, u32, i64, u64 or usize",
    note = "`atomic_add`, `atomic_min` and `atomic_max` take f32 and f64 too; u8, i8, u16 and i16 have no atomics (keep such values in a u32 slice)"
)]
pub trait AtomicInt: Int + AtomicArith {}
impl AtomicInt for i32 {}
impl AtomicInt for u32 {}
impl AtomicInt for usize {}
impl AtomicInt for i64 {}
impl AtomicInt for u64 {}

impl AtomicArith for i32 {}
impl AtomicArith for u32 {}
impl AtomicArith for usize {}
impl AtomicArith for i64 {}
impl AtomicArith for u64 {}
impl AtomicArith for f32 {}
impl AtomicArith for f64 {}

impl Float for f32 {
    const ONE_BITS: u64 = 0x3f80_0000;
    type Bits = u32;
}

impl Float for f64 {
    const ONE_BITS: u64 = 0x3ff0_0000_0000_0000;
    type Bits = u64;
}

/// The Rust type of a `word` in a kernel: a symbol (a `relok::Symbol`
/// parameter, `sym!("name")`). Words are only compared.
#[derive(Debug, Clone, Copy)]
pub struct Word;

impl DevScalar for Word {
    const SCALAR: Scalar = Scalar::Word;
    fn bits(self) -> u64 {
        0
    }
}

/// An IR value whose Rust type is `T`.
#[derive(Debug)]
pub struct Val<T> {
    pub(super) v: Value,
    pub(super) _t: PhantomData<T>,
}
impl<T> Clone for Val<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Val<T> {}
impl<T> Val<T> {
    pub(super) fn new(v: Value) -> Val<T> {
        Val { v, _t: PhantomData }
    }
}

/// A `let mut` scalar: an IR `local`.
#[derive(Debug)]
pub struct Var<T> {
    pub(super) var: relok_ir::Var,
    pub(super) _t: PhantomData<T>,
}
impl<T> Clone for Var<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Var<T> {}

/// A `&[T]` / `&mut [T]` parameter: a `ptr<global, T>` and a `u32` length.
#[derive(Debug)]
pub struct Slice<T> {
    pub(super) ptr: Value,
    pub(super) len: Value,
    pub(super) _t: PhantomData<T>,
}
impl<T> Clone for Slice<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Slice<T> {}

/// A `&mut [T]` parameter: a [`Slice`] that may be written (a device
/// function's `&mut [T]` parameter takes only this: [`IntoSliceMut`]).
#[derive(Debug)]
pub struct SliceMut<T> {
    pub(super) ptr: Value,
    pub(super) len: Value,
    pub(super) _t: PhantomData<T>,
}
impl<T> Clone for SliceMut<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for SliceMut<T> {}

/// What a device function's `&[T]` parameter takes: a kernel's slice,
/// `&[T]` or `&mut [T]` (as Rust reborrows `&mut [T]` as `&[T]`).
#[diagnostic::on_unimplemented(
    message = "this argument is not a slice of `{T}`: the device function's parameter is `&[{T}]`",
    label = "expected a `&[{T}]` slice parameter of the caller here",
    note = "a device function takes the caller's slice parameters and their sub-slices; an array's sub-slices and rows (per-thread or shared memory) stay in the function that declares the array"
)]
pub trait IntoSlice<T> {
    /// The read-only view.
    fn into_slice(self) -> Slice<T>;
}
impl<T> IntoSlice<T> for Slice<T> {
    fn into_slice(self) -> Slice<T> {
        self
    }
}
impl<T> IntoSlice<T> for SliceMut<T> {
    fn into_slice(self) -> Slice<T> {
        Slice { ptr: self.ptr, len: self.len, _t: PhantomData }
    }
}

/// What a device function's `&mut [T]` parameter takes: a kernel's
/// `&mut [T]` slice only (a `&[T]` one is read-only, as in Rust).
#[diagnostic::on_unimplemented(
    message = "cannot pass this as `&mut [{T}]`: the device function writes through its `&mut [{T}]` parameter",
    label = "expected a `&mut [{T}]` slice here (a `&[{T}]` is read-only: declare the caller's parameter `&mut [{T}]`)",
    note = "a device function takes the caller's slice parameters and their sub-slices; an array's sub-slices and rows (per-thread or shared memory) stay in the function that declares the array"
)]
pub trait IntoSliceMut<T> {
    /// The writable slice.
    fn into_slice_mut(self) -> SliceMut<T>;
}
impl<T> IntoSliceMut<T> for SliceMut<T> {
    fn into_slice_mut(self) -> SliceMut<T> {
        self
    }
}

/// What a device function's scalar parameter of type `T` takes: a `T`.
#[diagnostic::on_unimplemented(
    message = "mismatched types: the device function's parameter is `{T}`",
    label = "expected `{T}`",
    note = "Rust converts no number implicitly: write `as {T}`"
)]
pub trait IntoVal<T> {
    /// The value.
    fn into_val(self) -> Val<T>;
}
impl<T> IntoVal<T> for Val<T> {
    fn into_val(self) -> Val<T> {
        self
    }
}

/// The types an integer literal above `u32::MAX` may have in a kernel
/// (the macro wraps such a literal in [`wide_lit`]): not `usize`, which is
/// 32 bits on the device.
#[diagnostic::on_unimplemented(
    message = "this literal does not fit a kernel's `{Self}`",
    label = "above `u32::MAX`",
    note = "a kernel's `usize` is 32 bits on the device (indices and lengths are `u32`): use `u64` for wider values"
)]
pub trait WideLit: DevScalar {}
impl WideLit for i64 {}
impl WideLit for u64 {}

/// An integer literal above `u32::MAX` (see [`WideLit`]).
pub fn wide_lit<T: WideLit>(x: T) -> T {
    x
}

/// A block-shared array of a size known at compile time.
#[derive(Debug)]
pub struct SharedArray<T> {
    pub(super) var: relok_ir::Var,
    pub(super) len: u32,
    pub(super) _t: PhantomData<T>,
}
impl<T> Clone for SharedArray<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for SharedArray<T> {}

/// A per-thread array (`let mut a = [0.0f32; 4];`): an IR `local` of
/// array type.
#[derive(Debug)]
pub struct LocalArray<T> {
    pub(super) var: relok_ir::Var,
    pub(super) len: u32,
    pub(super) _t: PhantomData<T>,
}
impl<T> Clone for LocalArray<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for LocalArray<T> {}

impl<T: DevScalar> Indexed<T> for LocalArray<T> {
    fn base(self, cx: &mut Cx<'_>) -> (Value, Val<usize>) {
        let p = cx.b.addr(self.var);
        let len = cx.lit(self.len as usize);
        (p, len)
    }
}

/// A `#[relok::host] static` array, read through its runtime global.
#[derive(Debug)]
pub struct HostArray<T> {
    pub(super) ptr: Value,
    pub(super) len: u32,
    pub(super) _t: PhantomData<T>,
}
impl<T> Clone for HostArray<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for HostArray<T> {}

/// Where a Rust construct is: `file!()`, `line!()`, `column!()`.
#[derive(Debug, Clone, Copy)]
pub struct Loc {
    /// `file!()`.
    pub file: &'static str,
    /// `line!()`.
    pub line: u32,
    /// `column!()`.
    pub col: u32,
}

/// Something indexable in a kernel: where its elements are and how many.
pub trait Indexed<T: Stored>: Copy {
    /// A pointer to element 0 and the length.
    fn base(self, cx: &mut Cx<'_>) -> (Value, Val<usize>);
}

impl<T: Stored> Indexed<T> for Slice<T> {
    fn base(self, _: &mut Cx<'_>) -> (Value, Val<usize>) {
        (self.ptr, Val::new(self.len))
    }
}

impl<T: Stored> Indexed<T> for SliceMut<T> {
    fn base(self, _: &mut Cx<'_>) -> (Value, Val<usize>) {
        (self.ptr, Val::new(self.len))
    }
}

impl<T: DevScalar> Indexed<T> for SharedArray<T> {
    fn base(self, cx: &mut Cx<'_>) -> (Value, Val<usize>) {
        let p = cx.b.addr(self.var);
        let len = cx.lit(self.len as usize);
        (p, len)
    }
}

impl<T: DevScalar> Indexed<T> for HostArray<T> {
    fn base(self, cx: &mut Cx<'_>) -> (Value, Val<usize>) {
        let len = cx.lit(self.len as usize);
        (self.ptr, len)
    }
}

/// A kernel or device-function parameter type.
pub trait Param: Copy {
    /// Declares the IR parameter(s).
    fn declare(cx: &mut Cx<'_>) -> Self;
    /// The IR arguments passing it to a device function.
    fn values(self, out: &mut Vec<Value>);
}

impl<T: DevScalar> Param for Val<T> {
    fn declare(cx: &mut Cx<'_>) -> Self {
        Val::new(cx.b.param(T::SCALAR))
    }
    fn values(self, out: &mut Vec<Value>) {
        out.push(self.v);
    }
}

impl<T: Stored> Param for Slice<T> {
    fn declare(cx: &mut Cx<'_>) -> Self {
        let ptr = cx.b.param(Type::ptr(AddrSpace::Global, T::ty()));
        let len = cx.b.param(Scalar::U32);
        // A kernel's slice: its length is checked against its buffer at
        // launch, so Rust's bounds check is the only one checked mode needs
        // (`relok_ir::LenParam`).
        if cx.b.func().is_kernel() {
            cx.b.len_param(len, ptr);
        }
        Slice { ptr, len, _t: PhantomData }
    }
    fn values(self, out: &mut Vec<Value>) {
        out.push(self.ptr);
        out.push(self.len);
    }
}

impl<T: Stored> Param for SliceMut<T> {
    fn declare(cx: &mut Cx<'_>) -> Self {
        let Slice { ptr, len, .. } = Slice::<T>::declare(cx);
        SliceMut { ptr, len, _t: PhantomData }
    }
    fn values(self, out: &mut Vec<Value>) {
        out.push(self.ptr);
        out.push(self.len);
    }
}

/// A device function's result type: a scalar or nothing.
pub trait Ret {
    /// The IR result type.
    fn ty() -> Option<Type>;
    /// The result of a call.
    fn call(cx: &mut Cx<'_>, f: FuncId, args: Vec<Value>) -> Self;
}

impl Ret for () {
    fn ty() -> Option<Type> {
        None
    }
    fn call(cx: &mut Cx<'_>, f: FuncId, args: Vec<Value>) {
        cx.b.call_void(f, args);
    }
}

impl<T: DevScalar> Ret for Val<T> {
    fn ty() -> Option<Type> {
        Some(Type::Scalar(T::SCALAR))
    }
    fn call(cx: &mut Cx<'_>, f: FuncId, args: Vec<Value>) -> Self {
        Val::new(cx.b.call(f, args))
    }
}

/// The `match` rustc checks for a kernel's `match` (its patterns' types,
/// its exhaustiveness): `check` is given a value of the scrutinee's Rust
/// type, and is never called.
pub fn check_match<T>(_scrutinee: Val<T>, check: impl FnOnce(T)) {
    let _ = check;
}

/// A guard in [`check_match`]'s `match` (rustc only checks that the arm
/// has one).
pub fn guard() -> bool {
    false
}
