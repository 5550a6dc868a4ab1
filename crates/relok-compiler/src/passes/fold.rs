//! Constant folding with exactly the IR's semantics (docs/ir.md; the same
//! rules as the cpu device's `ops.rs`, which the compiler cannot depend on:
//! integer `x / 0 == 0`, `x % 0 == x`, `MIN / -1 == MIN`, shift amounts
//! modulo the width, IEEE floats with minNum/maxNum, saturating float → int
//! conversion with NaN → 0).
//!
//! `block_dim` is the kernel's block shape where it has one
//! ([`relok_ir::Function::block`]).
//!
//! A difference of two integers that are one value plus constants folds
//! too (`(a + 3) - a`, `(i + 4) - (i + 1)`: the length of a sub-slice
//! `&x[i..i + 4]`), exactly, as integers wrap ([`Offsets`]).
//!
//! Words are never folded: `ref`, `word`, `patch`, `state.*`, loads and `get`
//! are not constants, and an operation with a `word` operand or result is
//! left alone even when its operands look constant (docs/design.md §8).

use super::{PassError, renumber_all};
use relok_ir::eval::{binary, compare, convert, math, unary};
use relok_ir::{BinaryOp, Block, Builtin, Function, Module, Op, Scalar, StmtKind, Type, Value};
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
        n += fold_block(f, &mut body, &mut consts, &mut Offsets::default());
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

/// Integer values known as another value plus a constant (`a + 3`,
/// `a - 1`, `(a + 1) + 2`): each one's base and offset, so that the
/// difference of two of one base is the difference of their offsets.
#[derive(Default)]
struct Offsets(HashMap<Value, (Value, u64)>);

impl Offsets {
    /// `v` as `(base, offset)`: itself plus 0 unless recorded.
    fn of(&self, v: Value) -> (Value, u64) {
        self.0.get(&v).copied().unwrap_or((v, 0))
    }

    /// Records `result = op` when it is a base plus a constant; returns the
    /// constant it is when it is a difference of one base's values.
    fn record(&mut self, f: &Function, result: Value, op: &Op, consts: &HashMap<Value, u64>) -> Option<u64> {
        let Op::Binary(b, x, y) = *op else { return None };
        let ty = scalar(f, result).filter(|s| s.is_int())?;
        let offset = match (b, consts.get(&x), consts.get(&y)) {
            (BinaryOp::Add, None, Some(&c)) => (self.of(x), c, BinaryOp::Add),
            (BinaryOp::Add, Some(&c), None) => (self.of(y), c, BinaryOp::Add),
            (BinaryOp::Sub, None, Some(&c)) => (self.of(x), c, BinaryOp::Sub),
            (BinaryOp::Sub, None, None) => {
                let ((bx, ox), (by, oy)) = (self.of(x), self.of(y));
                return (bx == by).then(|| binary(BinaryOp::Sub, ty, ox, oy));
            }
            _ => return None,
        };
        let ((base, off), c, how) = offset;
        self.0.insert(result, (base, binary(how, ty, off, c)));
        None
    }
}

fn fold_block(f: &Function, block: &mut Block, consts: &mut HashMap<Value, u64>, offsets: &mut Offsets) -> usize {
    let mut n = 0;
    let mut out = Vec::with_capacity(block.len());
    for mut s in std::mem::take(block) {
        match &mut s.kind {
            StmtKind::Let { result, op } => {
                if let Op::Const(bits) = op {
                    if scalar(f, *result).is_some() {
                        consts.insert(*result, *bits);
                    }
                } else if let Some(bits) =
                    eval(f, op, *result, consts).or_else(|| offsets.record(f, *result, op, consts))
                {
                    *op = Op::Const(bits);
                    consts.insert(*result, bits);
                    n += 1;
                }
            }
            StmtKind::If { cond, then_body, else_body } => {
                if let Some(&c) = consts.get(cond) {
                    let mut taken = std::mem::take(if c != 0 { then_body } else { else_body });
                    n += 1 + fold_block(f, &mut taken, consts, offsets);
                    out.extend(taken);
                    continue;
                }
                n += fold_block(f, then_body, consts, offsets);
                n += fold_block(f, else_body, consts, offsets);
            }
            StmtKind::Loop(body) => n += fold_block(f, body, consts, offsets),
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
