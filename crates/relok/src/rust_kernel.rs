//! What the code `#[relok::kernel]`, `#[relok::device]` and
//! `#[relok::host]` generate calls (`relok::__kernel`, hidden: not an API
//! to write by hand; docs/kernels.md describes the macros).
//!
//! Shape:
//! - a kernel's Rust body becomes a Rust function over *staged* values:
//!   [`Val<T>`] (an SSA value of the IR whose Rust type is `T`),
//!   [`Var<T>`] (a `let mut`: a `local` of the IR), [`Slice<T>`] (a
//!   `&[T]` or `&mut [T]` parameter: pointer + `u32` length),
//!   [`SharedArray<T>`], [`HostArray<T>`]. Running it drives relok-ir's
//!   builder through a [`Cx`]: rustc type-checks the kernel (a `u32` added
//!   to an `f32` is a Rust type error at the user's span) and the IR is
//!   built with the same types;
//! - [`ModuleCx`] holds the module being built: the runtime imports, the
//!   bounds-check routine `@relok_rust_oob`, the device functions already
//!   defined (each once, by name) and the host statics the kernel names;
//! - [`KernelDef`] is one kernel's `static`: its IR is built and verified
//!   once per process ([`std::sync::OnceLock`]); each context loads it
//!   once (a map from the definition's address to the loaded kernel), so
//!   a warm launch neither rebuilds nor re-hashes the IR;
//! - [`HostStatic`] is a `#[relok::host] static`: the kernel reads it
//!   through the runtime global named by its path (`ref global`), whose
//!   bytes each context writes before loading a kernel that names it —
//!   the key holds the path, never the bytes;
//! - bounds checks call `@relok_rust_oob(message, len, index)`: the first
//!   failing thread records `(message word, len, index, block, thread)` in
//!   the runtime global `relok_rust_panic` and every failing thread throws
//!   the message (a `str` host value holding `{len}` and `{index}`); the
//!   stream's synchronisation fills the placeholders from that cell
//!   ([`rust_exception`]) and clears it.

use crate::context::Shared;
use crate::error::{Error, Result};
use crate::kernel::{Arg, Kernel};
use crate::program::Program;
use crate::stream::Stream;
use crate::{Buffer, Element, Grid};
use relok_ir::builder::{FunctionBuilder, ModuleBuilder};
use relok_ir::{AddrSpace, AtomicOp, Axis, BinaryOp, Builtin, CmpOp, FuncId, HostRef, Op, StmtKind, Type, UnaryOp, Value};
pub use relok_ir::Scalar;
use relok_runtime::DeviceMemory;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, OnceLock};

/// The runtime global where the first failing bounds check of a device
/// records its message word, length, index, block and thread.
pub const PANIC_CELL: &str = "relok_rust_panic";
/// Bytes of [`PANIC_CELL`]: flag u32, pad, message word (u64), len u32,
/// index u32, block x y z u32, thread x y z u32.
const PANIC_CELL_BYTES: u64 = 48;

// ---------------------------------------------------------------- types

/// A Rust scalar type a kernel computes with. `usize` is the IR's `u32`
/// (indices and lengths are 32-bit on the device).
pub trait DevScalar: Copy + 'static {
    /// The IR's scalar.
    const SCALAR: Scalar;
    /// Bits, zero-extended to 64 (the IR's literal convention).
    fn bits(self) -> u64;
}

/// Numbers (not `bool`): arithmetic, comparisons, casts.
pub trait Num: DevScalar {}
/// Integers: bit operations and shifts in a kernel; a generic kernel's
/// type parameter bounded by `relok::Int` ranges over `u32 i32 u64 i64`.
///
/// ```
/// fn integer<T: relok::Int>() {}
/// integer::<u64>();
/// ```
pub trait Int: Num {}
/// Types with `-x` (`i32 i64 f32 f64`); a bound of generic kernels.
///
/// ```
/// fn signed<T: relok::Signed>() {}
/// signed::<i32>();
/// ```
pub trait Signed: Num {}
/// Types with `!x` (integers and `bool`).
pub trait Bits: DevScalar {}
/// Floating point (`f32 f64`): `sqrt` in a kernel; a bound of generic
/// kernels.
///
/// ```
/// fn float<T: relok::Float>() {}
/// float::<f32>();
/// ```
pub trait Float: Num {
    /// The bits of 1.0.
    const ONE_BITS: u64;
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

dev_scalar! {
    bool => Bool, |x| u64::from(x), [Bits];
    i32 => I32, |x| u64::from(x as u32), [Num, Int, Signed, Bits];
    u32 => U32, |x| u64::from(x), [Num, Int, Bits];
    usize => U32, |x| u64::from(x as u32), [Num, Int, Bits];
    i64 => I64, |x| x as u64, [Num, Int, Signed, Bits];
    u64 => U64, |x| x, [Num, Int, Bits];
    f32 => F32, |x| u64::from(x.to_bits()), [Num, Signed];
    f64 => F64, |x| x.to_bits(), [Num, Signed];
}

impl Float for f32 {
    const ONE_BITS: u64 = 0x3f80_0000;
}

impl Float for f64 {
    const ONE_BITS: u64 = 0x3ff0_0000_0000_0000;
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
    v: Value,
    _t: PhantomData<T>,
}
impl<T> Clone for Val<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Val<T> {}
impl<T> Val<T> {
    fn new(v: Value) -> Val<T> {
        Val { v, _t: PhantomData }
    }
}

/// A `let mut` scalar: an IR `local`.
#[derive(Debug)]
pub struct Var<T> {
    var: relok_ir::Var,
    _t: PhantomData<T>,
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
    ptr: Value,
    len: Value,
    _t: PhantomData<T>,
}
impl<T> Clone for Slice<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Slice<T> {}

/// A block-shared array of a size known at compile time.
#[derive(Debug)]
pub struct SharedArray<T> {
    var: relok_ir::Var,
    len: u32,
    _t: PhantomData<T>,
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
    var: relok_ir::Var,
    len: u32,
    _t: PhantomData<T>,
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
    ptr: Value,
    len: u32,
    _t: PhantomData<T>,
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
pub trait Indexed<T: DevScalar>: Copy {
    /// A pointer to element 0 and the length.
    fn base(self, cx: &mut Cx<'_>) -> (Value, Val<usize>);
}

impl<T: DevScalar> Indexed<T> for Slice<T> {
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

impl<T: DevScalar> Param for Slice<T> {
    fn declare(cx: &mut Cx<'_>) -> Self {
        let ptr = cx.b.param(Type::ptr(AddrSpace::Global, Type::Scalar(T::SCALAR)));
        let len = cx.b.param(Scalar::U32);
        Slice { ptr, len, _t: PhantomData }
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

// --------------------------------------------------------------- module

/// A `#[relok::host] static` (see the module docs).
pub trait HostObject: Sync + std::fmt::Debug {
    /// The static's path (`crate::tables::LUT`): its identity.
    fn path(&self) -> &'static str;
    /// Its bytes now.
    fn bytes(&self) -> &'static [u8];
}

/// Plain old data a host static may hold (arrays of scalars).
pub trait HostData: 'static {
    /// The element scalar.
    type Elem: DevScalar;
    /// Elements.
    const LEN: u32;
    /// The bytes.
    fn bytes(&'static self) -> &'static [u8];
}

macro_rules! host_data {
    ($($t:ty),*) => {$(
        impl<const N: usize> HostData for [$t; N] {
            type Elem = $t;
            const LEN: u32 = N as u32;
            fn bytes(&'static self) -> &'static [u8] {
                bytemuck::cast_slice(self)
            }
        }
    )*};
}
host_data!(i32, u32, i64, u64, f32, f64);

/// The companion of `#[relok::host] static NAME: T`.
#[derive(Debug)]
pub struct HostStatic<T: 'static> {
    path: &'static str,
    value: &'static T,
}

impl<T: HostData + Sync + std::fmt::Debug> HostStatic<T> {
    /// The static at `path`.
    pub const fn new(path: &'static str, value: &'static T) -> HostStatic<T> {
        HostStatic { path, value }
    }
}

impl<T: HostData + Sync + std::fmt::Debug> HostObject for HostStatic<T> {
    fn path(&self) -> &'static str {
        self.path
    }
    fn bytes(&self) -> &'static [u8] {
        self.value.bytes()
    }
}

/// The runtime global of the host static at `path`: `relok_host` then the
/// path's segments, `::` written `__`.
pub fn global_name(path: &str) -> String {
    let mut name = String::from("relok_host");
    for seg in path.split("::") {
        name.push_str("__");
        name.extend(seg.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }));
    }
    name
}

/// The module under construction (see the module docs).
#[derive(Debug)]
pub struct ModuleCx {
    mb: ModuleBuilder,
    throw: FuncId,
    oob: FuncId,
    defined: HashMap<String, FuncId>,
    building: Vec<String>,
    globals: Vec<(&'static str, usize)>,
    statics: Vec<&'static dyn HostObject>,
    errors: Vec<String>,
}

impl ModuleCx {
    fn new() -> ModuleCx {
        let mut mb = ModuleBuilder::new();
        let throw = mb.import_fn("relok_throw", vec![Type::Scalar(Scalar::Word)], None);
        let mut errors = Vec::new();
        let oob = {
            let mut f = mb.device_fn("relok_rust_oob", None);
            oob_body(&mut f, throw);
            match f.finish() {
                Ok(func) => Some(func),
                Err(e) => {
                    errors.push(e.to_string());
                    None
                }
            }
        };
        let oob = oob.map(|f| mb.add(f)).unwrap_or(throw);
        ModuleCx { mb, throw, oob, defined: HashMap::new(), building: Vec::new(), globals: Vec::new(), statics: Vec::new(), errors }
    }

    /// The device function `name` if it is already defined.
    pub fn defined(&self, name: &str) -> Option<FuncId> {
        self.defined.get(name).copied()
    }

    /// Defines a device function from its staged body; `R` is its result.
    pub fn device<R: Ret>(&mut self, name: &str, body: impl FnOnce(&mut Cx<'_>)) -> FuncId {
        self.building.retain(|n| n != name);
        if let Some(id) = self.defined(name) {
            return id;
        }
        let staged = stage(self.mb.device_fn(name, R::ty()), self.throw, self.oob, body);
        let id = self.add(staged);
        self.defined.insert(name.to_owned(), id);
        id
    }

    /// Starts defining the device function `name` (before its callees):
    /// `Some` when it is already defined, or when it is being defined
    /// (recursion, recorded as an error).
    pub fn enter(&mut self, name: &str) -> Option<FuncId> {
        if let Some(id) = self.defined(name) {
            return Some(id);
        }
        if self.building.iter().any(|n| n == name) {
            self.errors.push(format!("device function {name} calls itself (recursion is not supported)"));
            return Some(self.throw);
        }
        self.building.push(name.to_owned());
        None
    }

    /// Defines the kernel `name` from its staged body.
    pub fn kernel(&mut self, name: &str, body: impl FnOnce(&mut Cx<'_>)) {
        let staged = stage(self.mb.kernel(name), self.throw, self.oob, body);
        self.add(staged);
    }

    fn add(&mut self, Staged { func, statics, globals, errors }: Staged) -> FuncId {
        self.errors.extend(errors);
        for g in globals {
            if !self.globals.contains(&g) {
                self.globals.push(g);
            }
        }
        for s in statics {
            if !self.statics.iter().any(|t| t.path() == s.path()) {
                self.statics.push(s);
            }
        }
        match func {
            Ok(func) => self.mb.add(func),
            Err(e) => {
                self.errors.push(e.to_string());
                self.throw
            }
        }
    }
}

/// A function built from a staged body, the host statics and runtime
/// globals it names, and the errors met.
struct Staged {
    func: std::result::Result<relok_ir::Function, relok_ir::builder::BuildError>,
    statics: Vec<&'static dyn HostObject>,
    globals: Vec<(&'static str, usize)>,
    errors: Vec<String>,
}

fn stage(b: FunctionBuilder<'_>, throw: FuncId, oob: FuncId, body: impl FnOnce(&mut Cx<'_>)) -> Staged {
    let mut cx = Cx { b, throw, oob, statics: Vec::new(), globals: Vec::new(), locals: 0, errors: Vec::new() };
    body(&mut cx);
    let Cx { b, statics, globals, errors, .. } = cx;
    Staged { func: b.finish(), statics, globals, errors }
}

/// `@relok_rust_oob(message: word, len: u32, index: u32)`.
fn oob_body(f: &mut FunctionBuilder<'_>, throw: FuncId) {
    let message = f.param(Scalar::Word);
    let len = f.param(Scalar::U32);
    let index = f.param(Scalar::U32);
    let cell = f.host_ref(HostRef::Global { name: PANIC_CELL.to_owned(), offset: 0 });
    let p32 = f.op_typed(Op::WordPtr(cell), Type::ptr(AddrSpace::Global, Type::Scalar(Scalar::U32)));
    let p64 = f.op_typed(Op::WordPtr(cell), Type::ptr(AddrSpace::Global, Type::Scalar(Scalar::U64)));
    let zero = f.u32(0);
    let one = f.u32(1);
    let old = f.atomic_cas(p32, Some(zero), zero, one);
    let first = f.eq(old, zero);
    f.if_(first, |f| {
        let w = f.bitcast(message, Scalar::U64);
        f.store(p64, Some(one), w);
        let at = |f: &mut FunctionBuilder<'_>, i: u32, v: Value| {
            let i = f.u32(i);
            f.store(p32, Some(i), v);
        };
        at(f, 4, len);
        at(f, 5, index);
        for (k, axis) in Axis::ALL.into_iter().enumerate() {
            let b = f.builtin(Builtin::BlockId(axis));
            at(f, 6 + k as u32, b);
            let t = f.builtin(Builtin::ThreadId(axis));
            at(f, 9 + k as u32, t);
        }
    });
    f.call_void(throw, vec![message]);
    f.ret(None);
}

// ------------------------------------------------------------- function

/// One function being built (see the module docs). Every method emits IR.
#[derive(Debug)]
pub struct Cx<'m> {
    b: FunctionBuilder<'m>,
    throw: FuncId,
    oob: FuncId,
    statics: Vec<&'static dyn HostObject>,
    globals: Vec<(&'static str, usize)>,
    locals: u32,
    errors: Vec<String>,
}

macro_rules! binary {
    ($($name:ident: $bound:ident => $op:ident;)*) => {$(
        #[doc = concat!("`", stringify!($op), "`")]
        pub fn $name<T: $bound>(&mut self, a: Val<T>, b: Val<T>) -> Val<T> {
            Val::new(self.b.op(Op::Binary(BinaryOp::$op, a.v, b.v)))
        }
    )*};
}

macro_rules! compare {
    ($($name:ident => $op:ident;)*) => {$(
        #[doc = concat!("`", stringify!($op), "`")]
        pub fn $name<T: DevScalar>(&mut self, a: Val<T>, b: Val<T>) -> Val<bool> {
            Val::new(self.b.op(Op::Compare(CmpOp::$op, a.v, b.v)))
        }
    )*};
}

macro_rules! atomics {
    ($($name:ident => $op:ident;)*) => {$(
        #[doc = concat!("`atomic.", stringify!($op), "` on element `i` (bounds-checked): the old value")]
        pub fn $name<T: Int, S: Indexed<T>>(&mut self, s: S, i: Val<usize>, v: Val<T>, loc: Loc) -> Val<T> {
            let p = self.checked(s, i, loc);
            Val::new(self.b.atomic(AtomicOp::$op, p, Some(i.v), v.v))
        }
    )*};
}

impl<'m> Cx<'m> {
    /// Declares the next parameter.
    pub fn param<P: Param>(&mut self) -> P {
        P::declare(self)
    }

    /// A literal.
    pub fn lit<T: DevScalar>(&mut self, x: T) -> Val<T> {
        Val::new(self.b.const_bits(T::SCALAR, x.bits()))
    }

    binary! {
        add: Num => Add;
        sub: Num => Sub;
        mul: Num => Mul;
        div: Num => Div;
        rem: Num => Rem;
        min: Num => Min;
        max: Num => Max;
        bitand: Bits => And;
        bitor: Bits => Or;
        bitxor: Bits => Xor;
    }

    compare! {
        eq => Eq;
        ne => Ne;
        lt => Lt;
        le => Le;
        gt => Gt;
        ge => Ge;
    }

    /// `sym!("name")`: the symbol's word (`ref :name`).
    pub fn symbol(&mut self, name: &str) -> Val<Word> {
        Val::new(self.b.host_ref(HostRef::Symbol(name.to_owned())))
    }

    /// `a << b` (the amount converted to `a`'s type; taken modulo the width).
    pub fn shl<T: Int, U: Int>(&mut self, a: Val<T>, b: Val<U>) -> Val<T> {
        let b = self.cast::<U, T>(b);
        Val::new(self.b.shl(a.v, b.v))
    }

    /// `a >> b` (arithmetic for signed types).
    pub fn shr<T: Int, U: Int>(&mut self, a: Val<T>, b: Val<U>) -> Val<T> {
        let b = self.cast::<U, T>(b);
        Val::new(self.b.shr(a.v, b.v))
    }

    /// `-a`
    pub fn neg<T: Signed>(&mut self, a: Val<T>) -> Val<T> {
        Val::new(self.b.unary(UnaryOp::Neg, a.v))
    }

    /// `!a`
    pub fn not<T: Bits>(&mut self, a: Val<T>) -> Val<T> {
        Val::new(self.b.unary(UnaryOp::Not, a.v))
    }

    /// `x.abs()`
    pub fn abs<T: Signed>(&mut self, a: Val<T>) -> Val<T> {
        Val::new(self.b.unary(UnaryOp::Abs, a.v))
    }

    /// `x.sqrt()`
    pub fn sqrt<T: Float>(&mut self, a: Val<T>) -> Val<T> {
        Val::new(self.b.unary(UnaryOp::Sqrt, a.v))
    }

    /// `x.recip()`: `1 / x`.
    pub fn recip<T: Float>(&mut self, a: Val<T>) -> Val<T> {
        let one = self.lit_bits::<T>(T::ONE_BITS);
        self.div(one, a)
    }

    /// `x.is_nan()`: `x != x`.
    pub fn is_nan<T: Float>(&mut self, a: Val<T>) -> Val<bool> {
        self.ne(a, a)
    }

    /// `a as U`
    pub fn cast<T: DevScalar, U: DevScalar>(&mut self, a: Val<T>) -> Val<U> {
        if T::SCALAR == U::SCALAR {
            return Val::new(a.v);
        }
        Val::new(self.b.convert(a.v, U::SCALAR))
    }

    /// `let mut x = init`
    pub fn var<T: DevScalar>(&mut self, init: Val<T>) -> Var<T> {
        let var = self.new_local::<T>();
        self.b.set(var.var, init.v);
        var
    }

    fn new_local<T: DevScalar>(&mut self) -> Var<T> {
        self.locals += 1;
        let var = self.b.local(format!("x{}", self.locals), T::SCALAR);
        Var { var, _t: PhantomData }
    }

    /// Reads a `let mut`.
    pub fn get<T: DevScalar>(&mut self, x: Var<T>) -> Val<T> {
        Val::new(self.b.get(x.var))
    }

    /// Assigns a `let mut`.
    pub fn set<T: DevScalar>(&mut self, x: Var<T>, v: Val<T>) {
        self.b.set(x.var, v.v);
    }

    fn block(&mut self, f: impl FnOnce(&mut Self)) -> Vec<relok_ir::Stmt> {
        self.b.open_block();
        f(self);
        self.b.close_block()
    }

    /// `if c { then } else { otherwise }` as a statement.
    pub fn if_(&mut self, c: Val<bool>, then: impl FnOnce(&mut Self), otherwise: impl FnOnce(&mut Self)) {
        let then_body = self.block(then);
        let else_body = self.block(otherwise);
        self.b.stmt(StmtKind::If { cond: c.v, then_body, else_body });
    }

    /// `if c { a } else { b }` as an expression.
    pub fn if_val<T: DevScalar>(
        &mut self,
        c: Val<bool>,
        then: impl FnOnce(&mut Self) -> Val<T>,
        otherwise: impl FnOnce(&mut Self) -> Val<T>,
    ) -> Val<T> {
        let r = self.new_local::<T>();
        self.if_(
            c,
            |cx| {
                let v = then(cx);
                cx.set(r, v);
            },
            |cx| {
                let v = otherwise(cx);
                cx.set(r, v);
            },
        );
        self.get(r)
    }

    /// A value for a branch that never ends normally (after `return`,
    /// `break`, `continue`, a throw): never read.
    pub fn never<T: DevScalar>(&mut self) -> Val<T> {
        Val::new(self.b.const_bits(T::SCALAR, 0))
    }

    /// `a && b` (b evaluated only when a holds).
    pub fn and(&mut self, a: Val<bool>, b: impl FnOnce(&mut Self) -> Val<bool>) -> Val<bool> {
        self.if_val(a, b, |cx| cx.lit(false))
    }

    /// `a || b` (b evaluated only when a does not hold).
    pub fn or(&mut self, a: Val<bool>, b: impl FnOnce(&mut Self) -> Val<bool>) -> Val<bool> {
        self.if_val(a, |cx| cx.lit(true), b)
    }

    /// `loop { body }`
    pub fn loop_(&mut self, body: impl FnOnce(&mut Self)) {
        let body = self.block(body);
        self.b.stmt(StmtKind::Loop(body));
    }

    /// `while c { body }`
    pub fn while_(&mut self, cond: impl FnOnce(&mut Self) -> Val<bool>, body: impl FnOnce(&mut Self)) {
        self.loop_(|cx| {
            let c = cond(cx);
            cx.if_(c, |_| {}, |cx| cx.break_());
            body(cx);
        });
    }

    /// `for i in (start..end).step_by(step)`: the counter moves on before
    /// the body runs, so `continue` cannot skip it; a step past the type's
    /// end stops the loop instead of wrapping.
    pub fn for_range<T: Int>(&mut self, start: Val<T>, end: Val<T>, step: Option<Val<T>>, body: impl FnOnce(&mut Self, Val<T>)) {
        let step = match step {
            Some(s) => s,
            None => self.lit_bits::<T>(1),
        };
        let counter = self.var(start);
        self.loop_(|cx| {
            let i = cx.get(counter);
            let done = cx.ge(i, end);
            cx.if_(done, |cx| cx.break_(), |_| {});
            let next = cx.add(i, step);
            let wrapped = cx.lt(next, i);
            let next = Val::new(cx.b.select(wrapped.v, end.v, next.v));
            cx.set(counter, next);
            body(cx, i);
        });
    }

    fn lit_bits<T: DevScalar>(&mut self, bits: u64) -> Val<T> {
        Val::new(self.b.const_bits(T::SCALAR, bits))
    }

    /// `break`
    pub fn break_(&mut self) {
        self.b.break_();
    }

    /// `continue`
    pub fn continue_(&mut self) {
        self.b.continue_();
    }

    /// `return` (kernels, device functions without a result).
    pub fn ret(&mut self) {
        self.b.ret(None);
    }

    /// `return v` (device functions).
    pub fn ret_val<T: DevScalar>(&mut self, v: Val<T>) {
        self.b.ret(Some(v.v));
    }

    /// A thread/block index or dimension: `usize`.
    pub fn builtin(&mut self, which: u8, axis: u8) -> Val<usize> {
        let axis = match axis {
            0 => Axis::X,
            1 => Axis::Y,
            _ => Axis::Z,
        };
        let b = match which {
            0 => Builtin::ThreadId(axis),
            1 => Builtin::BlockId(axis),
            2 => Builtin::BlockDim(axis),
            _ => Builtin::GridDim(axis),
        };
        Val::new(self.b.builtin(b))
    }

    /// `block_id * block_dim + thread_id` along an axis.
    pub fn global_id(&mut self, axis: u8) -> Val<usize> {
        let b = self.builtin(1, axis);
        let d = self.builtin(2, axis);
        let t = self.builtin(0, axis);
        let bd = self.mul(b, d);
        self.add(bd, t)
    }

    /// `sync_threads()`: a block barrier.
    pub fn sync_threads(&mut self) {
        self.b.barrier();
    }

    /// A block-shared array of `N` elements.
    pub fn shared<T: DevScalar, const N: usize>(&mut self) -> SharedArray<T> {
        self.locals += 1;
        let var = self.b.shared(format!("s{}", self.locals), Type::array(Type::Scalar(T::SCALAR), N as u32));
        SharedArray { var, len: N as u32, _t: PhantomData }
    }

    /// `[init; N]`: a per-thread array of `N` copies of `init`.
    pub fn local_array<T: DevScalar, const N: usize>(&mut self, init: Val<T>) -> LocalArray<T> {
        let a = self.new_local_array::<T>(N as u32);
        let (p, _) = a.base(self);
        let zero = self.lit(0usize);
        let end = self.lit(N);
        self.for_range(zero, end, None, |cx, i| cx.b.store(p, Some(i.v), init.v));
        a
    }

    /// `[a, b, c]`: a per-thread array of these values.
    pub fn local_array_of<T: DevScalar>(&mut self, values: &[Val<T>]) -> LocalArray<T> {
        let a = self.new_local_array::<T>(values.len() as u32);
        let (p, _) = a.base(self);
        for (k, v) in values.iter().enumerate() {
            let i = self.lit(k);
            self.b.store(p, Some(i.v), v.v);
        }
        a
    }

    fn new_local_array<T: DevScalar>(&mut self, len: u32) -> LocalArray<T> {
        self.locals += 1;
        let var = self.b.local(format!("a{}", self.locals), Type::array(Type::Scalar(T::SCALAR), len));
        LocalArray { var, len, _t: PhantomData }
    }

    /// A host static's array, through its runtime global.
    pub fn host<T: HostData + Sync + std::fmt::Debug>(&mut self, s: &'static HostStatic<T>) -> HostArray<T::Elem> {
        if !self.statics.iter().any(|t| t.path() == s.path) {
            self.statics.push(s);
        }
        let w = self.b.host_ref(HostRef::Global { name: global_name(s.path), offset: 0 });
        let ptr = self.b.op_typed(Op::WordPtr(w), Type::ptr(AddrSpace::Global, Type::Scalar(T::Elem::SCALAR)));
        HostArray { ptr, len: T::LEN, _t: PhantomData }
    }

    /// `x.len()`
    pub fn len<T: DevScalar, S: Indexed<T>>(&mut self, s: S) -> Val<usize> {
        s.base(self).1
    }

    /// The base pointer after a bounds check of `i` (message with Rust's
    /// text and `loc`).
    fn checked<T: DevScalar, S: Indexed<T>>(&mut self, s: S, i: Val<usize>, loc: Loc) -> Value {
        let (p, len) = s.base(self);
        let out = self.ge(i, len);
        let oob = self.oob;
        self.if_(
            out,
            |cx| {
                let text = format!(
                    "{}:{}:{}: index out of bounds: the len is {{len}} but the index is {{index}}",
                    loc.file, loc.line, loc.col
                );
                let m = cx.b.host_ref(HostRef::Str(text));
                cx.b.call_void(oob, vec![m, len.v, i.v]);
            },
            |_| {},
        );
        p
    }

    /// `s[i]`, bounds-checked.
    pub fn load<T: DevScalar, S: Indexed<T>>(&mut self, s: S, i: Val<usize>, loc: Loc) -> Val<T> {
        let p = self.checked(s, i, loc);
        Val::new(self.b.load(p, Some(i.v)))
    }

    /// `s[i] = v`, bounds-checked.
    pub fn store<T: DevScalar, S: Indexed<T>>(&mut self, s: S, i: Val<usize>, v: Val<T>, loc: Loc) {
        let p = self.checked(s, i, loc);
        self.b.store(p, Some(i.v), v.v);
    }

    /// `*s.get_unchecked(i)`
    pub fn load_unchecked<T: DevScalar, S: Indexed<T>>(&mut self, s: S, i: Val<usize>) -> Val<T> {
        let (p, _) = s.base(self);
        Val::new(self.b.load(p, Some(i.v)))
    }

    /// `*s.get_unchecked_mut(i) = v`
    pub fn store_unchecked<T: DevScalar, S: Indexed<T>>(&mut self, s: S, i: Val<usize>, v: Val<T>) {
        let (p, _) = s.base(self);
        self.b.store(p, Some(i.v), v.v);
    }

    atomics! {
        atomic_add => Add;
        atomic_min => Min;
        atomic_max => Max;
        atomic_exchange => Xchg;
    }

    /// `atomic.op` on a runtime global ([`crate::Global`]): the old value.
    pub fn global_atomic<T: Int>(&mut self, g: &'static crate::Global<T>, op: u8, v: Val<T>) -> Val<T> {
        let p = self.global_ptr(g);
        let op = [AtomicOp::Add, AtomicOp::Min, AtomicOp::Max, AtomicOp::Xchg][usize::from(op.min(3))];
        Val::new(self.b.atomic(op, p, None, v.v))
    }

    /// `atomic.cas` on a runtime global: the old value.
    pub fn global_compare_exchange<T: Int>(&mut self, g: &'static crate::Global<T>, expected: Val<T>, new: Val<T>) -> Val<T> {
        let p = self.global_ptr(g);
        Val::new(self.b.atomic_cas(p, None, expected.v, new.v))
    }

    fn global_ptr<T: Int>(&mut self, g: &'static crate::Global<T>) -> Value {
        if !self.globals.iter().any(|(n, _)| *n == g.name()) {
            self.globals.push((g.name(), size_of::<T>()));
        }
        let w = self.b.host_ref(HostRef::Global { name: g.name().to_owned(), offset: 0 });
        self.b.op_typed(Op::WordPtr(w), Type::ptr(AddrSpace::Global, Type::Scalar(T::SCALAR)))
    }

    /// `atomic.cas` on element `i` (bounds-checked): the old value.
    pub fn atomic_compare_exchange<T: Int, S: Indexed<T>>(
        &mut self,
        s: S,
        i: Val<usize>,
        expected: Val<T>,
        new: Val<T>,
        loc: Loc,
    ) -> Val<T> {
        let p = self.checked(s, i, loc);
        Val::new(self.b.atomic_cas(p, Some(i.v), expected.v, new.v))
    }

    /// Throws `message` (`panic!`, `assert!`, `throw!`) at `loc`: the
    /// thread ends.
    pub fn throw(&mut self, message: &str, loc: Loc) {
        let text = format!("{}:{}:{}: {message}", loc.file, loc.line, loc.col);
        let m = self.b.host_ref(HostRef::Str(text));
        self.b.call_void(self.throw, vec![m]);
    }

    /// `assert!(c, message)`
    pub fn assert(&mut self, c: Val<bool>, message: &str, loc: Loc) {
        self.if_(c, |_| {}, |cx| cx.throw(message, loc));
    }

    /// A call of a device function.
    pub fn call<R: Ret>(&mut self, f: FuncId, args: Vec<Value>) -> R {
        R::call(self, f, args)
    }

    /// Records an error the macro could only find while building.
    pub fn error(&mut self, message: String) {
        self.errors.push(message);
    }
}

/// Pushes one parameter's IR arguments.
pub fn push<P: Param>(out: &mut Vec<Value>, p: P) {
    p.values(out);
}

// ---------------------------------------------------------------- kernel

/// The element types a generic kernel's type parameter ranges over
/// (`u32 i32 u64 i64 f32 f64`): `relok::Number`.
///
/// ```
/// #[relok::kernel]
/// fn double<T: relok::Number>(x: &mut [T]) {
///     let i = relok::global_id_x();
///     if i < x.len() {
///         x[i] = x[i] + x[i];
///     }
/// }
///
/// fn main() -> Result<(), relok::Error> {
///     let ctx = relok::Context::builder().device("cpu").no_cache().build()?;
///     let mut x = ctx.upload(&[1.5f64, 2.0])?;
///     let s = ctx.stream();
///     double::launch(&s, relok::Grid::cover(2, 64), &mut x)?;   // the f64 instance
///     s.synchronize()?;
///     assert_eq!(x.download()?, [3.0, 4.0]);
///     Ok(())
/// }
/// ```
pub trait Elem: DevScalar + Num + Element + for<'a> LaunchArg<'a> {}
impl<T: DevScalar + Num + Element + for<'a> LaunchArg<'a>> Elem for T {}

/// The IR name of a generic kernel's instance: the kernel's name and each
/// type's and constant's, `_`-joined, in `[A-Za-z0-9_]`.
pub fn instance_name(kernel: &str, parts: &[String]) -> String {
    let mut name = kernel.to_owned();
    for p in parts {
        name.push_str("__");
        name.extend(p.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }));
    }
    name
}

/// A generic kernel's instances: one [`KernelDef`] per instantiation (by
/// the `TypeId` of a key type the macro makes from the parameters), made
/// on first use and kept for the process.
#[derive(Debug)]
pub struct Instances {
    kernel: &'static str,
    defs: Mutex<Vec<(std::any::TypeId, &'static KernelDef)>>,
}

impl Instances {
    /// No instances yet.
    pub const fn new(kernel: &'static str) -> Instances {
        Instances { kernel, defs: Mutex::new(Vec::new()) }
    }

    /// The instance `key`, built by `build`.
    pub fn get(&self, key: std::any::TypeId, build: fn(&mut ModuleCx)) -> &'static KernelDef {
        let mut defs = lock(&self.defs);
        if let Some((_, d)) = defs.iter().find(|(k, _)| *k == key) {
            return d;
        }
        // One leak per instance a program launches: a definition lives
        // as long as the process, as a static one does.
        let def: &'static KernelDef = Box::leak(Box::new(KernelDef::instance(self.kernel, build)));
        defs.push((key, def));
        def
    }
}

/// What building a kernel gave: its verified program and the host
/// statics it reads.
#[derive(Debug)]
struct Built {
    program: Program,
    /// The kernel's IR name (an instance's carries its types).
    kernel: String,
    /// The runtime globals it names, with their sizes.
    globals: Vec<(&'static str, usize)>,
    statics: Vec<&'static dyn HostObject>,
}

/// One `#[relok::kernel]` (see the module docs).
#[derive(Debug)]
pub struct KernelDef {
    name: &'static str,
    build: fn(&mut ModuleCx),
    built: OnceLock<std::result::Result<Built, String>>,
}

impl KernelDef {
    /// The kernel `name` built by `build`.
    pub const fn new(name: &'static str, build: fn(&mut ModuleCx)) -> KernelDef {
        KernelDef { name, build, built: OnceLock::new() }
    }

    /// An instance of a generic kernel: its IR name is the one the build
    /// gives its kernel (the module's only one).
    fn instance(kernel: &'static str, build: fn(&mut ModuleCx)) -> KernelDef {
        KernelDef { name: kernel, build, built: OnceLock::new() }
    }

    fn built(&self) -> Result<&Built> {
        let built = self.built.get_or_init(|| {
            let mut m = ModuleCx::new();
            (self.build)(&mut m);
            if !m.errors.is_empty() {
                return Err(m.errors.join("; "));
            }
            let (statics, globals) = (m.statics, m.globals);
            let module = m.mb.build();
            let kernel = module.kernels().next().map(|(_, f)| f.name.clone()).unwrap_or_default();
            Program::from_module(module).map(|program| Built { program, kernel, globals, statics }).map_err(|e| e.to_string())
        });
        built.as_ref().map_err(|reason| Error::KernelBuild { kernel: self.name.to_owned(), reason: reason.clone() })
    }

    /// The kernel's verified IR (built on first use).
    pub fn program(&self) -> Result<&Program> {
        self.built().map(|b| &b.program)
    }

    /// The kernel's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The kernel loaded on the stream's context (once per context; a
    /// warm call is a map lookup and a reference count).
    pub fn kernel(&'static self, stream: &Stream) -> Result<Arc<Kernel>> {
        let ctx = &stream.inner.ctx;
        let key = std::ptr::from_ref(self) as usize;
        if let Some(k) = lock(&ctx.rust_kernels).get(&key) {
            return Ok(Arc::clone(k));
        }
        let built = self.built()?;
        for s in &built.statics {
            deliver(ctx, *s)?;
        }
        for (name, bytes) in &built.globals {
            declare_global(ctx, name, *bytes)?;
        }
        let k = Arc::new(Kernel::load(ctx, &built.program, &built.kernel)?);
        lock(&ctx.rust_kernels).insert(key, Arc::clone(&k));
        Ok(k)
    }

    /// Loads (once per context) and launches with `args` in the IR's order.
    pub fn launch(&'static self, stream: &Stream, grid: Grid, args: Vec<Arg<'_>>) -> Result<()> {
        self.kernel(stream)?.launch(stream, grid, args)
    }
}

/// Writes a host static's bytes into its runtime global on `ctx`'s device
/// (each time a context loads a kernel that reads it: the bytes of this
/// process, whatever a stored artifact was compiled with).
fn deliver(ctx: &Arc<Shared>, s: &dyn HostObject) -> Result<()> {
    let name = global_name(s.path());
    let bytes = s.bytes();
    declare_global(ctx, &name, bytes.len())?;
    let cell = ctx.session.global_cell(&ctx.device, &name).map_err(relok_runtime::ProgramError::from).map_err(Error::Compile)?;
    if !bytes.is_empty() {
        ctx.device.write_bytes(cell, bytes)?;
    }
    Ok(())
}

/// Declares the runtime global `name` of `bytes` bytes (at least 8) in
/// `ctx`'s session; declared already (by a kernel that named it, with the
/// runtime's default size, or by the program) is fine.
pub(crate) fn declare_global(ctx: &Shared, name: &str, bytes: usize) -> Result<()> {
    match ctx.session.declare_global(name, (bytes as u64).max(8)) {
        Ok(()) | Err(relok_runtime::SessionError::GlobalSizeConflict { .. }) => Ok(()),
        Err(e) => Err(Error::Compile(e.into())),
    }
}

/// One launch argument of a generated `launch`: scalars as themselves,
/// buffers as the buffer and its `u32` length.
pub trait LaunchArg<'a> {
    /// Appends the IR arguments.
    fn push(self, out: &mut Vec<Arg<'a>>) -> Result<()>;
}

macro_rules! scalar_launch_arg {
    ($($t:ty),*) => {$(
        impl<'a> LaunchArg<'a> for $t {
            fn push(self, out: &mut Vec<Arg<'a>>) -> Result<()> {
                out.push(self.into());
                Ok(())
            }
        }
    )*};
}
scalar_launch_arg!(bool, i32, u32, i64, u64, f32, f64);

impl<'a> LaunchArg<'a> for usize {
    fn push(self, out: &mut Vec<Arg<'a>>) -> Result<()> {
        let v = u32::try_from(self).map_err(|_| Error::TooLarge { len: self, elem_bytes: 4 })?;
        out.push(v.into());
        Ok(())
    }
}

impl<'a> LaunchArg<'a> for &'a crate::Symbol {
    fn push(self, out: &mut Vec<Arg<'a>>) -> Result<()> {
        out.push(self.into());
        Ok(())
    }
}

fn buffer_len<T: Element>(b: &Buffer<T>) -> Result<u32> {
    u32::try_from(b.len()).map_err(|_| Error::TooLarge { len: b.len(), elem_bytes: size_of::<T>() })
}

impl<'a, T: Element> LaunchArg<'a> for &'a Buffer<T> {
    fn push(self, out: &mut Vec<Arg<'a>>) -> Result<()> {
        let len = buffer_len(self)?;
        out.push(self.into());
        out.push(len.into());
        Ok(())
    }
}

impl<'a, T: Element> LaunchArg<'a> for &'a mut Buffer<T> {
    fn push(self, out: &mut Vec<Arg<'a>>) -> Result<()> {
        let len = buffer_len(self)?;
        out.push(self.into());
        out.push(len.into());
        Ok(())
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Fills a Rust kernel's bounds-check message from [`PANIC_CELL`] (the
/// first failing check's length, index, block and thread) and clears the
/// cell; other errors pass through.
pub(crate) fn rust_exception(ctx: &Shared, e: Error) -> Error {
    let Error::Exception { kernel, message, block, thread } = e else { return e };
    let Ok(cell) = ctx.session.global_cell(&ctx.device, PANIC_CELL) else {
        return Error::Exception { kernel, message, block, thread };
    };
    let Ok(bytes) = ctx.device.read_bytes(cell, PANIC_CELL_BYTES) else {
        return Error::Exception { kernel, message, block, thread };
    };
    let _ = ctx.device.write_bytes(cell, &[0; PANIC_CELL_BYTES as usize]);
    let u32_at = |i: usize| u32::from_le_bytes([bytes[4 * i], bytes[4 * i + 1], bytes[4 * i + 2], bytes[4 * i + 3]]);
    if u32_at(0) == 0 || !message.contains("{len}") {
        return Error::Exception { kernel, message, block, thread };
    }
    let word = u64::from(u32_at(2)) | (u64::from(u32_at(3)) << 32);
    let text = match ctx.session.value_at(&ctx.device, word) {
        Some((_, b)) => String::from_utf8_lossy(&b).into_owned(),
        None => message,
    };
    let message = text.replace("{len}", &u32_at(4).to_string()).replace("{index}", &u32_at(5).to_string());
    Error::Exception { kernel, message, block: [u32_at(6), u32_at(7), u32_at(8)], thread: [u32_at(9), u32_at(10), u32_at(11)] }
}
