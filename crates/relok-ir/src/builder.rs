//! A Rust API for writing kernels.
//!
//! ```
//! use relok_ir::builder::ModuleBuilder;
//! use relok_ir::{AddrSpace, Axis, Scalar, Type};
//!
//! let mut mb = ModuleBuilder::new();
//! let mut k = mb.kernel("scale");
//! let n = k.param(Scalar::U32);
//! let x = k.param(Type::ptr(AddrSpace::Global, Scalar::F32.into()));
//! let i = k.global_id(Axis::X);
//! let in_range = k.lt(i, n);
//! k.if_(in_range, |k| {
//!     let v = k.load(x, Some(i));
//!     let two = k.f32(2.0);
//!     let v2 = k.mul(v, two);
//!     k.store(x, Some(i), v2);
//! });
//! let scale = k.finish().unwrap();
//! mb.add(scale);
//! let module = mb.build();
//! assert!(relok_ir::verify(&module).is_ok());
//! ```
//!
//! Result types are inferred with the same rules the verifier checks
//! ([`crate::typing`]). A builder never panics on an ill-typed operation: it
//! records the first error, gives the value a placeholder type and carries
//! on, and [`FunctionBuilder::finish`] reports it.

use crate::ir::{
    AtomicOp, Axis, BinaryOp, Builtin, CmpOp, ConstDecl, ConstId, ConstInit, FuncId, FuncKind, Function, MathFn,
    Module, Op, Span, Stmt, StmtKind, UnaryOp, Value, ValueData, Var, VarDecl, VarKind,
};
use crate::types::{Scalar, Type};
use crate::typing::{self, TypeError};

/// Builds a module: constants, then functions in the order they finish.
#[derive(Debug, Default)]
pub struct ModuleBuilder {
    module: Module,
}

/// What went wrong while building a function.
#[derive(Debug, thiserror::Error)]
#[error("building @{func}: {error}")]
pub struct BuildError {
    /// The function.
    pub func: String,
    /// The first typing error.
    pub error: TypeError,
}

impl ModuleBuilder {
    /// An empty module.
    pub fn new() -> ModuleBuilder {
        ModuleBuilder::default()
    }

    /// Declares a constant aggregate.
    pub fn constant(&mut self, name: impl Into<String>, ty: Type, init: ConstInit) -> ConstId {
        self.module.consts.push(ConstDecl { name: name.into(), ty, init, span: Span::default() })
    }

    /// Starts a kernel. Device functions it calls must be added first.
    pub fn kernel(&self, name: impl Into<String>) -> FunctionBuilder<'_> {
        FunctionBuilder::new(&self.module, Function::new(name, FuncKind::Kernel), None)
    }

    /// Starts a device function returning `ret`.
    pub fn device_fn(&self, name: impl Into<String>, ret: Option<Type>) -> FunctionBuilder<'_> {
        let mut f = Function::new(name, FuncKind::Device);
        f.ret = ret;
        FunctionBuilder::new(&self.module, f, None)
    }

    /// Declares `import fn @name(params) -> ret`: a device function whose
    /// body a library provides at link time.
    pub fn import_fn(&mut self, name: impl Into<String>, params: Vec<Type>, ret: Option<Type>) -> FuncId {
        let mut f = Function::new(name, FuncKind::Import);
        for ty in params {
            let v = f.values.push(ValueData { ty });
            f.params.push(v);
        }
        f.ret = ret;
        self.module.funcs.push(f)
    }

    /// Sets the module's stage (source, or lowered with a strategy).
    pub fn stage(&mut self, stage: crate::ir::Stage) {
        self.module.stage = stage;
    }

    /// Adds a function finished with [`FunctionBuilder::finish`].
    pub fn add(&mut self, func: Function) -> FuncId {
        self.module.funcs.push(func)
    }

    /// The module.
    pub fn build(self) -> Module {
        self.module
    }
}

/// Builds one function's body, statement by statement.
#[derive(Debug)]
pub struct FunctionBuilder<'m> {
    module: &'m Module,
    func: Function,
    /// Open blocks: the innermost last. `blocks[0]` is the body.
    blocks: Vec<Vec<Stmt>>,
    error: Option<TypeError>,
}

macro_rules! binary_methods {
    ($($method:ident => $op:ident),* $(,)?) => {
        $(
            #[doc = concat!("`", stringify!($method), " a, b`")]
            pub fn $method(&mut self, a: Value, b: Value) -> Value {
                self.op(Op::Binary(BinaryOp::$op, a, b))
            }
        )*
    };
}

macro_rules! compare_methods {
    ($($method:ident => $op:ident),* $(,)?) => {
        $(
            #[doc = concat!("`", stringify!($method), " a, b` (bool)")]
            pub fn $method(&mut self, a: Value, b: Value) -> Value {
                self.op(Op::Compare(CmpOp::$op, a, b))
            }
        )*
    };
}

impl<'m> FunctionBuilder<'m> {
    fn new(module: &'m Module, func: Function, error: Option<TypeError>) -> Self {
        FunctionBuilder { module, func, blocks: vec![Vec::new()], error }
    }

    /// The finished function, or the first typing error met while building.
    pub fn finish(mut self) -> Result<Function, BuildError> {
        if let Some(error) = self.error {
            return Err(BuildError { func: self.func.name, error });
        }
        self.func.body = self.blocks.swap_remove(0);
        Ok(self.func)
    }

    /// Adds a parameter of type `ty`. Parameters come before the body.
    pub fn param(&mut self, ty: impl Into<Type>) -> Value {
        let v = self.func.values.push(ValueData { ty: ty.into() });
        self.func.params.push(v);
        v
    }

    /// Marks the `u32` parameter `len` as a length of the pointer
    /// parameter `of` ([`crate::LenParam`]; kernels only, checked by the
    /// verifier).
    pub fn len_param(&mut self, len: Value, of: Value) {
        self.func.lens.push(crate::ir::LenParam { len, of });
    }

    /// Requires every launch of the kernel to have blocks of `block`
    /// threads ([`Function::block`]; kernels only, checked by the verifier).
    pub fn block_shape(&mut self, block: [u32; 3]) {
        self.func.block = Some(block);
    }

    /// Declares a per-thread variable.
    pub fn local(&mut self, name: impl Into<String>, ty: impl Into<Type>) -> Var {
        self.var(name.into(), VarKind::Local, ty.into())
    }

    /// Declares a per-block variable (kernels only).
    pub fn shared(&mut self, name: impl Into<String>, ty: impl Into<Type>) -> Var {
        self.var(name.into(), VarKind::Shared, ty.into())
    }

    fn var(&mut self, name: String, kind: VarKind, ty: Type) -> Var {
        self.func.vars.push(VarDecl { name, kind, ty, span: Span::default() })
    }

    fn push(&mut self, kind: StmtKind) {
        if let Some(b) = self.blocks.last_mut() {
            b.push(Stmt::new(kind));
        }
    }

    fn fail(&mut self, e: TypeError) {
        self.error.get_or_insert(e);
    }

    /// Emits `op` with an explicit result type, checked.
    pub fn op_typed(&mut self, op: Op, ty: Type) -> Value {
        if let Err(e) = typing::check(self.module, &self.func, &op, &ty) {
            self.fail(e);
        }
        let result = self.func.values.push(ValueData { ty });
        self.push(StmtKind::Let { result, op });
        result
    }

    /// Emits `op`, inferring its result type.
    pub fn op(&mut self, op: Op) -> Value {
        let ty = match typing::infer(self.module, &self.func, &op) {
            Ok(Some(t)) => t,
            Ok(None) => {
                self.fail(TypeError::BadResult {
                    op: typing::op_name(&op),
                    declared: Type::Scalar(Scalar::Bool),
                    why: "this operation needs an explicit result type (use op_typed)",
                });
                Type::Scalar(Scalar::Bool)
            }
            Err(e) => {
                self.fail(e);
                Type::Scalar(Scalar::Bool)
            }
        };
        let result = self.func.values.push(ValueData { ty });
        self.push(StmtKind::Let { result, op });
        result
    }

    /// A literal from its bits (see [`Op::Const`]).
    pub fn const_bits(&mut self, ty: Scalar, bits: u64) -> Value {
        self.op_typed(Op::Const(bits), Type::Scalar(ty))
    }
    /// A `bool` literal.
    pub fn bool(&mut self, b: bool) -> Value {
        self.const_bits(Scalar::Bool, u64::from(b))
    }
    /// An `i32` literal.
    pub fn i32(&mut self, x: i32) -> Value {
        self.const_bits(Scalar::I32, u64::from(x as u32))
    }
    /// A `u32` literal.
    pub fn u32(&mut self, x: u32) -> Value {
        self.const_bits(Scalar::U32, u64::from(x))
    }
    /// An `i64` literal.
    pub fn i64(&mut self, x: i64) -> Value {
        self.const_bits(Scalar::I64, x as u64)
    }
    /// A `u64` literal.
    pub fn u64(&mut self, x: u64) -> Value {
        self.const_bits(Scalar::U64, x)
    }
    /// An `f32` literal.
    pub fn f32(&mut self, x: f32) -> Value {
        self.const_bits(Scalar::F32, u64::from(x.to_bits()))
    }
    /// An `f64` literal.
    pub fn f64(&mut self, x: f64) -> Value {
        self.const_bits(Scalar::F64, x.to_bits())
    }

    /// A unary operation.
    pub fn unary(&mut self, op: UnaryOp, a: Value) -> Value {
        self.op(Op::Unary(op, a))
    }

    binary_methods!(
        add => Add, sub => Sub, mul => Mul, div => Div, rem => Rem, min => Min, max => Max,
        and => And, or => Or, xor => Xor, shl => Shl, shr => Shr,
    );
    compare_methods!(eq => Eq, ne => Ne, lt => Lt, le => Le, gt => Gt, ge => Ge);

    /// A math function of `args` (one to three floats of one type, as
    /// [`MathFn::arity`] says): `math(MathFn::Exp, &[x])`,
    /// `math(MathFn::Atan2, &[y, x])`.
    pub fn math(&mut self, f: MathFn, args: &[Value]) -> Value {
        self.op(Op::Math(f, args.to_vec()))
    }
    /// `fma a, b, c`: `a * b + c` rounded once.
    pub fn fma(&mut self, a: Value, b: Value, c: Value) -> Value {
        self.math(MathFn::Fma, &[a, b, c])
    }

    /// `select c, a, b`
    pub fn select(&mut self, c: Value, a: Value, b: Value) -> Value {
        self.op(Op::Select(c, a, b))
    }
    /// `convert a` to `ty`
    pub fn convert(&mut self, a: Value, ty: Scalar) -> Value {
        self.op_typed(Op::Convert(a), Type::Scalar(ty))
    }
    /// `bitcast a` to `ty`
    pub fn bitcast(&mut self, a: Value, ty: Scalar) -> Value {
        self.op_typed(Op::Bitcast(a), Type::Scalar(ty))
    }
    /// `load p[i]`
    pub fn load(&mut self, ptr: Value, index: Option<Value>) -> Value {
        self.op(Op::Load { ptr, index })
    }
    /// `offset p, i`
    pub fn offset(&mut self, ptr: Value, index: Value) -> Value {
        self.op(Op::Offset { ptr, index })
    }
    /// `elem p, i`
    pub fn elem(&mut self, ptr: Value, index: Value) -> Value {
        self.op(Op::Elem { ptr, index })
    }
    /// `field p, k`
    pub fn field(&mut self, ptr: Value, field: u32) -> Value {
        self.op(Op::Field { ptr, field })
    }
    /// `addr %var`
    pub fn addr(&mut self, var: Var) -> Value {
        self.op(Op::VarAddr(var))
    }
    /// `addr @const`
    pub fn const_addr(&mut self, c: ConstId) -> Value {
        self.op(Op::ConstAddr(c))
    }
    /// `get %var`
    pub fn get(&mut self, var: Var) -> Value {
        self.op(Op::Get(var))
    }
    /// A launch-geometry builtin.
    pub fn builtin(&mut self, b: Builtin) -> Value {
        self.op(Op::Builtin(b))
    }
    /// `block_id * block_dim + thread_id` along `axis`.
    pub fn global_id(&mut self, axis: Axis) -> Value {
        let b = self.builtin(Builtin::BlockId(axis));
        let d = self.builtin(Builtin::BlockDim(axis));
        let t = self.builtin(Builtin::ThreadId(axis));
        let bd = self.mul(b, d);
        self.add(bd, t)
    }
    /// `call @f(args)` that returns a value.
    pub fn call(&mut self, f: FuncId, args: Vec<Value>) -> Value {
        self.op(Op::Call(f, args))
    }
    /// `atomic.op p[i], v`
    pub fn atomic(&mut self, op: AtomicOp, ptr: Value, index: Option<Value>, value: Value) -> Value {
        self.op(Op::Atomic { op, ptr, index, value })
    }
    /// `atomic.cas p[i], expected, new`
    pub fn atomic_cas(&mut self, ptr: Value, index: Option<Value>, expected: Value, new: Value) -> Value {
        self.op(Op::AtomicCas { ptr, index, expected, new })
    }

    /// `store p[i], v`
    pub fn store(&mut self, ptr: Value, index: Option<Value>, value: Value) {
        self.push(StmtKind::Store { ptr, index, value });
    }
    /// `set %var, v`
    pub fn set(&mut self, var: Var, value: Value) {
        self.push(StmtKind::Set { var, value });
    }
    /// `call @f(args)` without a result.
    pub fn call_void(&mut self, f: FuncId, args: Vec<Value>) {
        if let Err(e) = typing::check_call(self.module, &self.func, f, &args) {
            self.fail(e);
        }
        self.push(StmtKind::Call(f, args));
    }
    /// `barrier`
    pub fn barrier(&mut self) {
        self.push(StmtKind::Barrier);
    }
    /// `exit`: ends the thread.
    pub fn exit(&mut self) {
        self.push(StmtKind::Exit);
    }
    /// `ref ...`: the word of a host object.
    pub fn host_ref(&mut self, r: crate::ir::HostRef) -> Value {
        self.op(Op::Ref(r))
    }
    /// `break`
    pub fn break_(&mut self) {
        self.push(StmtKind::Break);
    }
    /// `continue`
    pub fn continue_(&mut self) {
        self.push(StmtKind::Continue);
    }
    /// `return` / `return v`
    pub fn ret(&mut self, v: Option<Value>) {
        self.push(StmtKind::Return(v));
    }

    fn nested(&mut self, f: impl FnOnce(&mut Self)) -> Vec<Stmt> {
        self.open_block();
        f(self);
        self.close_block()
    }

    /// Opens a nested block: statements go there until
    /// [`FunctionBuilder::close_block`] returns it (for front ends that
    /// cannot pass the builder through a closure).
    pub fn open_block(&mut self) {
        self.blocks.push(Vec::new());
    }

    /// Closes the block [`FunctionBuilder::open_block`] opened and returns
    /// its statements (the body is never closed: closing it returns nothing).
    pub fn close_block(&mut self) -> Vec<Stmt> {
        if self.blocks.len() > 1 { self.blocks.pop().unwrap_or_default() } else { Vec::new() }
    }

    /// Appends a statement (`If` or `Loop` with blocks made by
    /// [`FunctionBuilder::open_block`] / [`FunctionBuilder::close_block`]).
    pub fn stmt(&mut self, kind: StmtKind) {
        self.push(kind);
    }

    /// `if c { then }`
    pub fn if_(&mut self, cond: Value, then: impl FnOnce(&mut Self)) {
        self.if_else(cond, then, |_| {});
    }
    /// `if c { then } else { otherwise }`
    pub fn if_else(&mut self, cond: Value, then: impl FnOnce(&mut Self), otherwise: impl FnOnce(&mut Self)) {
        let then_body = self.nested(then);
        let else_body = self.nested(otherwise);
        self.push(StmtKind::If { cond, then_body, else_body });
    }
    /// `loop { body }`
    pub fn loop_(&mut self, body: impl FnOnce(&mut Self)) {
        let body = self.nested(body);
        self.push(StmtKind::Loop(body));
    }
    /// `for (%var = start; %var < end; %var += 1) { body(i) }`, as a loop over
    /// a local variable `var` of `start`'s type.
    pub fn for_range(&mut self, var: Var, start: Value, end: Value, body: impl FnOnce(&mut Self, Value)) {
        self.set(var, start);
        self.loop_(|k| {
            let i = k.get(var);
            let done = k.ge(i, end);
            k.if_(done, |k| k.break_());
            body(k, i);
            let ty = k.func.values.get(i).and_then(|d| d.ty.as_scalar()).unwrap_or(Scalar::U32);
            let one = k.const_bits(ty, 1);
            let i = k.get(var);
            let next = k.add(i, one);
            k.set(var, next);
        });
    }

    /// The function so far (for inspection).
    pub fn func(&self) -> &Function {
        &self.func
    }
}
