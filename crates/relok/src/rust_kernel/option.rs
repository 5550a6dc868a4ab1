//! `Option<T>` in kernels: a flag and a value ([`Opt`]), what a device
//! function returns when it may have no result and what `checked_*`
//! gives. It is a [`KernelValue`] as a tuple is (a `let mut` of one is a
//! `local` for the flag and one per scalar of the value), so it is a
//! device function's result (staged into the caller), an `if`/`match`
//! value and a `let` binding. `None`'s value is never read: it holds
//! zeros ([`KernelValue::never`]).
//!
//! The macro lowers the forms that take one apart to a test of the flag:
//! `if let Some(p) = e`, `while let Some(p) = e`, `let Some(p) = e else
//! { … }` and a `match` of `Some(p)` and `None` arms, and the methods
//! below.

use super::build::Cx;
use super::staged::{Loc, Num, Val, Var};
use super::structs::{KernelValue, KernelVar};

/// `Option<T>` of a kernel: whether there is a value, and the value
/// (zeros when there is none).
#[derive(Debug)]
pub struct Opt<V> {
    pub(super) some: Val<bool>,
    pub(super) value: V,
}
impl<V: Copy> Clone for Opt<V> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<V: Copy> Copy for Opt<V> {}

/// A `let mut` of an `Option`: its flag's `local` and its value's.
#[derive(Debug)]
pub struct OptVar<V> {
    some: Var<bool>,
    value: V,
}
impl<V: Copy> Clone for OptVar<V> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<V: Copy> Copy for OptVar<V> {}

impl<V: KernelValue> KernelValue for Opt<V> {
    type Var = OptVar<V::Var>;
    fn new_var(cx: &mut Cx<'_>) -> Self::Var {
        OptVar { some: cx.new_local(), value: V::new_var(cx) }
    }
    fn never(cx: &mut Cx<'_>) -> Self {
        cx.none()
    }
}

impl<V: KernelVar> KernelVar for OptVar<V> {
    type Val = Opt<V::Val>;
    fn get(self, cx: &mut Cx<'_>) -> Self::Val {
        Opt { some: self.some.get(cx), value: self.value.get(cx) }
    }
    fn set(self, cx: &mut Cx<'_>, v: Self::Val) {
        self.some.set(cx, v.some);
        self.value.set(cx, v.value);
    }
}

/// What `Some(…)` patterns and `Option`'s methods take apart: an
/// [`Opt`] (any other type is refused by rustc with this message).
#[diagnostic::on_unimplemented(
    message = "`Some(…)` patterns and `Option`'s methods take an `Option` in a kernel",
    label = "not an `Option`",
    note = "`if let`, `while let`, `let … else` and `match` on `Some(…)` take apart an `Option`; a `match` on an integer takes literals, ranges and `_`"
)]
pub trait OptionValue: Copy {
    /// The value's type.
    type Inner: KernelValue;
    /// The flag and the value.
    fn parts(self) -> (Val<bool>, Self::Inner);
}

impl<V: KernelValue> OptionValue for Opt<V> {
    type Inner = V;
    fn parts(self) -> (Val<bool>, V) {
        (self.some, self.value)
    }
}

/// Values whose `Default` is zeros: scalars, and tuples of them
/// (`unwrap_or_default`).
#[diagnostic::on_unimplemented(
    message = "`unwrap_or_default` in a kernel takes an `Option` of a scalar or a tuple of them",
    label = "a struct's `Default` is not staged",
    note = "write `unwrap_or(P {{ … }})`"
)]
pub trait ZeroDefault {}
impl<T: Num> ZeroDefault for Val<T> {}
impl ZeroDefault for Val<bool> {}

macro_rules! zero_default_tuples {
    ($(($($t:ident),*);)*) => {$(
        impl<$($t: ZeroDefault),*> ZeroDefault for ($($t,)*) {}
    )*};
}
zero_default_tuples! {
    (A, B);
    (A, B, C);
    (A, B, C, D);
    (A, B, C, D, E);
    (A, B, C, D, E, F);
}

impl Cx<'_> {
    /// `Some(v)`
    pub fn some<V: KernelValue>(&mut self, v: V) -> Opt<V> {
        Opt { some: self.lit(true), value: v }
    }

    /// `None` (its value zeros, never read).
    pub fn none<V: KernelValue>(&mut self) -> Opt<V> {
        Opt { some: self.lit(false), value: V::never(self) }
    }

    /// `Some(v)` where `some`, else `None` (what `checked_*` gives).
    pub(super) fn some_if<V: KernelValue>(&mut self, some: Val<bool>, v: V) -> Opt<V> {
        Opt { some, value: v }
    }

    /// `o.is_some()`
    pub fn is_some<O: OptionValue>(&mut self, o: O) -> Val<bool> {
        o.parts().0
    }

    /// `o.is_none()`
    pub fn is_none<O: OptionValue>(&mut self, o: O) -> Val<bool> {
        let some = o.parts().0;
        self.not(some)
    }

    /// The value of an `Option` its flag was tested to hold (the macro's
    /// `if let Some(p)`, after the test).
    pub fn some_value<O: OptionValue>(&mut self, o: O) -> O::Inner {
        o.parts().1
    }

    /// `o.unwrap_or(d)`
    pub fn unwrap_or<O: OptionValue>(&mut self, o: O, d: O::Inner) -> O::Inner {
        let (some, value) = o.parts();
        self.if_val(some, |_| value, |_| d)
    }

    /// `o.unwrap_or_default()`: zeros where there is none (the default of
    /// a scalar and of a tuple of them; a struct's `Default` may differ,
    /// so its `Option` takes `unwrap_or`).
    pub fn unwrap_or_default<O: OptionValue>(&mut self, o: O) -> O::Inner
    where
        O::Inner: ZeroDefault,
    {
        let d = O::Inner::never(self);
        self.unwrap_or(o, d)
    }

    /// `o.unwrap()`: throws Rust's panic message (at `at`) where there is
    /// none.
    pub fn unwrap<O: OptionValue>(&mut self, o: O, at: Loc) -> O::Inner {
        self.expect(o, "called `Option::unwrap()` on a `None` value", at)
    }

    /// `o.expect(message)`: throws `message` (at `at`) where there is none.
    pub fn expect<O: OptionValue>(&mut self, o: O, message: &str, at: Loc) -> O::Inner {
        let (some, value) = o.parts();
        self.assert(some, message, at);
        value
    }
}
