//! Constant folding with exactly the IR's semantics (docs/ir.md; the same
//! rules as the cpu device's `ops.rs`, which the compiler cannot depend on:
//! integer `x / 0 == 0`, `x % 0 == x`, `MIN / -1 == MIN`, shift amounts
//! modulo the width, IEEE floats with minNum/maxNum, saturating float → int
//! conversion with NaN → 0).
//!
//! `block_dim` is the kernel's block shape where it has one
//! ([`relok_ir::Function::block`]).
//!
//! Words are never folded: `ref`, `word`, `patch`, `state.*`, loads and `get`
//! are not constants, and an operation with a `word` operand or result is
//! left alone even when its operands look constant (docs/design.md §8).

use super::{PassError, renumber_all};
use relok_ir::eval::{binary, compare, convert, math, unary};
use relok_ir::{Block, Builtin, Function, Module, Op, Scalar, StmtKind, Type, Value};
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
            Some(compare(op, Some(ty), x, y))
        }
        Op::Select(cond, x, y) => {
            let ((_, cond), (_, x), (_, y)) = (c(cond)?, c(x)?, c(y)?);
            Some(if cond != 0 { x } else { y })
        }
        Op::Convert(a) => {
            let (from, a) = c(a)?;
            Some(convert(from, to, a))
        }
        // A kernel with a block shape is launched with that shape only.
        Op::Builtin(Builtin::BlockDim(axis)) => f.block.map(|b| u64::from(b[axis as usize])),
        Op::Bitcast(a) => {
            let (from, a) = c(a)?;
            (from.size() == to.size()).then_some(a)
        }
        // Only the exact functions: the others are calls into the math
        // library by now, and fold through its inlined code.
        Op::Math(m, ref args) => {
            let bits = args.iter().map(|&a| c(a).map(|(_, b)| b)).collect::<Option<Vec<u64>>>()?;
            math(m, to, &bits)
        }
        _ => None,
    }
}
