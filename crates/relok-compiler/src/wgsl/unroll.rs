//! Unrolling innermost loops, so long loops finish on llvmpipe (docs/wgpu.md,
//! "Long loops").
//!
//! Mesa's llvmpipe (lavapipe, the Vulkan driver CI runs wgpu on) keeps one
//! counter per shader invocation (per SIMD batch of invocations), set to
//! 65 535 on entry and decremented at the end of every iteration of every
//! loop; when it reaches zero every loop exits after its current
//! iteration, and the shader goes on as if the loop had ended
//! (`lp_exec_endloop` in gallivm). A counting loop to 1 000 000 returns
//! 65 535 there, and two loops of 40 000 iterations one after the other
//! stop the second at 25 534: silently wrong results.
//!
//! The limit counts the loop's back edges, not the work in them, so the
//! writer emits an innermost loop (one without a nested loop, a barrier
//! or a call, a throw's excepted) as [`copies`] copies of its body in one
//! WGSL `loop`: each
//! back edge runs that many IR iterations. A copy is a compound statement
//! (its `let`s are its own); `break` and `return` keep their meaning; a
//! `continue` in any copy but the last sets a flag and the statements after
//! it run only while the flag is clear ([`may_continue`]), so control
//! reaches the next copy — the next iteration. The last copy keeps WGSL's
//! `continue`. The copy count shrinks as the body grows, so code size stays
//! within [`BUDGET`] statements per loop.
//!
//! A loop the device would still end early is reported, never silent:
//! `relok_iterations` (one per invocation, as llvmpipe's counter) holds
//! what the invocation has cost the counter, paid in advance. llvmpipe
//! runs every statement of a region for a SIMD batch, the lanes that do
//! not take a branch (or that left by `break`, `continue` or `return`)
//! masked off, so each loop a region holds costs at least one iteration
//! (and its nested loops one each) whether it runs or not; more only when
//! it goes round. So a kernel starts by paying for a first pass through
//! every loop in its body, and every back edge (a loop's `continuing`)
//! pays for the next iteration and a first pass through the loops of its
//! body ([`FuncCx::back_edge`]). The loops are counted as they are
//! written: the IR's, the writer's own (a float atomic, a general
//! compare-and-swap; `FuncCx::open_loop`), the helpers' (`Helper::loops`:
//! their loops count their back edges themselves) and those of the device
//! functions called (`Writer::function_loops`). A compare-and-swap from 0
//! to 1, the exception record's claim, is `atomicMax`, without a loop, so
//! a loop with bounds checks in its body still unrolls.
//!
//! At a back edge whose count passes the budget ([`LOOP_BUDGET_OVERRIDE`],
//! which the wgpu device sets to llvmpipe's limit there and leaves at
//! `u32::MAX` elsewhere) an IR loop sets `relok_truncated` and leaves, as
//! llvmpipe would, and after the loop `relok_loop_limit` records
//! [`LOOP_LIMIT_MESSAGE`] ([`crate::fault`]) in the exception record,
//! which the device reports as a fault. Once set, the flag ends every later
//! loop after one iteration, as llvmpipe's exhausted counter does. The
//! count can only run ahead of llvmpipe's (a fault a little early, never
//! late) for a loop every invocation of a SIMD batch runs alike; llvmpipe
//! counts a batch's iterations, so invocations of one batch that diverge
//! over different loops can still exceed its limit unseen (docs/wgpu.md).

use crate::fault::{LOOP_BUDGET_MESSAGE, LOOP_LIMIT_MESSAGE};
use relok_ir::{Block, FuncId, Op, Stmt, StmtKind};
use std::collections::HashMap;

/// Most copies of one body.
pub(crate) const MAX_COPIES: usize = 16;
/// Statements (counted through nested `if`s) all copies of a body may
/// hold together.
pub(crate) const BUDGET: usize = 512;

/// How many copies of `body`, a loop's body, to emit: 1 (no unrolling)
/// when it holds a loop, a barrier or a call (other than of one of
/// `throws`, the runtime library's throws: `super::throws`, which hold no
/// loop or barrier), or is too large to copy.
pub(crate) fn copies(body: &Block, throws: &HashMap<FuncId, &'static str>) -> usize {
    let mut size = 0;
    if !copyable(body, throws, &mut size) {
        return 1;
    }
    (BUDGET / size.max(1)).clamp(1, MAX_COPIES)
}

/// Whether `b` can be copied (no loop, barrier or call but of `throws`);
/// counts its statements into `size`.
fn copyable(b: &[Stmt], throws: &HashMap<FuncId, &'static str>, size: &mut usize) -> bool {
    b.iter().all(|s| {
        *size += 1;
        match &s.kind {
            StmtKind::Call(g, _) => throws.contains_key(g),
            StmtKind::Loop(_) | StmtKind::Barrier | StmtKind::Let { op: Op::Call(..), .. } => false,
            StmtKind::If { then_body, else_body, .. } => {
                copyable(then_body, throws, size) && copyable(else_body, throws, size)
            }
            _ => true,
        }
    })
}

/// Whether `s` (in a copyable body) contains a `continue`.
pub(crate) fn may_continue(s: &Stmt) -> bool {
    match &s.kind {
        StmtKind::Continue => true,
        StmtKind::If { then_body, else_body, .. } => then_body.iter().chain(else_body).any(may_continue),
        _ => false,
    }
}

/// The override constant that holds the device's loop limit: iterations of
/// all loops of one invocation together (the wgpu device sets 65 535 on
/// llvmpipe, `u32::MAX` elsewhere).
pub const LOOP_BUDGET_OVERRIDE: &str = "relok_loop_budget";

/// What every module declares after the block shape: the budget (the
/// device sets it for every pipeline).
pub(crate) fn budget_declaration() -> String {
    format!("override {LOOP_BUDGET_OVERRIDE}: u32 = 4294967295u;\n")
}

/// What a module with loops declares: the per-invocation
/// iteration count and whether a loop was ended by the budget, and
/// `relok_loop_limit`, which records the fault in the exception record
/// (claiming its flag like a throw, [`super::record_fault`]; later claims
/// fail).
/// In checked mode the message says which bound ended the loop: the
/// device's limit ([`LOOP_LIMIT_MESSAGE`]) or the budget
/// ([`LOOP_BUDGET_MESSAGE`], of [`crate::fault::CHECKED_LOOP_BUDGET`]).
pub(crate) fn declarations(checked: bool) -> String {
    let limit = LOOP_LIMIT_MESSAGE as u32;
    let lo = if checked {
        format!("select({}u, {limit}u, relok_iterations >= {LOOP_BUDGET_OVERRIDE})", LOOP_BUDGET_MESSAGE as u32)
    } else {
        format!("{limit}u")
    };
    let hi = (LOOP_LIMIT_MESSAGE >> 32) as u32;
    debug_assert_eq!(hi, (LOOP_BUDGET_MESSAGE >> 32) as u32);
    let mut s = "var<private> relok_iterations: u32;\nvar<private> relok_truncated: bool;\n".to_owned();
    if checked {
        // IR iterations (an unrolled back edge runs several), for the budget.
        s.push_str("var<private> relok_steps: u32;\n");
    }
    s.push('\n');
    s.push_str("fn relok_loop_limit(b: vec3<u32>, t: vec3<u32>) {\n");
    s.push_str(&super::record_fault(&lo, &format!("{hi}u")));
    s.push_str("}\n\n");
    s
}
