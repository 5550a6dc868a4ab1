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
//! Values are SSA, so a fact holds wherever its values are in scope; facts
//! learnt in a block end with it. Words are opaque (docs/design.md §8): a
//! comparison with a `word` operand is never decided from another
//! comparison (only its own `bool`, on the path that tested it).

use super::{PassError, renumber_all};
use relok_ir::{Block, CmpOp, Function, Module, Op, Scalar, StmtKind, Type, Value, falls_through};
use std::collections::HashMap;

/// Resolves the `if`s and comparisons whose outcome a dominating condition
/// decides, in every function; returns how many.
pub fn known_conditions(module: &mut Module) -> Result<usize, PassError> {
    let mut n = 0;
    let ids: Vec<_> = module.funcs.keys().collect();
    for id in ids {
        let f = &mut module.funcs[id];
        let mut body = std::mem::take(&mut f.body);
        let mut cx = Facts { compares: HashMap::new(), known: Vec::new() };
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
                        if let Some(t) = self.truth(f, *result) {
                            *op = Op::Const(u64::from(t));
                            n += 1;
                        }
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
        let query = self.compares.get(&v).copied();
        self.known.iter().rev().find_map(|&(k, t)| {
            if k == v {
                return Some(t);
            }
            let fact = self.compares.get(&k)?;
            implied(f, *fact, t, query?)
        })
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
