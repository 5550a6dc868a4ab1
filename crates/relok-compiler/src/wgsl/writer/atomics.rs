//! Atomics on integers: `atomic.cas` and `atomic.*` on `u32`/`i32` words,
//! and the 64-bit ones WGSL's 32-bit atomics can express exactly (the
//! float atomics are in `math`).

use super::{FuncCx, wgsl_ty, wide};
use crate::fault::Access;
use crate::wgsl::Error;
use relok_ir::{AtomicOp, EntityRef, Scalar, Value};

impl FuncCx<'_> {
    /// `atomic.cas`. 32-bit: a compare-exchange loop, or `atomicMax` for a
    /// swap from constant 0 to constant 1. 64-bit (WGSL has only
    /// 32-bit atomics): only when `expected` and `new` are constants with
    /// equal high halves `h`; then the high word is loaded first, and if it
    /// is not `h` the swap fails, returning (low, high) as loaded; else it is
    /// a 32-bit compare-exchange of the low word, returning (old low, `h`).
    /// Exact while no other operation changes the high word in between
    /// (true of the exception flag, whose high word stays 0: swaps from 0
    /// to 1 and an add of 1 write it).
    pub(super) fn cas(
        &mut self,
        v: Value,
        sc: Scalar,
        ptr: Value,
        index: Option<Value>,
        expected: Value,
        new: Value,
    ) -> Result<String, Error> {
        let b = self.base(ptr)?;
        let size = self.pointee(ptr)?.size().map_err(|e| self.unsupported(v, e.to_string()))?;
        let off = self.offset(ptr, index, size)?;
        let off = self.bounds_check(b, &off, sc.size(), Access::Atomic, Some((ptr, index)));
        let off = self.heap_guard(b, &off);
        let (a, atomic) = self.array(b);
        let ty = wgsl_ty(sc);
        if !atomic || !matches!(sc, Scalar::U32 | Scalar::I32 | Scalar::U64 | Scalar::I64) {
            return Err(self.unsupported(v, format!("a compare-and-swap on {sc} here")));
        }
        let (bits, e, n) = (self.temp(), self.temp(), self.temp());
        // The high half of a 64-bit swap's operands, when it is one.
        let high = if wide(sc) {
            let (Some(&eb), Some(&nb)) = (self.consts.get(&expected), self.consts.get(&new)) else {
                return Err(self.unsupported(
                    v,
                    "a 64-bit compare-and-swap whose operands are not constants with equal high halves",
                ));
            };
            if eb >> 32 != nb >> 32 {
                return Err(self.unsupported(
                    v,
                    "a 64-bit compare-and-swap whose operands are not constants with equal high halves",
                ));
            }
            let (h, hn) = (format!("{}u", eb >> 32), self.temp());
            self.line(format!("var {bits}: vec2<u32>;"));
            self.line(format!("let {e}: u32 = {}u;", eb as u32));
            self.line(format!("let {n}: u32 = {}u;", nb as u32));
            self.line(format!("let {hn}: u32 = atomicLoad(&{a}[(({off}) + 4u) >> 2u]);"));
            self.line(format!("if ({hn} != {h}) {{"));
            self.line(format!("    {bits} = vec2<u32>(atomicLoad(&{a}[({off}) >> 2u]), {hn});"));
            self.line("} else {".into());
            self.depth += 1;
            Some(h)
        } else {
            self.line(format!("var {bits}: u32;"));
            self.line(format!("let {e}: u32 = bitcast<u32>(v{});", expected.index()));
            self.line(format!("let {n}: u32 = bitcast<u32>(v{});", new.index()));
            None
        };
        let old = |low: &str| match &high {
            Some(h) => format!("vec2<u32>({low}, {h})"),
            None => low.to_owned(),
        };
        if self.consts.get(&expected) == Some(&0) && self.consts.get(&new) == Some(&1) {
            // A swap from 0 to 1 (a flag's claim) is `atomicMax(1)` for
            // every old value, and needs no loop: a loop counts against
            // llvmpipe's limit even where it does not run (docs/wgpu.md,
            // "Long loops").
            self.line(format!("{bits} = {};", old(&format!("atomicMax(&{a}[({off}) >> 2u], 1u)"))));
        } else {
            // A weak exchange may fail spuriously: retry while the old value
            // still equals the expected one.
            let mark = self.open_loop();
            self.line(format!("    let r = atomicCompareExchangeWeak(&{a}[({off}) >> 2u], {e}, {n});"));
            self.line(format!(
                "    if (r.exchanged || r.old_value != {e}) {{ {bits} = {}; break; }}",
                old("r.old_value")
            ));
            self.close_loop(mark);
        }
        if high.is_some() {
            self.depth -= 1;
            self.line("}".into());
            return Ok(bits);
        }
        Ok(format!("bitcast<{ty}>({bits})"))
    }

    /// `atomic.*`. 64-bit `add`: an atomicAdd of the low words, the carry
    /// from the old low word, then an atomicAdd of high + carry to the high
    /// word; the memory ends exact, the returned old value is (old low, old
    /// high), whose high half may miss a carry or high part another thread
    /// adds in between. Other 64-bit atomics are refused (a 32-bit
    /// compare-exchange on one half cannot make them atomic).
    pub(super) fn atomic(
        &mut self,
        v: Value,
        sc: Scalar,
        op: AtomicOp,
        ptr: Value,
        index: Option<Value>,
        value: Value,
    ) -> Result<String, Error> {
        let b = self.base(ptr)?;
        let size = self.pointee(ptr)?.size().map_err(|e| self.unsupported(v, e.to_string()))?;
        let off = self.offset(ptr, index, size)?;
        let off = self.bounds_check(b, &off, sc.size(), Access::Atomic, Some((ptr, index)));
        let off = self.heap_guard(b, &off);
        let (a, atomic) = self.array(b);
        if atomic && sc.is_float() {
            return self.float_atomic(v, sc, op, &format!("&{a}[({off}) >> 2u]"), value);
        }
        if atomic && op == AtomicOp::Add && matches!(sc, Scalar::U64 | Scalar::I64) {
            let (lo, hi, x) = (self.temp(), self.temp(), format!("v{}", value.index()));
            self.line(format!("let {lo}: u32 = atomicAdd(&{a}[({off}) >> 2u], {x}.x);"));
            self.line(format!(
                "let {hi}: u32 = atomicAdd(&{a}[(({off}) + 4u) >> 2u], {x}.y + select(0u, 1u, {lo} + {x}.x < {lo}));"
            ));
            return Ok(format!("vec2<u32>({lo}, {hi})"));
        }
        if !atomic || !matches!(sc, Scalar::U32 | Scalar::I32) {
            let why = if wide(sc) { " (WGSL has only 32-bit atomics)" } else { " here" };
            return Err(self.unsupported(v, format!("{op} on {sc}{why}")));
        }
        let x = format!("bitcast<u32>(v{})", value.index());
        let slot = format!("&{a}[({off}) >> 2u]");
        let direct = |f: &str| format!("bitcast<{}>({f}({slot}, {x}))", wgsl_ty(sc));
        Ok(match (op, sc) {
            (AtomicOp::Add, _) => direct("atomicAdd"),
            (AtomicOp::Xchg, _) => direct("atomicExchange"),
            (AtomicOp::Min, Scalar::U32) => direct("atomicMin"),
            (AtomicOp::Max, Scalar::U32) => direct("atomicMax"),
            (AtomicOp::Min | AtomicOp::Max, _) => {
                // Signed min/max on a u32 array: a compare-and-swap loop.
                let f = if op == AtomicOp::Min { "min" } else { "max" };
                let old = self.temp();
                self.line(format!("var {old}: u32 = atomicLoad({slot});"));
                let mark = self.open_loop();
                self.line(format!("    let n = bitcast<u32>({f}(bitcast<i32>({old}), v{}));", value.index()));
                self.line(format!("    let r = atomicCompareExchangeWeak({slot}, {old}, n);"));
                self.line("    if (r.exchanged) { break; }".to_owned());
                self.line(format!("    {old} = r.old_value;"));
                self.close_loop(mark);
                format!("bitcast<i32>({old})")
            }
        })
    }
}
