//! Accesses a kernel's own guards prove in bounds, so that checked mode
//! (docs/cuda.md, docs/wgpu.md "Checked mode") need not check them again.
//!
//! A kernel's length parameter (`v3: u32 len(v2)`, [`relok_ir::LenParam`])
//! is at most the elements from `v2` to the end of its buffer: every device
//! that checks accesses checks that at launch. So where `lt i, v3` is known
//! true (inside `if lt i, v3 { … }`, or after `if ge i, v3 { … }` whose
//! body never falls through, as a Rust bounds check's report does), element
//! `i` of `v2` is in bounds, and a load, store or atomic of `v2[i]` needs no
//! check of its own. A Rust kernel's `x[i]` is such a guard and access: in
//! checked mode it is checked once, by Rust's check, instead of twice.
//!
//! [`InBounds`] is what both GPU writers keep while they write a function's
//! blocks in order: [`InBounds::enter`] / [`InBounds::leave`] around each block,
//! [`InBounds::branch`] for what an `if`'s branches know, [`InBounds::after`]
//! for what the rest of a block knows after an `if`.

use relok_ir::{Block, CmpOp, Function, Op, Scalar, Stmt, StmtKind, Type, Value, walk_stmts};
use std::collections::HashMap;

/// What the writer knows where it is: the `(index, pointer)` pairs whose
/// element is proven in bounds.
#[derive(Default)]
pub(crate) struct InBounds {
    /// Each `bool` defined by comparing a `u32` index with a length
    /// parameter: (index, the pointer the length counts, whether `true`
    /// means the index is below the length).
    tests: HashMap<Value, (Value, Value, bool)>,
    /// The `(index, pointer)` pairs known in bounds here.
    known: Vec<(Value, Value)>,
    /// `known`'s length at each open block's start.
    scopes: Vec<usize>,
}

impl InBounds {
    /// The guards of `f`: its comparisons of a `u32` with one of its length
    /// parameters.
    pub(crate) fn new(f: &Function) -> InBounds {
        let mut tests = HashMap::new();
        if f.lens.is_empty() {
            return InBounds::default();
        }
        walk_stmts(&f.body, &mut |s| {
            let StmtKind::Let { result, op: Op::Compare(op, a, b) } = &s.kind else { return };
            let u32_ = |v: Value| f.values.get(v).is_some_and(|d| d.ty == Type::Scalar(Scalar::U32));
            if !u32_(*a) || !u32_(*b) {
                return;
            }
            // `i < len` and `len > i` mean below; `i >= len`, `len <= i`
            // the opposite.
            let test = match (op, f.len_of(*a), f.len_of(*b)) {
                (CmpOp::Lt, _, Some(p)) => (*a, p, true),
                (CmpOp::Ge, _, Some(p)) => (*a, p, false),
                (CmpOp::Gt, Some(p), _) => (*b, p, true),
                (CmpOp::Le, Some(p), _) => (*b, p, false),
                _ => return,
            };
            tests.insert(*result, test);
        });
        InBounds { tests, known: Vec::new(), scopes: Vec::new() }
    }

    /// A block begins.
    pub(crate) fn enter(&mut self) {
        self.scopes.push(self.known.len());
    }

    /// The block [`InBounds::enter`] began ends: what it learnt is forgotten.
    pub(crate) fn leave(&mut self) {
        let n = self.scopes.pop().unwrap_or(0);
        self.known.truncate(n);
    }

    /// Notes, at the start of a branch of `if cond` (`then` or else), what
    /// taking it proves. Call it after [`InBounds::enter`] for that branch.
    pub(crate) fn branch(&mut self, cond: Value, then: bool) {
        if let Some(&(i, p, below)) = self.tests.get(&cond)
            && below == then
        {
            self.known.push((i, p));
        }
    }

    /// Notes, after `if cond { then_body } else { else_body }`, what the
    /// rest of the block knows: when one branch never falls through, that
    /// the other was taken.
    pub(crate) fn after(&mut self, cond: Value, then_body: &Block, else_body: &Block) {
        match (may_fall_through(then_body), may_fall_through(else_body)) {
            (false, true) => self.branch(cond, false),
            (true, false) => self.branch(cond, true),
            _ => {}
        }
    }

    /// Whether element `index` of the pointer parameter `ptr` is proven in
    /// bounds here.
    pub(crate) fn proves(&self, ptr: Value, index: Value) -> bool {
        self.known.contains(&(index, ptr))
    }
}

/// Whether control may leave `block` at its end. Stricter than
/// `relok_ir::falls_through`: a `loop` without a `break` counts as ending,
/// since on WGSL every loop is cut off at a budget and the code after it
/// runs (docs/wgpu.md, "Long loops"); only `exit`, `return`, `break` and
/// `continue` (or an `if` whose branches both end so) never fall through.
fn may_fall_through(block: &[Stmt]) -> bool {
    !block.iter().any(|s| match &s.kind {
        StmtKind::Exit | StmtKind::Return(_) | StmtKind::Break | StmtKind::Continue => true,
        StmtKind::If { then_body, else_body, .. } => !may_fall_through(then_body) && !may_fall_through(else_body),
        _ => false,
    })
}
