//! Values that are several IR values: a kernel's structs
//! (`#[derive(relok::Struct)]`) and tuples, lowered to their scalar
//! fields — one SSA value (or one `local`) per field; the IR has only
//! scalars and pointers.
//!
//! - [`KernelValue`]: what a kernel computes with — a [`Val<T>`], a
//!   struct's staged twin (the derive's: the struct's fields, each a
//!   `Val`), a tuple of these — with its `let mut` form ([`KernelVar`]: a
//!   `Var` per field), so `if`/`match` values, `let mut` and assignment
//!   take any of them;
//! - [`Stored`]: what lies in memory (a slice's element): scalars and
//!   structs, loaded and stored field by field (`offset p, i`, `field q,
//!   k`, `load`), so `let p = ps[i];` loads every field (or those
//!   [`Stored::load_fields`] names: the ones the kernel reads) and
//!   `ps[i] = p;` stores every field;
//! - [`DevStruct`]: a struct element's *place* (its twin of
//!   [`FieldRef`]s, which emit nothing until used), so `ps[i].x` loads one
//!   field and `ps[i].x = v` stores one;
//! - [`Method`]: a struct's device methods, found by rustc from the
//!   receiver's staged type;
//! - the tuple methods: `sin_cos`, `overflowing_add` / `_sub` / `_mul`,
//!   `abs_diff`.

use super::build::Cx;
use super::staged::*;
use relok_ir::{Type, Value};
use std::marker::PhantomData;

/// A value a kernel computes with: a scalar's [`Val`], a struct's twin,
/// a tuple of these. Its `let mut` is [`KernelValue::Var`].
pub trait KernelValue: Copy {
    /// The `let mut` form: a `local` per scalar.
    type Var: KernelVar<Val = Self>;
    /// New `local`s, unset.
    fn new_var(cx: &mut Cx<'_>) -> Self::Var;
    /// A value for a branch that never ends normally (never read).
    fn never(cx: &mut Cx<'_>) -> Self;
}

/// A `let mut` of a [`KernelValue`].
pub trait KernelVar: Copy {
    /// Its value.
    type Val;
    /// Reads every `local`.
    fn get(self, cx: &mut Cx<'_>) -> Self::Val;
    /// Writes every `local`.
    fn set(self, cx: &mut Cx<'_>, v: Self::Val);
}

impl<T: DevScalar> KernelValue for Val<T> {
    type Var = Var<T>;
    fn new_var(cx: &mut Cx<'_>) -> Var<T> {
        cx.new_local()
    }
    fn never(cx: &mut Cx<'_>) -> Val<T> {
        cx.lit_bits(0)
    }
}

impl<T: DevScalar> KernelVar for Var<T> {
    type Val = Val<T>;
    fn get(self, cx: &mut Cx<'_>) -> Val<T> {
        Val::new(cx.b.get(self.var))
    }
    fn set(self, cx: &mut Cx<'_>, v: Val<T>) {
        cx.b.set(self.var, v.v);
    }
}

macro_rules! tuples {
    ($(($($t:ident $k:tt),*);)*) => {$(
        impl<$($t: KernelValue),*> KernelValue for ($($t,)*) {
            type Var = ($($t::Var,)*);
            fn new_var(cx: &mut Cx<'_>) -> Self::Var {
                ($($t::new_var(cx),)*)
            }
            fn never(cx: &mut Cx<'_>) -> Self {
                ($($t::never(cx),)*)
            }
        }
        impl<$($t: KernelVar),*> KernelVar for ($($t,)*) {
            type Val = ($($t::Val,)*);
            fn get(self, cx: &mut Cx<'_>) -> Self::Val {
                ($(self.$k.get(cx),)*)
            }
            fn set(self, cx: &mut Cx<'_>, v: Self::Val) {
                $(self.$k.set(cx, v.$k);)*
            }
        }
        impl<$($t: KernelValue + Param),*> Param for ($($t,)*) {
            fn declare(cx: &mut Cx<'_>) -> Self {
                ($($t::declare(cx),)*)
            }
            fn values(self, out: &mut Vec<Value>) {
                $(self.$k.values(out);)*
            }
        }
    )*};
}

tuples! {
    (A 0, B 1);
    (A 0, B 1, C 2);
    (A 0, B 1, C 2, D 3);
    (A 0, B 1, C 2, D 3, E 4);
    (A 0, B 1, C 2, D 3, E 4, F 5);
}

/// What lies in a kernel's memory (a slice's element): a scalar, or a
/// `#[derive(relok::Struct)]` struct (every field a scalar).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a kernel type",
    label = "not a scalar or a `#[derive(relok::Struct)]` struct",
    note = "a kernel takes scalars (bool i32 u32 i64 u64 f32 f64 usize), structs marked `#[derive(Clone, Copy, relok::Struct)]` and `#[repr(C)]`, and slices of those"
)]
pub trait Stored: Copy + 'static {
    /// What a kernel computes with: a [`Val`], or the struct's twin.
    type Val: KernelValue;
    /// The IR type.
    fn ty() -> Type;
    /// Loads `p[i]` (`p` itself without `i`).
    fn load_at(cx: &mut Cx<'_>, p: Value, i: Option<Value>) -> Self::Val;
    /// Stores `v` at `p[i]`.
    fn store_at(cx: &mut Cx<'_>, p: Value, i: Option<Value>, v: Self::Val);
    /// Loads the fields named `fields` of `p[i]` (a struct's others are
    /// never read: [`KernelValue::never`]); a scalar is loaded.
    fn load_fields(cx: &mut Cx<'_>, p: Value, i: Option<Value>, fields: &[&str]) -> Self::Val {
        let _ = fields;
        Self::load_at(cx, p, i)
    }
}

/// What a kernel computes with for a value of type `T`: [`Val<T>`] for
/// a scalar, the struct's twin for a `#[derive(relok::Struct)]` struct.
pub type ValOf<T> = <T as Stored>::Val;

macro_rules! stored_scalar {
    ($($t:ty),*) => {$(
        impl Stored for $t {
            type Val = Val<$t>;
            fn ty() -> Type {
                Type::Scalar(<$t as DevScalar>::MEM)
            }
            fn load_at(cx: &mut Cx<'_>, p: Value, i: Option<Value>) -> Val<$t> {
                Val::new(cx.b.load(p, i))
            }
            fn store_at(cx: &mut Cx<'_>, p: Value, i: Option<Value>, v: Val<$t>) {
                cx.b.store(p, i, v.v);
            }
        }
    )*};
}
stored_scalar!(bool, i32, u32, i64, u64, f32, f64, usize, Word, u8, i8, u16, i16);

/// A `#[derive(relok::Struct)]` struct (the derive implements it, with
/// [`Stored`], [`crate::Element`] and `bytemuck`'s `Pod`, after checking
/// its layout): its fields' places.
pub trait DevStruct: Stored + crate::Element {
    /// The struct's twin of [`FieldRef`]s.
    type Place: Copy;
    /// The fields of the element `p` points to.
    fn place(p: Value) -> Self::Place;
}

/// A place twin's field: field `field` of the struct `ptr` points to.
/// Emits nothing until read ([`Cx::read_field`]) or written
/// ([`Cx::write_field`]).
#[derive(Debug)]
pub struct FieldRef<T> {
    ptr: Value,
    field: u32,
    _t: PhantomData<T>,
}
impl<T> Clone for FieldRef<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for FieldRef<T> {}
impl<T> FieldRef<T> {
    /// Field `field` of the struct `ptr` points to.
    pub fn new(ptr: Value, field: u32) -> FieldRef<T> {
        FieldRef { ptr, field, _t: PhantomData }
    }
}

/// What a device function's struct parameter of type `T` takes: a `T`.
#[diagnostic::on_unimplemented(
    message = "mismatched types: the device function's parameter is `{T}`",
    label = "expected `{T}`"
)]
pub trait IntoStruct<T: Stored> {
    /// The value.
    fn into_struct(self) -> ValOf<T>;
}

/// The fields of a struct the derive checked: only these scalar types.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a field of a kernel struct",
    label = "a kernel struct's fields are u8, i8, u16, i16, i32, u32, i64, u64, f32 or f64",
    note = "this name is not the scalar type it looks like, or not one of those"
)]
pub trait StructField: bytemuck::Pod + DevScalar {}
impl StructField for i32 {}
impl StructField for u32 {}
impl StructField for i64 {}
impl StructField for u64 {}
impl StructField for f32 {}
impl StructField for f64 {}
impl StructField for u8 {}
impl StructField for i8 {}
impl StructField for u16 {}
impl StructField for i16 {}

/// The derive's check that a struct is `Copy` (rustc suggests the
/// derive when it is not).
pub fn assert_copy<T: Copy>() {}

/// The derive's check of a field's type.
pub fn assert_field<T: StructField>() {}

/// A method of a struct's `#[relok::device] impl` (`H`: its name's
/// hash; the other arguments' and the result's staged types),
/// implemented for the struct's staged value: a kernel's `a.dot(b)` is
/// [`call_method`]`::<H, _, _, _>(cx, a, (b,))`. (The types are
/// parameters, not associated types, so a private struct's methods need
/// no public types.)
#[diagnostic::on_unimplemented(
    message = "this method is not supported in kernels",
    label = "no kernel method of this name (or these arguments) for this value",
    note = "a kernel calls the number methods docs/kernels.md lists (\"The subset\", \"Math\", \"Integer and float methods\") and the methods of a struct's `#[relok::device] impl Vec3 {{ … }}`"
)]
pub trait Method<const H: u64, Args, Out>: Sized {
    /// Stages the call (`args`: the other arguments).
    fn call(self, cx: &mut Cx<'_>, args: Args) -> Out;
}

/// `receiver.method(args)` of a struct's device method.
pub fn call_method<const H: u64, R: Method<H, A, O>, A, O>(cx: &mut Cx<'_>, receiver: R, args: A) -> O {
    receiver.call(cx, args)
}

impl Cx<'_> {
    /// The pointer to element `i` of `p`.
    pub fn elem_ptr(&mut self, p: Value, i: Option<Value>) -> Value {
        match i {
            Some(i) => self.b.offset(p, i),
            None => p,
        }
    }

    /// Loads field `k` (of type `T`) of the struct `q` points to.
    pub fn load_field<T: Stored>(&mut self, q: Value, k: u32) -> ValOf<T> {
        let f = self.b.field(q, k);
        T::load_at(self, f, None)
    }

    /// Stores field `k` of the struct `q` points to.
    pub fn store_field<T: Stored>(&mut self, q: Value, k: u32, v: ValOf<T>) {
        let f = self.b.field(q, k);
        T::store_at(self, f, None, v);
    }

    /// `s[i]`, bounds-checked, of which only `fields` are read (`let p =
    /// ps[i];` followed by `p.x` and `p.v` only).
    pub fn load_fields<T: Stored, S: Indexed<T>>(&mut self, s: S, i: Val<usize>, loc: Loc, fields: &[&str]) -> T::Val {
        let p = self.checked(s, i, loc);
        T::load_fields(self, p, Some(i.v), fields)
    }

    /// The fields of `s[i]`, after `i`'s bounds check.
    pub fn elem_place<T: DevStruct, S: Indexed<T>>(&mut self, s: S, i: Val<usize>, loc: Loc) -> T::Place {
        let p = self.checked(s, i, loc);
        let q = self.b.offset(p, i.v);
        T::place(q)
    }

    /// Reads one field of an element (`ps[i].x`).
    pub fn read_field<T: DevScalar>(&mut self, f: FieldRef<T>) -> Val<T> {
        let q = self.b.field(f.ptr, f.field);
        Val::new(self.b.load(q, None))
    }

    /// Writes one field of an element (`ps[i].x = v`).
    pub fn write_field<T: DevScalar>(&mut self, f: FieldRef<T>, v: Val<T>) {
        let q = self.b.field(f.ptr, f.field);
        self.b.store(q, None, v.v);
    }

    /// `x.sin_cos()`: `(x.sin(), x.cos())`, as Rust's.
    pub fn sin_cos<T: Float>(&mut self, x: Val<T>) -> (Val<T>, Val<T>) {
        let s = self.math(relok_ir::MathFn::Sin, x, &[]);
        let c = self.math(relok_ir::MathFn::Cos, x, &[]);
        (s, c)
    }

    /// `a.overflowing_add(b)`: the wrapped sum and whether it overflowed.
    pub fn overflowing_add<T: Int>(&mut self, a: Val<T>, b: Val<T>) -> (Val<T>, Val<bool>) {
        self.add_overflow(a, b)
    }

    /// `a.overflowing_sub(b)`
    pub fn overflowing_sub<T: Int>(&mut self, a: Val<T>, b: Val<T>) -> (Val<T>, Val<bool>) {
        self.sub_overflow(a, b)
    }

    /// `a.overflowing_mul(b)`
    pub fn overflowing_mul<T: Int>(&mut self, a: Val<T>, b: Val<T>) -> (Val<T>, Val<bool>) {
        self.mul_overflow(a, b)
    }

    /// `a.abs_diff(b)`: `|a - b|` in the unsigned type of the same width
    /// (never overflows): the larger minus the smaller, wrapping.
    pub fn abs_diff<T: Int>(&mut self, a: Val<T>, b: Val<T>) -> Val<T::Unsigned> {
        let lt = self.lt(a, b);
        let ua = self.cast::<T, T::Unsigned>(a);
        let ub = self.cast::<T, T::Unsigned>(b);
        let d1 = self.sub(ub, ua);
        let d2 = self.sub(ua, ub);
        Val::new(self.b.select(lt.v, d1.v, d2.v))
    }
}
