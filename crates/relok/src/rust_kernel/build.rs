//! Building the IR: [`ModuleCx`] (the module: runtime imports, device
//! functions defined once, the host statics
//! and runtime globals named) and [`Cx`] (one function: every method emits
//! IR through relok-ir's builder).

use super::host::{HostData, HostStatic};
use super::staged::*;
use super::structs::{KernelValue, KernelVar, Stored};
use crate::cells::{HostObject, device_name, global_name, same_static};
use relok_ir::builder::{FunctionBuilder, ModuleBuilder};
use relok_ir::{
    AddrSpace, AtomicOp, Axis, BinaryOp, Builtin, CmpOp, FuncId, HostRef, Op, Scalar, StmtKind, Type, UnaryOp, Value,
};
use std::collections::HashMap;
use std::marker::PhantomData;
/// The module under construction (see the module docs).
#[derive(Debug)]
pub struct ModuleCx {
    pub(super) mb: ModuleBuilder,
    throw: FuncId,
    throw_with: FuncId,
    /// The device functions defined, by Rust path.
    defined: HashMap<String, FuncId>,
    /// The device functions being defined (their callees first), by Rust
    /// path, outermost first: a path met again is recursion.
    building: Vec<String>,
    pub(super) globals: Vec<(&'static str, usize)>,
    pub(super) statics: Vec<&'static dyn HostObject>,
    pub(super) errors: Vec<String>,
}

impl ModuleCx {
    pub(super) fn new() -> ModuleCx {
        let mut mb = ModuleBuilder::new();
        let throw = mb.import_fn("relok_throw", vec![Type::Scalar(Scalar::Word)], None);
        let word_and_two = [Scalar::Word, Scalar::U64, Scalar::U64].map(Type::Scalar).to_vec();
        let throw_with = mb.import_fn("relok_throw_with", word_and_two, None);
        ModuleCx {
            mb,
            throw,
            throw_with,
            defined: HashMap::new(),
            building: Vec::new(),
            globals: Vec::new(),
            statics: Vec::new(),
            errors: Vec::new(),
        }
    }

    /// The device function at `path` if it is already defined.
    pub fn defined(&self, path: &str) -> Option<FuncId> {
        self.defined.get(path).copied()
    }

    /// Defines the device function at `path` (`module_path!()::name`;
    /// its IR name is [`device_name`]'s, so one name in two modules is two
    /// functions) from its staged body; `R` is its result. After an error
    /// (recursion among its callees) the body is not staged: a generic
    /// callee staged into itself would never end.
    pub fn device<R: Ret>(&mut self, path: &str, body: impl Fn(&mut Cx<'_>)) -> FuncId {
        if let Some(id) = self.defined(path) {
            self.building.retain(|n| n != path);
            return id;
        }
        if !self.errors.is_empty() {
            self.building.retain(|n| n != path);
            return self.throw;
        }
        let staged = self.stage_defining(|m| {
            stage(m.mb.device_fn(device_name(path), R::ty()), m.throw, m.throw_with, m.defined.clone(), &body)
        });
        self.building.retain(|n| n != path);
        let Some(staged) = staged else { return self.throw };
        let id = self.add(staged);
        self.defined.insert(path.to_owned(), id);
        id
    }

    /// Registers the generic device function at `path`, whose body is
    /// staged into each caller (inlined): its calls need no IR function.
    pub fn inline(&mut self, path: &str) -> FuncId {
        self.building.retain(|n| n != path);
        self.defined.insert(path.to_owned(), self.throw);
        self.throw
    }

    /// Starts defining the device function at `path` (before its
    /// callees): `Some` when it is already defined, or when it is being
    /// defined — recursion, recorded as an error naming the cycle
    /// (`recursion is not supported: a::f → b::g → a::f`).
    pub fn enter(&mut self, path: &str) -> Option<FuncId> {
        if let Some(id) = self.defined(path) {
            return Some(id);
        }
        if let Some(at) = self.building.iter().position(|n| n == path) {
            let mut cycle = self.building[at..].to_vec();
            cycle.push(path.to_owned());
            self.errors.push(format!(
                "recursion is not supported: {} (device function calls are inlined: write a loop)",
                cycle.join(" → ")
            ));
            return Some(self.throw);
        }
        self.building.push(path.to_owned());
        None
    }

    /// Defines the kernel `name` from its staged body (not staged after an
    /// error among its callees, as [`ModuleCx::device`]), launched with
    /// blocks of shape `block` only where it has one
    /// (`#[relok::kernel(block = (16, 16))]`).
    pub fn kernel(&mut self, name: &str, block: Option<[u32; 3]>, body: impl Fn(&mut Cx<'_>)) {
        if !self.errors.is_empty() {
            return;
        }
        let staged = self.stage_defining(|m| {
            let mut k = m.mb.kernel(name);
            if let Some(b) = block {
                k.block_shape(b);
            }
            stage(k, m.throw, m.throw_with, m.defined.clone(), &body)
        });
        if let Some(staged) = staged {
            self.add(staged);
        }
    }

    /// Stages a function with `stage_once`; when it called device
    /// functions not defined yet (a struct's methods, which a kernel's
    /// macro cannot name to define first: [`Cx::func_or_define`]),
    /// defines them and stages it again. `None` after an error in those.
    fn stage_defining(&mut self, stage_once: impl Fn(&mut Self) -> Staged) -> Option<Staged> {
        loop {
            let staged = stage_once(self);
            if staged.missing.is_empty() {
                return Some(staged);
            }
            for (_, define) in &staged.missing {
                define(self);
            }
            if !self.errors.is_empty() {
                return None;
            }
            // Each round defines at least one more function (a failed
            // definition is an error, above), so this ends.
            if staged.missing.iter().any(|(p, _)| self.defined(p).is_none()) {
                self.errors.push(format!(
                    "device functions {} could not be defined",
                    staged.missing.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>().join(", ")
                ));
                return None;
            }
        }
    }

    fn add(&mut self, Staged { func, statics, globals, errors, .. }: Staged) -> FuncId {
        self.errors.extend(errors);
        for g in globals {
            if !self.globals.contains(&g) {
                self.globals.push(g);
            }
        }
        for s in statics {
            match self.statics.iter().find(|t| t.path() == s.path()) {
                None => self.statics.push(s),
                Some(t) if same_static(*t, s) => {}
                Some(t) => self.errors.push(conflict(*t, s)),
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
    func: Result<relok_ir::Function, relok_ir::builder::BuildError>,
    statics: Vec<&'static dyn HostObject>,
    globals: Vec<(&'static str, usize)>,
    errors: Vec<String>,
    /// Device functions called before they were defined, with their
    /// definers: the function is staged again once they are.
    missing: Vec<(String, Definer)>,
}

/// A device function's definer (its staged twin's `__relok_define`).
pub type Definer = fn(&mut ModuleCx) -> FuncId;

fn stage(
    b: FunctionBuilder<'_>,
    throw: FuncId,
    throw_with: FuncId,
    funcs: HashMap<String, FuncId>,
    body: impl FnOnce(&mut Cx<'_>),
) -> Staged {
    let mut cx = Cx {
        b,
        throw,
        throw_with,
        funcs,
        statics: Vec::new(),
        globals: Vec::new(),
        locals: 0,
        errors: Vec::new(),
        missing: Vec::new(),
        inlining: Vec::new(),
    };
    body(&mut cx);
    let Cx { b, statics, globals, errors, missing, .. } = cx;
    Staged { func: b.finish(), statics, globals, errors, missing }
}

/// Two different host statics of one identity in one module.
fn conflict(a: &dyn HostObject, b: &dyn HostObject) -> String {
    crate::Error::HostStaticConflict {
        identity: a.path().to_owned(),
        first: a.location().to_owned(),
        second: b.location().to_owned(),
    }
    .to_string()
}

/// One function being built (see the module docs). Every method emits IR.
#[derive(Debug)]
pub struct Cx<'m> {
    pub(super) b: FunctionBuilder<'m>,
    throw: FuncId,
    pub(super) throw_with: FuncId,
    /// The device functions defined before this one, by Rust path.
    funcs: HashMap<String, FuncId>,
    statics: Vec<&'static dyn HostObject>,
    globals: Vec<(&'static str, usize)>,
    locals: u32,
    errors: Vec<String>,
    /// Device functions called before they were defined ([`Cx::func_or_define`]).
    missing: Vec<(String, Definer)>,
    /// The device functions being staged into this one (generic ones,
    /// those returning structs or tuples), outermost first.
    inlining: Vec<String>,
}

/// `wrap`: whether a small integer's result may leave its range (and is
/// wrapped back, [`Cx::wrap`]); `keep`: it cannot (`min`, `and`, …).
macro_rules! binary {
    ($($name:ident: $bound:ident => $op:ident, $range:ident;)*) => {$(
        #[doc = concat!("`", stringify!($op), "`")]
        pub fn $name<T: $bound>(&mut self, a: Val<T>, b: Val<T>) -> Val<T> {
            let v = self.b.op(Op::Binary(BinaryOp::$op, a.v, b.v));
            binary!(@$range self, v)
        }
    )*};
    (@wrap $cx:ident, $v:ident) => { $cx.wrap($v) };
    (@keep $cx:ident, $v:ident) => { Val::new($v) };
}

macro_rules! compare {
    ($($name:ident: $bound:ident => $op:ident;)*) => {$(
        #[doc = concat!("`", stringify!($op), "`")]
        pub fn $name<T: $bound>(&mut self, a: Val<T>, b: Val<T>) -> Val<bool> {
            Val::new(self.b.op(Op::Compare(CmpOp::$op, a.v, b.v)))
        }
    )*};
}

macro_rules! atomics {
    ($($name:ident: $bound:ident => $op:ident;)*) => {$(
        #[doc = concat!("`atomic.", stringify!($op), "` on element `i` (bounds-checked): the old value")]
        pub fn $name<T: $bound, S: Indexed<T>>(&mut self, s: S, i: Val<usize>, v: Val<T>, loc: Loc) -> Val<T> {
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

    /// A literal (or a `const`'s value). A `usize` above `u32::MAX` does
    /// not fit the device's 32-bit `usize`: an error, as for a `usize`
    /// argument (a literal is refused at compile time by the macro).
    pub fn lit<T: DevScalar>(&mut self, x: T) -> Val<T> {
        if !x.fits() {
            self.errors.push(
                "a usize value above u32::MAX (a `const`?) does not fit the device's usize (32 bits: indices and lengths are u32)"
                    .to_owned(),
            );
        }
        Val::new(self.b.const_bits(T::SCALAR, x.bits()))
    }

    binary! {
        add: Num => Add, wrap;
        sub: Num => Sub, wrap;
        mul: Num => Mul, wrap;
        // i8::MIN / -1 is 128 in 32 bits: wrapped, as Rust's wrapping_div.
        div: Num => Div, wrap;
        rem: Num => Rem, keep;
        min: Num => Min, keep;
        max: Num => Max, keep;
        // Of two values in range (zero- or sign-extended), so is the result.
        bitand: Bits => And, keep;
        bitor: Bits => Or, keep;
        bitxor: Bits => Xor, keep;
    }

    /// `v`, the 32-bit result of an operation on `T`'s values, as a `T`:
    /// a small integer's (`u8 i8 u16 i16`, [`DevScalar::MEM`]) wrapped to
    /// its width, zero-extended (`and`) or sign-extended (`shl`, `shr`) —
    /// what Rust's wrapping arithmetic on the narrow type gives; any other
    /// type's as it is.
    pub(super) fn wrap<T: DevScalar>(&mut self, v: Value) -> Val<T> {
        if !T::MEM.is_storage() {
            return Val::new(v);
        }
        let bits = T::MEM.bits();
        if T::SCALAR.is_signed() {
            let k = self.b.const_bits(T::SCALAR, u64::from(32 - bits));
            let up = self.b.shl(v, k);
            Val::new(self.b.shr(up, k))
        } else {
            let m = self.b.const_bits(T::SCALAR, (1 << bits) - 1);
            Val::new(self.b.op(Op::Binary(BinaryOp::And, v, m)))
        }
    }

    /// A small integer's shift amount taken modulo its width, as Rust's
    /// release builds take it (the IR takes it modulo 32); any other
    /// type's as it is.
    fn shift_amount<T: DevScalar>(&mut self, b: Val<T>) -> Value {
        if !T::MEM.is_storage() {
            return b.v;
        }
        let m = self.b.const_bits(T::SCALAR, u64::from(T::MEM.bits() - 1));
        self.b.op(Op::Binary(BinaryOp::And, b.v, m))
    }

    compare! {
        eq: DevScalar => Eq;
        ne: DevScalar => Ne;
        lt: Num => Lt;
        le: Num => Le;
        gt: Num => Gt;
        ge: Num => Ge;
    }

    /// `sym!("name")`: the symbol's word (`ref :name`).
    pub fn symbol(&mut self, name: &str) -> Val<Word> {
        Val::new(self.b.host_ref(HostRef::Symbol(name.to_owned())))
    }

    /// `a << b` (the amount converted to `a`'s type; taken modulo the width).
    pub fn shl<T: Int, U: Int>(&mut self, a: Val<T>, b: Val<U>) -> Val<T> {
        let b = self.cast::<U, T>(b);
        let b = self.shift_amount(b);
        let v = self.b.shl(a.v, b);
        self.wrap(v)
    }

    /// `a >> b` (arithmetic for signed types).
    pub fn shr<T: Int, U: Int>(&mut self, a: Val<T>, b: Val<U>) -> Val<T> {
        let b = self.cast::<U, T>(b);
        let b = self.shift_amount(b);
        Val::new(self.b.shr(a.v, b))
    }

    /// `-a`
    pub fn neg<T: Signed>(&mut self, a: Val<T>) -> Val<T> {
        let v = self.b.unary(UnaryOp::Neg, a.v);
        self.wrap(v)
    }

    /// `!a`
    pub fn not<T: Bits>(&mut self, a: Val<T>) -> Val<T> {
        let v = self.b.unary(UnaryOp::Not, a.v);
        self.wrap(v)
    }

    /// `x.abs()`
    pub fn abs<T: Signed>(&mut self, a: Val<T>) -> Val<T> {
        let v = self.b.unary(UnaryOp::Abs, a.v);
        self.wrap(v)
    }

    /// `x.sqrt()`
    pub fn sqrt<T: Float>(&mut self, a: Val<T>) -> Val<T> {
        Val::new(self.b.unary(UnaryOp::Sqrt, a.v))
    }

    /// A math function of the IR over `a` and `rest` (`x.exp()`,
    /// `a.mul_add(b, c)`, `y.atan2(x)`: the receiver first).
    pub fn math<T: Float>(&mut self, f: relok_ir::MathFn, a: Val<T>, rest: &[Val<T>]) -> Val<T> {
        let mut args = vec![a.v];
        args.extend(rest.iter().map(|v| v.v));
        Val::new(self.b.math(f, &args))
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
    ///
    /// To a small integer (`u8 i8 u16 i16`): from an integer, its low
    /// bits (wrapped, unless every value of `T` is one of `U`); from a
    /// float, saturated at `U`'s range, NaN to 0, as Rust's `as`.
    pub fn cast<T: DevScalar, U: DevScalar>(&mut self, a: Val<T>) -> Val<U> {
        let v = if T::SCALAR == U::SCALAR { a.v } else { self.b.convert(a.v, U::SCALAR) };
        if !U::MEM.is_storage() {
            return Val::new(v);
        }
        if T::SCALAR.is_float() {
            // Converted to 32 bits (saturating, NaN to 0), then clamped.
            let bits = U::MEM.bits();
            let (lo, hi) = if U::SCALAR.is_signed() {
                (u64::from((-1i32 << (bits - 1)) as u32), (1 << (bits - 1)) - 1)
            } else {
                (0, (1 << bits) - 1)
            };
            let (lo, hi) = (self.b.const_bits(U::SCALAR, lo), self.b.const_bits(U::SCALAR, hi));
            let v = self.b.op(Op::Binary(BinaryOp::Max, v, lo));
            return Val::new(self.b.op(Op::Binary(BinaryOp::Min, v, hi)));
        }
        let narrower =
            T::MEM == Scalar::Bool || (T::MEM.is_storage() && T::SCALAR == U::SCALAR && T::MEM.bits() <= U::MEM.bits());
        if narrower { Val::new(v) } else { self.wrap(v) }
    }

    /// `let mut x = init` (a `local` per scalar of a struct or tuple)
    pub fn var<V: KernelValue>(&mut self, init: V) -> V::Var {
        let var = V::new_var(self);
        var.set(self, init);
        var
    }

    /// `let y;`: a `local` assigned later (the macro checks that it is
    /// assigned before it is read).
    pub fn deferred<T: DevScalar>(&mut self) -> Var<T> {
        self.new_local()
    }

    /// The next number naming a `local` or `shared` variable.
    pub(super) fn next_local(&mut self) -> u32 {
        self.locals += 1;
        self.locals
    }

    pub(super) fn new_local<T: DevScalar>(&mut self) -> Var<T> {
        self.locals += 1;
        let var = self.b.local(format!("x{}", self.locals), T::SCALAR);
        Var { var, _t: PhantomData }
    }

    /// Reads a `let mut`.
    pub fn get<X: KernelVar>(&mut self, x: X) -> X::Val {
        x.get(self)
    }

    /// Assigns a `let mut`.
    pub fn set<X: KernelVar>(&mut self, x: X, v: X::Val) {
        x.set(self, v);
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
    pub fn if_val<V: KernelValue>(
        &mut self,
        c: Val<bool>,
        then: impl FnOnce(&mut Self) -> V,
        otherwise: impl FnOnce(&mut Self) -> V,
    ) -> V {
        let r = V::new_var(self);
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
    pub fn never<V: KernelValue>(&mut self) -> V {
        V::never(self)
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

    /// A counted loop over `start..end` by `step` (the arrays' fill; a
    /// kernel's `for` is [`Cx::each`]): the counter moves on before the
    /// body runs, so `continue` cannot skip it; a step past the type's end
    /// stops the loop instead of wrapping.
    pub fn for_range<T: Int>(
        &mut self,
        start: Val<T>,
        end: Val<T>,
        step: Option<Val<T>>,
        body: impl FnOnce(&mut Self, Val<T>),
    ) {
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

    /// A literal of `T` with these bits (zero-extended from `T`'s width: a
    /// small signed type's are sign-extended to its 32-bit value here).
    pub(super) fn lit_bits<T: DevScalar>(&mut self, bits: u64) -> Val<T> {
        let bits = match T::MEM {
            Scalar::I8 => u64::from(bits as u8 as i8 as i32 as u32),
            Scalar::I16 => u64::from(bits as u16 as i16 as i32 as u32),
            _ => bits,
        };
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
        const { assert!(N > 0, "a kernel's shared array has at least one element") };
        self.locals += 1;
        let var = self.b.shared(format!("s{}", self.locals), Type::array(Type::Scalar(T::MEM), N as u32));
        SharedArray { var, len: N as u32, _t: PhantomData }
    }

    /// `[init; N]`: a per-thread array of `N` copies of `init`.
    pub fn local_array<T: DevScalar, const N: usize>(&mut self, init: Val<T>) -> LocalArray<T> {
        const { assert!(N > 0, "a kernel's array `[v; N]` has at least one element") };
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
        let var = self.b.local(format!("a{}", self.locals), Type::array(Type::Scalar(T::MEM), len));
        LocalArray { var, len, _t: PhantomData }
    }

    /// A host static's array, through its runtime global.
    pub fn host<T: HostData + Sync + std::fmt::Debug>(&mut self, s: &'static HostStatic<T>) -> HostArray<T::Elem> {
        match self.statics.iter().find(|t| t.path() == s.path()) {
            None => self.statics.push(s),
            Some(t) if same_static(*t, s) => {}
            Some(t) => {
                let e = conflict(*t, s);
                self.errors.push(e);
            }
        }
        let w = self.b.host_ref(HostRef::Global { name: global_name(s.path()), offset: 0 });
        let ptr = self.b.op_typed(Op::WordPtr(w), Type::ptr(AddrSpace::Global, Type::Scalar(T::Elem::MEM)));
        HostArray { ptr, len: T::LEN, _t: PhantomData }
    }

    /// `x.len()`
    pub fn len<T: Stored, S: Indexed<T>>(&mut self, s: S) -> Val<usize> {
        s.base(self).1
    }

    /// The base pointer after a bounds check of `i` (message with Rust's
    /// text and `loc`).
    pub(super) fn checked<T: Stored, S: Indexed<T>>(&mut self, s: S, i: Val<usize>, loc: Loc) -> Value {
        let (p, len) = s.base(self);
        let out = self.ge(i, len);
        let throw_with = self.throw_with;
        self.if_(
            out,
            |cx| {
                let text = format!(
                    "{}:{}:{}: index out of bounds: the len is {{0}} but the index is {{1}}",
                    loc.file, loc.line, loc.col
                );
                let m = cx.b.host_ref(HostRef::Str(text));
                let len = cx.b.convert(len.v, Scalar::U64);
                let index = cx.b.convert(i.v, Scalar::U64);
                cx.b.call_void(throw_with, vec![m, len, index]);
            },
            |_| {},
        );
        p
    }

    /// `s[i]`, bounds-checked.
    pub fn load<T: Stored, S: Indexed<T>>(&mut self, s: S, i: Val<usize>, loc: Loc) -> T::Val {
        let p = self.checked(s, i, loc);
        T::load_at(self, p, Some(i.v))
    }

    /// `s[i] = v`, bounds-checked.
    pub fn store<T: Stored, S: Indexed<T>>(&mut self, s: S, i: Val<usize>, v: T::Val, loc: Loc) {
        let p = self.checked(s, i, loc);
        T::store_at(self, p, Some(i.v), v);
    }

    /// `*s.get_unchecked(i)`
    pub fn load_unchecked<T: Stored, S: Indexed<T>>(&mut self, s: S, i: Val<usize>) -> T::Val {
        let (p, _) = s.base(self);
        T::load_at(self, p, Some(i.v))
    }

    /// `*s.get_unchecked_mut(i) = v`
    pub fn store_unchecked<T: Stored, S: Indexed<T>>(&mut self, s: S, i: Val<usize>, v: T::Val) {
        let (p, _) = s.base(self);
        T::store_at(self, p, Some(i.v), v);
    }

    atomics! {
        atomic_add: AtomicArith => Add;
        atomic_min: AtomicArith => Min;
        atomic_max: AtomicArith => Max;
        atomic_exchange: AtomicInt => Xchg;
    }

    /// `atomic.op` on a runtime global ([`crate::Global`]): the old value.
    pub fn global_atomic<T: AtomicArith>(&mut self, g: &'static crate::Global<T>, op: u8, v: Val<T>) -> Val<T> {
        let p = self.global_ptr(g);
        let op = [AtomicOp::Add, AtomicOp::Min, AtomicOp::Max][usize::from(op.min(2))];
        Val::new(self.b.atomic(op, p, None, v.v))
    }

    /// `atomic.xchg` on a runtime global: the old value.
    pub fn global_exchange<T: AtomicInt>(&mut self, g: &'static crate::Global<T>, v: Val<T>) -> Val<T> {
        let p = self.global_ptr(g);
        Val::new(self.b.atomic(AtomicOp::Xchg, p, None, v.v))
    }

    /// `atomic.cas` on a runtime global: the old value.
    pub fn global_compare_exchange<T: AtomicInt>(
        &mut self,
        g: &'static crate::Global<T>,
        expected: Val<T>,
        new: Val<T>,
    ) -> Val<T> {
        let p = self.global_ptr(g);
        Val::new(self.b.atomic_cas(p, None, expected.v, new.v))
    }

    fn global_ptr<T: Num>(&mut self, g: &'static crate::Global<T>) -> Value {
        if !self.globals.iter().any(|(n, _)| *n == g.name()) {
            self.globals.push((g.name(), size_of::<T>()));
        }
        let w = self.b.host_ref(HostRef::Global { name: g.name().to_owned(), offset: 0 });
        self.b.op_typed(Op::WordPtr(w), Type::ptr(AddrSpace::Global, Type::Scalar(T::MEM)))
    }

    /// `atomic.cas` on element `i` (bounds-checked): the old value.
    pub fn atomic_compare_exchange<T: AtomicInt, S: Indexed<T>>(
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

    /// The device function at `path`, or, when it is not defined yet (a
    /// struct's method, which the caller's macro could not name to define
    /// first), a note to define it with `define` and stage this function
    /// again ([`ModuleCx`] does).
    pub fn func_or_define(&mut self, path: &str, define: Definer) -> FuncId {
        if let Some(&f) = self.funcs.get(path) {
            return f;
        }
        if !self.missing.iter().any(|(p, _)| p == path) {
            self.missing.push((path.to_owned(), define));
        }
        self.throw
    }

    /// Starts staging the device function at `path` into this one:
    /// `true` (and an error naming the cycle) when it is being staged
    /// already — recursion, which would never end.
    pub fn inline_enter(&mut self, path: &str) -> bool {
        if let Some(at) = self.inlining.iter().position(|p| p == path) {
            let mut cycle = self.inlining[at..].to_vec();
            cycle.push(path.to_owned());
            self.errors.push(format!(
                "recursion is not supported: {} (device function calls are inlined: write a loop)",
                cycle.join(" → ")
            ));
            return true;
        }
        self.inlining.push(path.to_owned());
        false
    }

    /// Ends what [`Cx::inline_enter`] started.
    pub fn inline_exit(&mut self) {
        self.inlining.pop();
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
