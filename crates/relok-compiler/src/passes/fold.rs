//! Constant folding with exactly the IR's semantics (docs/ir.md; the same
//! rules as the cpu device's `ops.rs`, which the compiler cannot depend on:
//! integer `x / 0 == 0`, `x % 0 == x`, `MIN / -1 == MIN`, shift amounts
//! modulo the width, IEEE floats with minNum/maxNum, saturating float → int
//! conversion with NaN → 0).
//!
//! Words are never folded: `ref`, `word`, `patch`, `state.*`, loads and `get`
//! are not constants, and an operation with a `word` operand or result is
//! left alone even when its operands look constant (DESIGN §8).

use super::{renumber_all, PassError};
use relok_ir::{BinaryOp, Block, CmpOp, Function, Module, Op, Scalar, StmtKind, Type, UnaryOp, Value};
use std::collections::HashMap;

/// Folds operations on constants and `if`s on constant conditions in every
/// function; returns how many it folded.
pub fn fold(module: &mut Module) -> Result<usize, PassError> {
    let mut n = 0;
    let ids: Vec<_> = module.funcs.keys().collect();
    for id in ids {
        let f = &mut module.funcs[id];
        let mut body = std::mem::take(&mut f.body);
        let mut consts = HashMap::new();
        n += fold_block(f, &mut body, &mut consts);
        f.body = body;
    }
    renumber_all(module)?;
    Ok(n)
}

fn scalar(f: &Function, v: Value) -> Option<Scalar> {
    match f.values.get(v).map(|d| &d.ty) {
        Some(Type::Scalar(s)) if *s != Scalar::Word => Some(*s),
        _ => None,
    }
}

fn fold_block(f: &Function, block: &mut Block, consts: &mut HashMap<Value, u64>) -> usize {
    let mut n = 0;
    let mut out = Vec::with_capacity(block.len());
    for mut s in std::mem::take(block) {
        match &mut s.kind {
            StmtKind::Let { result, op } => {
                if let Op::Const(bits) = op {
                    if scalar(f, *result).is_some() {
                        consts.insert(*result, *bits);
                    }
                } else if let Some(bits) = eval(f, op, *result, consts) {
                    *op = Op::Const(bits);
                    consts.insert(*result, bits);
                    n += 1;
                }
            }
            StmtKind::If { cond, then_body, else_body } => {
                if let Some(&c) = consts.get(cond) {
                    let mut taken = std::mem::take(if c != 0 { then_body } else { else_body });
                    n += 1 + fold_block(f, &mut taken, consts);
                    out.extend(taken);
                    continue;
                }
                n += fold_block(f, then_body, consts);
                n += fold_block(f, else_body, consts);
            }
            StmtKind::Loop(body) => n += fold_block(f, body, consts),
            _ => {}
        }
        out.push(s);
    }
    *block = out;
    n
}

/// The bits of `op` (defining `result` in `f`) when every operand is a known
/// constant (`consts`) and nothing involved is a word or a pointer; `None`
/// when it cannot or must not be folded.
pub fn eval(f: &Function, op: &Op, result: Value, consts: &HashMap<Value, u64>) -> Option<u64> {
    let to = scalar(f, result)?;
    let c = |v: Value| -> Option<(Scalar, u64)> { Some((scalar(f, v)?, *consts.get(&v)?)) };
    match *op {
        Op::Unary(u, a) => {
            let (ty, a) = c(a)?;
            Some(unary(u, ty, a))
        }
        Op::Binary(b, x, y) => {
            let ((ty, x), (_, y)) = (c(x)?, c(y)?);
            Some(binary(b, ty, x, y))
        }
        Op::Compare(op, x, y) => {
            let ((ty, x), (_, y)) = (c(x)?, c(y)?);
            Some(compare(op, ty, x, y))
        }
        Op::Select(cond, x, y) => {
            let ((_, cond), (_, x), (_, y)) = (c(cond)?, c(x)?, c(y)?);
            Some(if cond != 0 { x } else { y })
        }
        Op::Convert(a) => {
            let (from, a) = c(a)?;
            Some(convert(from, to, a))
        }
        Op::Bitcast(a) => {
            let (from, a) = c(a)?;
            (from.size() == to.size()).then_some(a)
        }
        _ => None,
    }
}

fn f32_of(x: u64) -> f32 {
    f32::from_bits(x as u32)
}
fn f64_of(x: u64) -> f64 {
    f64::from_bits(x)
}
fn of_f32(x: f32) -> u64 {
    u64::from(x.to_bits())
}
fn of_f64(x: f64) -> u64 {
    x.to_bits()
}
fn low32(x: u64) -> u64 {
    x & 0xffff_ffff
}

/// `op a` at type `ty`, canonical bits.
pub(crate) fn unary(op: UnaryOp, ty: Scalar, a: u64) -> u64 {
    match (op, ty) {
        (UnaryOp::Neg, Scalar::I32 | Scalar::U32) => low32(a.wrapping_neg()),
        (UnaryOp::Neg, Scalar::F32) => a ^ 0x8000_0000,
        (UnaryOp::Neg, Scalar::F64) => a ^ (1 << 63),
        (UnaryOp::Neg, _) => a.wrapping_neg(),
        (UnaryOp::Not, Scalar::Bool) => a ^ 1,
        (UnaryOp::Not, Scalar::I32 | Scalar::U32) => low32(!a),
        (UnaryOp::Not, _) => !a,
        (UnaryOp::Abs, Scalar::I32) => u64::from((a as i32).wrapping_abs() as u32),
        (UnaryOp::Abs, Scalar::I64) => (a as i64).wrapping_abs() as u64,
        (UnaryOp::Abs, Scalar::F32) => a & 0x7fff_ffff,
        (UnaryOp::Abs, Scalar::F64) => a & !(1 << 63),
        (UnaryOp::Abs, _) => a,
        (UnaryOp::Sqrt, Scalar::F32) => of_f32(f32_of(a).sqrt()),
        (UnaryOp::Sqrt, Scalar::F64) => of_f64(f64_of(a).sqrt()),
        (UnaryOp::Sqrt, _) => a,
    }
}

macro_rules! int_binary {
    ($op:expr, $a:expr, $b:expr, $t:ty, $ut:ty) => {{
        let (a, b): ($t, $t) = ($a, $b);
        let bits = <$t>::BITS;
        let r: $t = match $op {
            BinaryOp::Add => a.wrapping_add(b),
            BinaryOp::Sub => a.wrapping_sub(b),
            BinaryOp::Mul => a.wrapping_mul(b),
            BinaryOp::Div => {
                if b == 0 {
                    0
                } else {
                    a.wrapping_div(b)
                }
            }
            BinaryOp::Rem => {
                if b == 0 {
                    a
                } else {
                    a.wrapping_rem(b)
                }
            }
            BinaryOp::Min => a.min(b),
            BinaryOp::Max => a.max(b),
            BinaryOp::And => a & b,
            BinaryOp::Or => a | b,
            BinaryOp::Xor => a ^ b,
            BinaryOp::Shl => a.wrapping_shl((b as $ut as u32) % bits),
            BinaryOp::Shr => a.wrapping_shr((b as $ut as u32) % bits),
        };
        r as $ut as u64
    }};
}

/// `op a, b` at type `ty`, canonical bits.
pub(crate) fn binary(op: BinaryOp, ty: Scalar, a: u64, b: u64) -> u64 {
    match ty {
        Scalar::I32 => int_binary!(op, a as u32 as i32, b as u32 as i32, i32, u32),
        Scalar::U32 => int_binary!(op, a as u32, b as u32, u32, u32),
        Scalar::I64 => int_binary!(op, a as i64, b as i64, i64, u64),
        Scalar::U64 | Scalar::Word => int_binary!(op, a, b, u64, u64),
        Scalar::Bool => match op {
            BinaryOp::And => a & b,
            BinaryOp::Or => a | b,
            BinaryOp::Xor => a ^ b,
            _ => int_binary!(op, a, b, u64, u64) & 1,
        },
        Scalar::F32 => {
            let (x, y) = (f32_of(a), f32_of(b));
            match op {
                BinaryOp::Add => of_f32(x + y),
                BinaryOp::Sub => of_f32(x - y),
                BinaryOp::Mul => of_f32(x * y),
                BinaryOp::Div => of_f32(x / y),
                BinaryOp::Rem => of_f32(x % y),
                BinaryOp::Min => of_f32(x.min(y)),
                BinaryOp::Max => of_f32(x.max(y)),
                _ => low32(int_binary!(op, a, b, u64, u64)),
            }
        }
        Scalar::F64 => {
            let (x, y) = (f64_of(a), f64_of(b));
            match op {
                BinaryOp::Add => of_f64(x + y),
                BinaryOp::Sub => of_f64(x - y),
                BinaryOp::Mul => of_f64(x * y),
                BinaryOp::Div => of_f64(x / y),
                BinaryOp::Rem => of_f64(x % y),
                BinaryOp::Min => of_f64(x.min(y)),
                BinaryOp::Max => of_f64(x.max(y)),
                _ => int_binary!(op, a, b, u64, u64),
            }
        }
    }
}

fn cmp_ord<T: PartialOrd>(op: CmpOp, a: T, b: T) -> bool {
    match op {
        CmpOp::Eq => a == b,
        CmpOp::Ne => a != b,
        CmpOp::Lt => a < b,
        CmpOp::Le => a <= b,
        CmpOp::Gt => a > b,
        CmpOp::Ge => a >= b,
    }
}

/// `op a, b` on operands of type `ty`: 0 or 1.
pub(crate) fn compare(op: CmpOp, ty: Scalar, a: u64, b: u64) -> u64 {
    u64::from(match ty {
        Scalar::I32 => cmp_ord(op, a as u32 as i32, b as u32 as i32),
        Scalar::I64 => cmp_ord(op, a as i64, b as i64),
        Scalar::F32 => cmp_ord(op, f32_of(a), f32_of(b)),
        Scalar::F64 => cmp_ord(op, f64_of(a), f64_of(b)),
        _ => cmp_ord(op, a, b),
    })
}

enum Num {
    Int(i128),
    F32(f32),
    F64(f64),
}

/// `convert a` from `from` to `to` (Rust `as`: float → int truncates and
/// saturates, NaN gives 0; `bool` from `!= 0`).
pub(crate) fn convert(from: Scalar, to: Scalar, a: u64) -> u64 {
    let n = match from {
        Scalar::I32 => Num::Int(i128::from(a as u32 as i32)),
        Scalar::I64 => Num::Int(i128::from(a as i64)),
        Scalar::F32 => Num::F32(f32_of(a)),
        Scalar::F64 => Num::F64(f64_of(a)),
        Scalar::Bool | Scalar::U32 | Scalar::U64 | Scalar::Word => Num::Int(i128::from(a)),
    };
    match (n, to) {
        (Num::Int(v), Scalar::Bool) => u64::from(v != 0),
        (Num::F32(x), Scalar::Bool) => u64::from(x != 0.0),
        (Num::F64(x), Scalar::Bool) => u64::from(x != 0.0),
        (Num::Int(v), Scalar::I32) => u64::from(v as i32 as u32),
        (Num::Int(v), Scalar::U32) => u64::from(v as u32),
        (Num::Int(v), Scalar::I64) => v as i64 as u64,
        (Num::Int(v), Scalar::U64 | Scalar::Word) => v as u64,
        (Num::Int(v), Scalar::F32) => of_f32(v as f32),
        (Num::Int(v), Scalar::F64) => of_f64(v as f64),
        (Num::F32(x), Scalar::I32) => u64::from(x as i32 as u32),
        (Num::F32(x), Scalar::U32) => u64::from(x as u32),
        (Num::F32(x), Scalar::I64) => x as i64 as u64,
        (Num::F32(x), Scalar::U64 | Scalar::Word) => x as u64,
        (Num::F32(x), Scalar::F32) => of_f32(x),
        (Num::F32(x), Scalar::F64) => of_f64(f64::from(x)),
        (Num::F64(x), Scalar::I32) => u64::from(x as i32 as u32),
        (Num::F64(x), Scalar::U32) => u64::from(x as u32),
        (Num::F64(x), Scalar::I64) => x as i64 as u64,
        (Num::F64(x), Scalar::U64 | Scalar::Word) => x as u64,
        (Num::F64(x), Scalar::F32) => of_f32(x as f32),
        (Num::F64(x), Scalar::F64) => of_f64(x),
    }
}
