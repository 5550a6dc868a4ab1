//! Optimisation passes over verified source-stage modules (docs/design.md §4):
//! inlining, constant folding, conditions known from a dominating guard
//! ([`known_conditions`]), common-subexpression elimination, dead-code
//! elimination and the unrolling of loops with a constant trip count
//! ([`unroll`]).
//!
//! Every pass keeps references to host objects opaque (docs/design.md §2, §8): a
//! word's value is unknown until the kernel is loaded, so nothing computed
//! from `ref`, `word`, `patch`, `state.*` or a load is ever folded, and no
//! comparison, select or bitcast with a `word` operand is evaluated. CSE may
//! merge two `ref`s of the same host object (they give the same word).
//!
//! After every pass the values of each function are renumbered in definition
//! order ([`renumber`]), the canonical numbering the verifier demands.

mod cse;
mod dce;
pub(crate) mod facts;
pub(crate) mod fold;
mod inline;
#[cfg(test)]
mod tests;
mod unroll;

pub use cse::cse;
pub use dce::dce;
pub use facts::known_conditions;
pub use fold::{eval, fold};
pub use inline::{inline, inline_keeping};
pub use unroll::unroll;

use relok_ir::{Block, Function, Module, Op, Stmt, StmtKind, Value, ValueData, VerifyErrors};
use std::collections::HashMap;

/// What [`optimize`] did.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
pub struct PassStats {
    /// Call sites inlined.
    pub inlined: usize,
    /// Operations folded to constants, and `if`s on constants resolved
    /// (also those a dominating condition decides).
    pub folded: usize,
    /// Operations replaced by an earlier identical one.
    pub cse: usize,
    /// Statements removed as dead.
    pub removed: usize,
    /// Loops of constant trip count unrolled ([`unroll`]).
    pub unrolled: usize,
}

/// Why optimisation failed.
#[derive(Debug, thiserror::Error)]
pub enum PassError {
    /// The input module is not valid IR.
    #[error("input is not valid IR: {0}")]
    Verify(#[from] VerifyErrors),
    /// A device function calls itself, directly or not.
    #[error("recursive call through @{0}")]
    Recursion(String),
    /// A value is used without a definition (the input was not verified).
    #[error("@{func}: {value} is used but never defined")]
    Undefined {
        /// The function.
        func: String,
        /// The value.
        value: Value,
    },
    /// A pass produced invalid IR (a bug in the pass).
    #[error("pass {pass} produced invalid IR: {errors}")]
    Broken {
        /// The pass.
        pass: &'static str,
        /// What the verifier found.
        errors: VerifyErrors,
    },
}

/// Most rounds of fold → CSE → DCE that [`optimize`] runs.
pub const MAX_ROUNDS: usize = 8;

/// Verifies `module`, inlines every device function, then runs constant
/// folding, known conditions, CSE and DCE until nothing changes, unrolls the
/// loops of constant trip count and simplifies again (at most [`MAX_ROUNDS`]
/// rounds), and verifies the result.
pub fn optimize(module: &mut Module) -> Result<PassStats, PassError> {
    optimize_keeping(module, &[])
}

/// [`optimize`], but the device functions named in `keep` are not inlined
/// ([`inline_keeping`]).
pub fn optimize_keeping(module: &mut Module, keep: &[&str]) -> Result<PassStats, PassError> {
    relok_ir::verify(module)?;
    let mut stats = PassStats { inlined: inline_keeping(module, keep)?, ..PassStats::default() };
    check(module, "inline")?;
    simplify(module, &mut stats)?;
    // Loops whose trip count folding made constant, then again what the
    // copies' constants fold.
    stats.unrolled = unroll(module)?;
    check(module, "unroll")?;
    if stats.unrolled > 0 {
        simplify(module, &mut stats)?;
    }
    Ok(stats)
}

/// Rounds of fold, known conditions, CSE and DCE until nothing changes (at
/// most [`MAX_ROUNDS`]).
fn simplify(module: &mut Module, stats: &mut PassStats) -> Result<(), PassError> {
    for _ in 0..MAX_ROUNDS {
        let folded = fold(module)? + known_conditions(module)?;
        let merged = cse(module)?;
        let removed = dce(module)?;
        stats.folded += folded;
        stats.cse += merged;
        stats.removed += removed;
        if folded + merged + removed == 0 {
            break;
        }
    }
    check(module, "fold/cse/dce")
}

fn check(module: &Module, pass: &'static str) -> Result<(), PassError> {
    relok_ir::verify(module).map(drop).map_err(|errors| PassError::Broken { pass, errors })
}

/// Renumbers the values of `func` in definition order (parameters first,
/// then each `Let` in text order), dropping values no `Let` defines.
pub fn renumber(func: &mut Function) -> Result<(), PassError> {
    let mut map: HashMap<Value, Value> = HashMap::new();
    let mut values = relok_ir::Arena::<Value, ValueData>::new();
    for &p in &func.params {
        map.insert(p, values.push(func.values[p].clone()));
    }
    relok_ir::walk_stmts(&func.body, &mut |s| {
        if let StmtKind::Let { result, .. } = &s.kind {
            map.insert(*result, values.push(func.values[*result].clone()));
        }
    });
    let mut missing = None;
    let mut f = |v: Value| match map.get(&v) {
        Some(&n) => n,
        None => {
            missing.get_or_insert(v);
            v
        }
    };
    func.params = func.params.iter().map(|&p| f(p)).collect();
    for l in &mut func.lens {
        *l = relok_ir::LenParam { len: f(l.len), of: f(l.of) };
    }
    map_block(&mut func.body, &mut f, true);
    if let Some(value) = missing {
        return Err(PassError::Undefined { func: func.name.clone(), value });
    }
    func.values = values;
    Ok(())
}

/// Renumbers every function of `module`.
pub(crate) fn renumber_all(module: &mut Module) -> Result<(), PassError> {
    let ids: Vec<_> = module.funcs.keys().collect();
    for id in ids {
        renumber(&mut module.funcs[id])?;
    }
    Ok(())
}

/// Rewrites the values `stmt` itself reads (not those of nested blocks)
/// through `f`; with `results`, also the value a `Let` defines.
pub(crate) fn map_stmt(stmt: &mut Stmt, f: &mut impl FnMut(Value) -> Value, results: bool) {
    if let (true, StmtKind::Let { result, .. }) = (results, &mut stmt.kind) {
        *result = f(*result);
    }
    stmt.kind.for_each_operand_mut(|v| *v = f(*v));
}

/// [`map_stmt`] over `block` and its nested blocks.
pub(crate) fn map_block(block: &mut Block, f: &mut impl FnMut(Value) -> Value, results: bool) {
    relok_ir::walk_stmts_mut(block, &mut |s| map_stmt(s, f, results));
}

/// Calls `f` on every value `block` reads (nested blocks included).
pub(crate) fn for_each_use(block: &[Stmt], f: &mut impl FnMut(Value)) {
    relok_ir::walk_stmts(block, &mut |s| s.kind.for_each_operand(&mut *f));
}

/// Whether an operation computes its result from its operands alone, with no
/// effect and no read of memory or variables: such operations may be merged
/// (CSE) and removed when unused (DCE). The word-producing operations are
/// pure in this sense (the same word every time) but never folded.
pub(crate) fn is_pure(op: &Op) -> bool {
    match op {
        Op::Const(_)
        | Op::Unary(..)
        | Op::Binary(..)
        | Op::Compare(..)
        | Op::Select(..)
        | Op::Convert(_)
        | Op::Bitcast(_)
        | Op::Offset { .. }
        | Op::Elem { .. }
        | Op::Field { .. }
        | Op::VarAddr(_)
        | Op::ConstAddr(_)
        | Op::Builtin(_)
        | Op::Ref(_)
        | Op::WordPtr(_)
        | Op::State(_)
        | Op::BakedWord(_)
        | Op::Patch(_)
        | Op::Math(..) => true,
        Op::Get(_) | Op::Load { .. } | Op::Call(..) | Op::Atomic { .. } | Op::AtomicCas { .. } => false,
    }
}
