//! Conditions known where the code is (a dominating guard): inside `if c`
//! the condition `c` is true, inside its `else` false, and after an `if`
//! whose one branch never falls through (it ends in `exit`, `return`,
//! `break` or `continue`, as an inlined bounds check's failure path does)
//! the rest of the block knows the other branch was taken. An `if` whose
//! condition is known this way is replaced by the branch it takes, and a
//! comparison whose result is known becomes a constant.
//!
//! A comparison is known from a known one over the same two values: the
//! same comparison (operands in either order: `lt a, b` is `gt b, a`), or
//! its negation (`eq`/`ne` for any type; `lt`/`ge` and `le`/`gt` for
//! integers and pointers only, since a NaN makes both of a float pair
//! false). So Rust's `if i < x.len() { x[i] }` loses its bounds check
//! (`ge i, len` is the negation of the guard), and a second check of the
//! same index against the same length (`y[i] = a * x[i] + y[i]`) is
//! dropped after the first.
//!
//! A comparison of two `u32`s is also known from their ranges, found from
//! what defines them: constants, the builtins (a `thread_id` is below the
//! kernel's block shape, [`relok_ir::Function::block`], or else below the
//! largest block any device launches), and `add`, `sub`, `mul`, `div`,
//! `rem`, `min`, `max`, `and`, shifts by a constant and `select` of values
//! with ranges, where the result cannot wrap around. So the bounds check of
//! a shared tile `tile[ty * 16 + kk]` (256 elements, 16 × 16 threads, `kk`
//! a constant after unrolling) is proven and dropped. A `sub a, b` where
//! `a >= b` is known (inside `if t >= offset`) is at most `a`.
//!
//! Values are SSA, so a fact holds wherever its values are in scope; facts
//! learnt in a block end with it. Words are opaque (docs/design.md §8): a
//! comparison with a `word` operand is never decided from another
//! comparison (only its own `bool`, on the path that tested it).

use super::{PassError, renumber_all};
use relok_ir::{
    BinaryOp, Block, Builtin, CmpOp, Function, MAX_BLOCK, Module, Op, Scalar, StmtKind, Type, Value, falls_through,
    walk_stmts,
};
use std::collections::HashMap;

/// Resolves the `if`s and comparisons whose outcome a dominating condition
/// decides, in every function; returns how many.
pub fn known_conditions(module: &mut Module) -> Result<usize, PassError> {
    let mut n = 0;
    let ids: Vec<_> = module.funcs.keys().collect();
    for id in ids {
        let f = &mut module.funcs[id];
        let ranges = ranges(f);
        let mut body = std::mem::take(&mut f.body);
        let mut cx = Facts { compares: HashMap::new(), known: Vec::new(), ranges };
        n += cx.block(f, &mut body);
        f.body = body;
    }
    renumber_all(module)?;
    Ok(n)
}

/// A comparison of two values.
type Compare = (CmpOp, Value, Value);

struct Facts {
    /// The comparison each `bool` value was defined by.
    compares: HashMap<Value, Compare>,
    /// What is known here: a `bool` value's truth.
    known: Vec<(Value, bool)>,
    /// The `u32` values' ranges ([`ranges`]).
    ranges: HashMap<Value, Range>,
}

impl Facts {
    fn block(&mut self, f: &Function, block: &mut Block) -> usize {
        let scope = self.known.len();
        let mut n = 0;
        let mut out = Vec::with_capacity(block.len());
        for mut s in std::mem::take(block) {
            match &mut s.kind {
                StmtKind::Let { result, op } => {
                    if let Op::Compare(c, a, b) = *op
                        && comparable(f, a)
                        && comparable(f, b)
                    {
                        self.compares.insert(*result, (c, a, b));
                        let by_range = || by_ranges(c, *self.ranges.get(&a)?, *self.ranges.get(&b)?);
                        if let Some(t) = self.truth(f, *result).or_else(by_range) {
                            *op = Op::Const(u64::from(t));
                            n += 1;
                        }
                    }
                    // `a - b` where `a >= b` is known does not wrap: at
                    // most `a` (scan's `buf[t - offset]` inside `if t >=
                    // offset`). The value is defined here, under the
                    // guard, so the range holds wherever it is used.
                    if let Op::Binary(BinaryOp::Sub, a, b) = *op
                        && f.values.get(*result).map(|d| &d.ty) == Some(&Type::Scalar(Scalar::U32))
                        && self.holds(f, (CmpOp::Ge, a, b)) == Some(true)
                    {
                        let hi = self.ranges.get(&a).map_or(u64::from(u32::MAX), |r| r.1);
                        let (lo, known_hi) = self.ranges.get(result).copied().unwrap_or((0, hi));
                        self.ranges.insert(*result, (lo, hi.min(known_hi)));
                    }
                }
                StmtKind::If { cond, then_body, else_body } => {
                    let cond = *cond;
                    if let Some(t) = self.truth(f, cond) {
                        let mut taken = std::mem::take(if t { then_body } else { else_body });
                        n += 1 + self.block_knowing(f, &mut taken, None);
                        out.extend(taken);
                        continue;
                    }
                    n += self.block_knowing(f, then_body, Some((cond, true)));
                    n += self.block_knowing(f, else_body, Some((cond, false)));
                    match (falls_through(then_body), falls_through(else_body)) {
                        (false, true) => self.known.push((cond, false)),
                        (true, false) => self.known.push((cond, true)),
                        _ => {}
                    }
                }
                StmtKind::Loop(body) => n += self.block_knowing(f, body, None),
                _ => {}
            }
            out.push(s);
        }
        *block = out;
        self.known.truncate(scope);
        n
    }

    /// [`Facts::block`] with `fact` known inside it.
    fn block_knowing(&mut self, f: &Function, block: &mut Block, fact: Option<(Value, bool)>) -> usize {
        let scope = self.known.len();
        self.known.extend(fact);
        let n = self.block(f, block);
        self.known.truncate(scope);
        n
    }

    /// Whether `v` (a `bool`) is known true or false here.
    fn truth(&self, f: &Function, v: Value) -> Option<bool> {
        match self.compares.get(&v) {
            // A comparison is known from any fact over its two values
            // (its own `bool` among them).
            Some(&query) => self.holds(f, query),
            None => self.known.iter().rev().find_map(|&(k, t)| (k == v).then_some(t)),
        }
    }

    /// Whether the comparison `query` is known true or false here.
    fn holds(&self, f: &Function, query: Compare) -> Option<bool> {
        self.known.iter().rev().find_map(|&(k, t)| implied(f, *self.compares.get(&k)?, t, query))
    }
}

/// What `fact` being `t` says of `query`, when they compare the same two
/// values.
fn implied(f: &Function, fact: Compare, t: bool, query: Compare) -> Option<bool> {
    let (fc, fa, fb) = fact;
    let (qc, qa, qb) = if (query.1, query.2) == (fa, fb) {
        query
    } else if (query.2, query.1) == (fa, fb) {
        (swapped(query.0), query.2, query.1)
    } else {
        return None;
    };
    debug_assert!((qa, qb) == (fa, fb));
    if qc == fc {
        return Some(t);
    }
    let ordered = !matches!(f.values[fa].ty, Type::Scalar(Scalar::F32 | Scalar::F64));
    let negation = match qc {
        CmpOp::Eq => Some(CmpOp::Ne),
        CmpOp::Ne => Some(CmpOp::Eq),
        CmpOp::Lt if ordered => Some(CmpOp::Ge),
        CmpOp::Ge if ordered => Some(CmpOp::Lt),
        CmpOp::Le if ordered => Some(CmpOp::Gt),
        CmpOp::Gt if ordered => Some(CmpOp::Le),
        _ => None,
    };
    (negation == Some(fc)).then_some(!t)
}

/// `op` with its operands swapped: `a op b` is `b swapped(op) a`.
fn swapped(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Lt => CmpOp::Gt,
        CmpOp::Gt => CmpOp::Lt,
        CmpOp::Le => CmpOp::Ge,
        CmpOp::Ge => CmpOp::Le,
        other => other,
    }
}

/// Whether `v` may take part in a known comparison: anything but a word.
fn comparable(f: &Function, v: Value) -> bool {
    f.values.get(v).is_some_and(|d| d.ty != Type::Scalar(Scalar::Word))
}

/// The values a `u32` may take: `lo..=hi`.
pub(crate) type Range = (u64, u64);

/// The ranges of `f`'s `u32` values that are narrower than all of `u32`,
/// from their definitions (SSA: each operand's range is known before its
/// uses, in text order).
pub(crate) fn ranges(f: &Function) -> HashMap<Value, Range> {
    let mut out = HashMap::new();
    let block = |axis: usize| f.block.map_or(MAX_BLOCK[axis], |b| b[axis]);
    // The largest grid any device launches, per axis.
    const GRID: [u64; 3] = [i32::MAX as u64, 65535, 65535];
    walk_stmts(&f.body, &mut |s| {
        let StmtKind::Let { result, op } = &s.kind else { return };
        if f.values.get(*result).map(|d| &d.ty) != Some(&Type::Scalar(Scalar::U32)) {
            return;
        }
        let full = (0, u64::from(u32::MAX));
        let of = |v: &Value| out.get(v).copied().unwrap_or(full);
        let fits = |r: Range| (r.1 <= full.1).then_some(r);
        let range = match op {
            Op::Const(c) => Some((*c, *c)),
            Op::Builtin(b) => {
                let axis = b.axis() as usize;
                let threads = u64::from(block(axis));
                Some(match b {
                    Builtin::ThreadId(_) => (0, threads - 1),
                    Builtin::BlockDim(_) if f.block.is_some() => (threads, threads),
                    Builtin::BlockDim(_) => (1, threads),
                    Builtin::BlockId(_) => (0, GRID[axis] - 1),
                    Builtin::GridDim(_) => (1, GRID[axis]),
                })
            }
            Op::Binary(op, a, b) => {
                let ((alo, ahi), (blo, bhi)) = (of(a), of(b));
                let shift = (blo == bhi).then_some(blo % 32);
                match op {
                    BinaryOp::Add => fits((alo + blo, ahi + bhi)),
                    BinaryOp::Sub => (alo >= bhi).then(|| (alo - bhi, ahi - blo)),
                    BinaryOp::Mul => fits((alo * blo, ahi * bhi)),
                    // `x / 0 == 0` and `x % 0 == x` (the IR's rules).
                    BinaryOp::Div if blo > 0 => Some((alo / bhi, ahi / blo)),
                    BinaryOp::Div => Some((0, ahi)),
                    BinaryOp::Rem if blo > 0 => Some((0, ahi.min(bhi - 1))),
                    BinaryOp::Rem => Some((0, ahi)),
                    BinaryOp::Min => Some((alo.min(blo), ahi.min(bhi))),
                    BinaryOp::Max => Some((alo.max(blo), ahi.max(bhi))),
                    BinaryOp::And => Some((0, ahi.min(bhi))),
                    BinaryOp::Shr => shift.map(|k| (alo >> k, ahi >> k)),
                    BinaryOp::Shl => shift.and_then(|k| fits((alo << k, ahi << k))),
                    _ => None,
                }
            }
            Op::Select(_, a, b) => {
                let ((alo, ahi), (blo, bhi)) = (of(a), of(b));
                Some((alo.min(blo), ahi.max(bhi)))
            }
            _ => None,
        };
        if let Some(r) = range
            && r != full
        {
            out.insert(*result, r);
        }
    });
    out
}

/// `a c b` for every `a` in range `a` and `b` in range `b`, where all of
/// them agree.
fn by_ranges(c: CmpOp, (alo, ahi): Range, (blo, bhi): Range) -> Option<bool> {
    let (always, never) = match c {
        CmpOp::Lt => (ahi < blo, alo >= bhi),
        CmpOp::Le => (ahi <= blo, alo > bhi),
        CmpOp::Gt => (alo > bhi, ahi <= blo),
        CmpOp::Ge => (alo >= bhi, ahi < blo),
        CmpOp::Eq => (alo == ahi && (alo, ahi) == (blo, bhi), ahi < blo || bhi < alo),
        CmpOp::Ne => (ahi < blo || bhi < alo, alo == ahi && (alo, ahi) == (blo, bhi)),
    };
    if always {
        Some(true)
    } else if never {
        Some(false)
    } else {
        None
    }
}
