//! The typing rules of operations: one definition shared by the builder
//! (which infers result types) and the verifier (which checks declared ones).
//!
//! Rules, by operation:
//! - `const`: result is a non-`word` scalar; the bits fit its width.
//! - `neg`/`abs`: numeric; `not`: integer or bool; `sqrt`: float.
//! - `add sub mul div rem min max`: numeric, both operands one type;
//!   `and or xor`: integer or bool; `shl shr`: integer; result = operand type.
//! - `eq ne`: any scalar (incl. `word`, `bool`) or pointer pair of one type;
//!   `lt le gt ge`: numeric pair; result `bool`.
//! - `select c, a, b`: `c` is bool; `a`, `b` one value type; result that type.
//! - `convert`: numeric or bool to numeric or bool (not word).
//! - `bitcast`: scalar to scalar of the same size, neither bool; `word` only
//!   to/from `u64`... and integer/float of equal width otherwise.
//! - `load`: pointer to a scalar or pointer; optional integer index.
//! - `offset`: pointer and integer; result the pointer's type.
//! - `elem`: pointer to array and integer; result pointer to the element.
//! - `field`: pointer to struct, field in range; result pointer to the field.
//! - `addr`: see [`var_addr_type`]; `get`: scalar local variable.
//! - `ref`: `word` (a `ref @c` constant holds no words or pointers);
//!   `word`, `patch`: `word`; `state.*`: the field's type;
//!   `wordptr`: a word to a `ptr<global, T>` of a sized `T`.
//! - builtins: `u32`. `call`: device function, argument count and types
//!   match, it returns a value of the result type.
//! - atomics: pointer into global or shared memory to `i32 u32 i64 u64`
//!   (`atomic.add`, `atomic.min`, `atomic.max` also `f32 f64`); operands of
//!   that type; result that type.
//! - math functions (`exp`, `fma`, …): [`MathFn::arity`] operands, all of
//!   one float type; the result that type.

use crate::ir::{AtomicOp, BinaryOp, CmpOp, FuncKind, Function, MathFn, Module, Op, UnaryOp, Value, VarKind};
use crate::types::{AddrSpace, Scalar, Type};

/// A typing rule broken by one operation.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum TypeError {
    /// An operand has a type the operation does not accept.
    #[error("`{op}` expects {expected} for {operand}, found {found}")]
    Operand {
        /// The operation's text name.
        op: &'static str,
        /// The operand.
        operand: Value,
        /// Its type.
        found: Type,
        /// What was expected, in words.
        expected: &'static str,
    },
    /// Two operands that must agree do not.
    #[error("`{op}` operands disagree: {a} is {a_ty}, {b} is {b_ty}")]
    Disagree {
        /// The operation's text name.
        op: &'static str,
        /// First operand.
        a: Value,
        /// Its type.
        a_ty: Type,
        /// Second operand.
        b: Value,
        /// Its type.
        b_ty: Type,
    },
    /// The declared result type is not what the operation produces.
    #[error("`{op}` produces {expected}, but the result is declared {declared}")]
    Result {
        /// The operation's text name.
        op: &'static str,
        /// What the operation produces.
        expected: Type,
        /// What the text or builder declared.
        declared: Type,
    },
    /// The declared result type is not allowed for this operation.
    #[error("`{op}` cannot produce {declared}: {why}")]
    BadResult {
        /// The operation's text name.
        op: &'static str,
        /// What was declared.
        declared: Type,
        /// Why not.
        why: &'static str,
    },
    /// A literal does not fit its type.
    #[error("literal {bits:#x} does not fit {ty}")]
    Literal {
        /// The bits.
        bits: u64,
        /// The type.
        ty: Scalar,
    },
    /// A struct field number out of range.
    #[error("field {field} out of range for {ty}")]
    Field {
        /// The field number.
        field: u32,
        /// The struct type.
        ty: Type,
    },
    /// A math function with the wrong number of operands.
    #[error("`{op}` takes {expected} operands, found {found}")]
    Arity {
        /// The function.
        op: MathFn,
        /// Its arity.
        expected: usize,
        /// How many it was given.
        found: usize,
    },
    /// A handle that does not exist (only reachable on unverified IR).
    #[error("{0} does not exist")]
    Dangling(String),
    /// A call that breaks the callee's signature.
    #[error("call of @{callee}: {why}")]
    Call {
        /// Callee name.
        callee: String,
        /// What is wrong.
        why: String,
    },
}

fn name_of(op: &Op) -> &'static str {
    match op {
        Op::Const(_) => "const",
        Op::Unary(u, ..) => u.name(),
        Op::Binary(b, ..) => b.name(),
        Op::Compare(c, ..) => c.name(),
        Op::Select(..) => "select",
        Op::Convert(_) => "convert",
        Op::Bitcast(_) => "bitcast",
        Op::Load { .. } => "load",
        Op::Offset { .. } => "offset",
        Op::Elem { .. } => "elem",
        Op::Field { .. } => "field",
        Op::VarAddr(_) | Op::ConstAddr(_) => "addr",
        Op::Get(_) => "get",
        Op::Builtin(_) => "builtin",
        Op::Ref(_) => "ref",
        Op::WordPtr(_) => "wordptr",
        Op::State(_) => "state",
        Op::BakedWord(_) => "word",
        Op::Patch(_) => "patch",
        Op::Call(..) => "call",
        Op::Math(m, _) => m.name(),
        Op::Atomic { op, .. } => op.name(),
        Op::AtomicCas { .. } => "atomic.cas",
    }
}

/// The text name of an operation's mnemonic (`add`, `load`, `atomic.cas`).
pub fn op_name(op: &Op) -> &'static str {
    name_of(op)
}

struct Cx<'a> {
    f: &'a Function,
    op: &'static str,
}

impl Cx<'_> {
    fn ty(&self, v: Value) -> Result<&Type, TypeError> {
        self.f.values.get(v).map(|d| &d.ty).ok_or_else(|| TypeError::Dangling(v.to_string()))
    }
    fn bad(&self, v: Value, expected: &'static str) -> TypeError {
        let found = self.ty(v).cloned().unwrap_or(Type::Scalar(Scalar::Bool));
        TypeError::Operand { op: self.op, operand: v, found, expected }
    }
    fn scalar(&self, v: Value, ok: impl Fn(Scalar) -> bool, expected: &'static str) -> Result<Scalar, TypeError> {
        match self.ty(v)? {
            Type::Scalar(s) if ok(*s) => Ok(*s),
            _ => Err(self.bad(v, expected)),
        }
    }
    fn same(&self, a: Value, b: Value) -> Result<Type, TypeError> {
        let (ta, tb) = (self.ty(a)?, self.ty(b)?);
        if ta != tb {
            return Err(TypeError::Disagree { op: self.op, a, a_ty: ta.clone(), b, b_ty: tb.clone() });
        }
        Ok(ta.clone())
    }
    fn index(&self, i: Option<Value>) -> Result<(), TypeError> {
        if let Some(i) = i {
            self.scalar(i, Scalar::is_int, "an integer index")?;
        }
        Ok(())
    }
    fn ptr(&self, p: Value) -> Result<(AddrSpace, &Type), TypeError> {
        self.ty(p)?.as_ptr().ok_or_else(|| self.bad(p, "a pointer"))
    }
}

/// The type a pointer to a variable or constant of type `ty` in `space` has:
/// arrays decay to a pointer to their element.
pub fn var_addr_type(space: AddrSpace, ty: &Type) -> Type {
    match ty {
        Type::Array(e, _) => Type::Ptr(space, e.clone()),
        t => Type::ptr(space, t.clone()),
    }
}

/// Whether `bits` is a canonical literal of `ty` (zero-extended, bool 0/1).
pub fn literal_fits(ty: Scalar, bits: u64) -> bool {
    match ty {
        Scalar::Bool => bits <= 1,
        Scalar::Word => false,
        s if s.size() < 8 => bits < 1 << (8 * s.size()),
        _ => true,
    }
}

/// The result type of `op` when it follows from the operands alone
/// (`None` for `const`, `convert` and `bitcast`, whose result type is chosen
/// by the writer).
pub fn infer(m: &Module, f: &Function, op: &Op) -> Result<Option<Type>, TypeError> {
    let cx = Cx { f, op: name_of(op) };
    let t = match op {
        Op::Const(_) | Op::Convert(_) | Op::Bitcast(_) | Op::WordPtr(_) => return Ok(None),
        Op::Ref(r) => {
            if let crate::ir::HostRef::Value(c) = r {
                let d = m.consts.get(*c).ok_or_else(|| TypeError::Dangling(c.to_string()))?;
                if contains_word_or_ptr(&d.ty) {
                    return Err(TypeError::BadResult {
                        op: "ref",
                        declared: d.ty.clone(),
                        why: "a host value's bytes are fixed: it may hold no words or pointers",
                    });
                }
            }
            Type::Scalar(Scalar::Word)
        }
        Op::BakedWord(_) | Op::Patch(_) => Type::Scalar(Scalar::Word),
        Op::State(field) => field.ty(),
        Op::Unary(u, a) => {
            let ok: fn(Scalar) -> bool = match u {
                UnaryOp::Neg | UnaryOp::Abs => Scalar::is_numeric,
                UnaryOp::Not => |s| s.is_int() || s == Scalar::Bool,
                UnaryOp::Sqrt => Scalar::is_float,
            };
            let expected = match u {
                UnaryOp::Neg | UnaryOp::Abs => "a number",
                UnaryOp::Not => "an integer or bool",
                UnaryOp::Sqrt => "a float",
            };
            Type::Scalar(cx.scalar(*a, ok, expected)?)
        }
        Op::Binary(b, x, y) => {
            let (ok, expected): (fn(Scalar) -> bool, _) = match b {
                BinaryOp::And | BinaryOp::Or | BinaryOp::Xor => {
                    (|s| s.is_int() || s == Scalar::Bool, "an integer or bool")
                }
                BinaryOp::Shl | BinaryOp::Shr => (Scalar::is_int, "an integer"),
                _ => (Scalar::is_numeric, "a number"),
            };
            cx.scalar(*x, ok, expected)?;
            cx.scalar(*y, ok, expected)?;
            cx.same(*x, *y)?
        }
        Op::Compare(c, x, y) => {
            match c {
                CmpOp::Eq | CmpOp::Ne => {
                    if !cx.ty(*x)?.is_value_type() {
                        return Err(cx.bad(*x, "a scalar or pointer"));
                    }
                }
                _ => {
                    cx.scalar(*x, Scalar::is_numeric, "a number")?;
                    cx.scalar(*y, Scalar::is_numeric, "a number")?;
                }
            }
            cx.same(*x, *y)?;
            Type::Scalar(Scalar::Bool)
        }
        Op::Select(c, a, b) => {
            cx.scalar(*c, |s| s == Scalar::Bool, "a bool condition")?;
            cx.same(*a, *b)?
        }
        Op::Load { ptr, index } => {
            cx.index(*index)?;
            let (_, pointee) = cx.ptr(*ptr)?;
            if !pointee.is_loadable() {
                return Err(cx.bad(*ptr, "a pointer to a scalar or pointer"));
            }
            pointee.loaded()
        }
        Op::Offset { ptr, index } => {
            cx.index(Some(*index))?;
            cx.ptr(*ptr)?;
            cx.ty(*ptr)?.clone()
        }
        Op::Elem { ptr, index } => {
            cx.index(Some(*index))?;
            match cx.ptr(*ptr)? {
                (space, Type::Array(e, _)) => Type::Ptr(space, e.clone()),
                _ => return Err(cx.bad(*ptr, "a pointer to an array")),
            }
        }
        Op::Field { ptr, field } => match cx.ptr(*ptr)? {
            (space, t @ Type::Struct(fields)) => match fields.get(*field as usize) {
                Some(ft) => Type::ptr(space, ft.clone()),
                None => return Err(TypeError::Field { field: *field, ty: t.clone() }),
            },
            _ => return Err(cx.bad(*ptr, "a pointer to a struct")),
        },
        Op::VarAddr(var) => {
            let d = f.vars.get(*var).ok_or_else(|| TypeError::Dangling(var.to_string()))?;
            let space = match d.kind {
                VarKind::Local => AddrSpace::Local,
                VarKind::Shared => AddrSpace::Shared,
            };
            var_addr_type(space, &d.ty)
        }
        Op::ConstAddr(c) => {
            let d = m.consts.get(*c).ok_or_else(|| TypeError::Dangling(c.to_string()))?;
            var_addr_type(AddrSpace::Const, &d.ty)
        }
        Op::Get(var) => {
            let d = f.vars.get(*var).ok_or_else(|| TypeError::Dangling(var.to_string()))?;
            match (&d.ty, d.kind) {
                (t, VarKind::Local) if t.is_value_type() => d.ty.clone(),
                _ => {
                    return Err(TypeError::BadResult {
                        op: "get",
                        declared: d.ty.clone(),
                        why: "only scalar or pointer `local` variables can be read with `get`; use `addr` and `load`",
                    });
                }
            }
        }
        Op::Builtin(_) => Type::Scalar(Scalar::U32),
        Op::Call(callee, args) => {
            let ret = check_call(m, f, *callee, args)?;
            match ret {
                Some(t) => t,
                None => {
                    let name = m.funcs.get(*callee).map(|g| g.name.clone()).unwrap_or_default();
                    return Err(TypeError::Call { callee: name, why: "it returns no value".into() });
                }
            }
        }
        Op::Atomic { op: a, ptr, index, value } => {
            let t = atomic_target(&cx, *ptr, *index)?;
            if t.is_float() && *a == AtomicOp::Xchg {
                return Err(cx.bad(*ptr, "an integer pointee (float atomics are add, min and max)"));
            }
            if matches!(a, AtomicOp::Add | AtomicOp::Min | AtomicOp::Max | AtomicOp::Xchg) {
                cx.scalar(*value, |s| s == t, "the pointee type")?;
            }
            Type::Scalar(t)
        }
        Op::Math(m, args) => {
            if args.len() != m.arity() {
                return Err(TypeError::Arity { op: *m, expected: m.arity(), found: args.len() });
            }
            let mut t = None;
            for &a in args {
                cx.scalar(a, Scalar::is_float, "a float")?;
                if let Some(first) = t {
                    cx.same(first, a)?;
                } else {
                    t = Some(a);
                }
            }
            match t {
                Some(first) => cx.ty(first)?.clone(),
                None => return Err(TypeError::Arity { op: *m, expected: m.arity(), found: 0 }),
            }
        }
        Op::AtomicCas { ptr, index, expected, new } => {
            let t = atomic_target(&cx, *ptr, *index)?;
            if t.is_float() {
                return Err(cx.bad(*ptr, "an integer pointee (float atomics are add, min and max)"));
            }
            cx.scalar(*expected, |s| s == t, "the pointee type")?;
            cx.scalar(*new, |s| s == t, "the pointee type")?;
            Type::Scalar(t)
        }
    };
    Ok(Some(t))
}

fn atomic_target(cx: &Cx<'_>, ptr: Value, index: Option<Value>) -> Result<Scalar, TypeError> {
    cx.index(index)?;
    match cx.ptr(ptr)? {
        (AddrSpace::Global | AddrSpace::Shared, Type::Scalar(s)) if s.is_int() || s.is_float() => Ok(*s),
        _ => Err(cx.bad(ptr, "a global or shared pointer to i32, u32, i64, u64, f32 or f64")),
    }
}

/// Whether `ty` holds a `word` or a pointer anywhere (such data cannot be a
/// host value: its bytes differ per process).
pub fn contains_word_or_ptr(ty: &Type) -> bool {
    match ty {
        Type::Scalar(s) => *s == Scalar::Word,
        Type::Ptr(..) => true,
        Type::Array(e, _) => contains_word_or_ptr(e),
        Type::Struct(fields) => fields.iter().any(contains_word_or_ptr),
    }
}

/// Checks a call's arguments against the callee; returns its result type.
pub fn check_call(
    m: &Module,
    f: &Function,
    callee: crate::ir::FuncId,
    args: &[Value],
) -> Result<Option<Type>, TypeError> {
    let g = m.funcs.get(callee).ok_or_else(|| TypeError::Dangling(callee.to_string()))?;
    let err = |why: String| TypeError::Call { callee: g.name.clone(), why };
    if g.kind == FuncKind::Kernel {
        return Err(err("kernels cannot be called from device code".into()));
    }
    if g.params.len() != args.len() {
        return Err(err(format!("expects {} arguments, got {}", g.params.len(), args.len())));
    }
    for (i, (&p, &a)) in g.params.iter().zip(args).enumerate() {
        let pt = g.values.get(p).map(|d| &d.ty).ok_or_else(|| TypeError::Dangling(p.to_string()))?;
        let at = f.values.get(a).map(|d| &d.ty).ok_or_else(|| TypeError::Dangling(a.to_string()))?;
        if pt != at {
            return Err(err(format!("argument {} ({a}) is {at}, the parameter is {pt}", i + 1)));
        }
    }
    Ok(g.ret.clone())
}

/// Checks `op` against its declared result type.
pub fn check(m: &Module, f: &Function, op: &Op, declared: &Type) -> Result<(), TypeError> {
    let cx = Cx { f, op: name_of(op) };
    match op {
        Op::Const(bits) => match declared {
            Type::Scalar(Scalar::Word) => Err(TypeError::BadResult {
                op: "const",
                declared: declared.clone(),
                why: "words come from host objects; there are no word literals",
            }),
            Type::Scalar(s) if literal_fits(*s, *bits) => Ok(()),
            Type::Scalar(s) => Err(TypeError::Literal { bits: *bits, ty: *s }),
            _ => Err(TypeError::BadResult { op: "const", declared: declared.clone(), why: "literals are scalars" }),
        },
        Op::Convert(a) => {
            let convertible = |s: Scalar| s.is_numeric() || s == Scalar::Bool;
            cx.scalar(*a, convertible, "a number or bool")?;
            match declared {
                Type::Scalar(s) if convertible(*s) => Ok(()),
                _ => Err(TypeError::BadResult {
                    op: "convert",
                    declared: declared.clone(),
                    why: "conversions produce a number or bool",
                }),
            }
        }
        Op::WordPtr(a) => {
            cx.scalar(*a, |s| s == Scalar::Word, "a word")?;
            match declared {
                Type::Ptr(AddrSpace::Global, pointee) if pointee.size().is_ok() => Ok(()),
                _ => Err(TypeError::BadResult {
                    op: "wordptr",
                    declared: declared.clone(),
                    why: "a word points into global memory: the result is a `ptr<global, T>`",
                }),
            }
        }
        Op::Bitcast(a) => {
            let from = cx.scalar(*a, |s| s != Scalar::Bool, "a non-bool scalar")?;
            let Type::Scalar(to) = declared else {
                return Err(TypeError::BadResult {
                    op: "bitcast",
                    declared: declared.clone(),
                    why: "bitcasts produce a scalar",
                });
            };
            let word_ok = (from == Scalar::Word) == (*to == Scalar::Word)
                || matches!((from, *to), (Scalar::Word, Scalar::U64) | (Scalar::U64, Scalar::Word));
            if *to == Scalar::Bool || from.size() != to.size() || !word_ok {
                return Err(TypeError::BadResult {
                    op: "bitcast",
                    declared: declared.clone(),
                    why: "a bitcast keeps the size, and `word` converts only to and from `u64`",
                });
            }
            Ok(())
        }
        _ => {
            let expected = infer(m, f, op)?.expect("every other op infers its type");
            if &expected != declared {
                return Err(TypeError::Result { op: cx.op, expected, declared: declared.clone() });
            }
            Ok(())
        }
    }
}
