//! One function: its `workgroup` variables, its signature (a kernel's
//! `@compute` entry with its parameters from the bindings and the
//! arguments buffer, a device function's scalar parameters), its locals and
//! body, and what it tells the module it needs.

use super::{Base, FuncCx, Writer, wgsl_ty};
use crate::wgsl::Error;
use crate::wgsl::bindings::{self, ARGS_VAR};
use relok_ir::{EntityRef, FuncKind, Function, Scalar, Type, Value, VarKind};
use std::fmt::Write as _;

impl<'m> Writer<'m> {
    /// Writes `f`; the WGSL loops it holds, its callees' included.
    pub(super) fn write_function(&mut self, f: &'m Function) -> Result<usize, Error> {
        let kernel = f.kind == FuncKind::Kernel;
        let mut cx = FuncCx::new(self.module, f, &self.usage, &self.fn_loops, &self.throws);
        cx.checked = self.checked;
        // Shared variables are module-scope in WGSL; their words are atomic
        // only where an atomic or a bool store touches them (`usage`).
        for (v, d) in f.vars.iter() {
            if d.kind == VarKind::Shared {
                let words = cx.words_of(&d.ty)?;
                let word = if self.usage.shared_atomic(&f.name, v) { "atomic<u32>" } else { "u32" };
                let _ = writeln!(self.out, "var<workgroup> s{}_{}: array<{word}, {words}>;", f.name, v.index());
            }
        }
        let mut head = String::new();
        if kernel {
            // A kernel with a block shape has it fixed (its launches all
            // have it; the overrides still get the same values).
            match f.block {
                Some([x, y, z]) => {
                    let _ = writeln!(head, "@compute @workgroup_size({x}, {y}, {z})");
                }
                None => {
                    let _ = writeln!(head, "@compute @workgroup_size(relok_block_x, relok_block_y, relok_block_z)");
                }
            }
            let _ = writeln!(
                head,
                "fn {}(@builtin(local_invocation_id) relok_tid: vec3<u32>, @builtin(workgroup_id) relok_bid: vec3<u32>, @builtin(num_workgroups) relok_nblocks: vec3<u32>) {{",
                crate::wgsl::entry_point(&f.name)
            );
            // Parameters: buffers get their base, scalars come from relok_args.
            let (mut buffer, mut scalar) = (0, 0);
            for &p in &f.params {
                match &f.values[p].ty {
                    Type::Ptr(..) => {
                        cx.bases.insert(p, Base::Param(buffer));
                        cx.line(format!("let v{}: u32 = 0u;", p.index()));
                        buffer += 1;
                    }
                    Type::Scalar(s) => {
                        let slot = bindings::scalar_slot(scalar);
                        let e = match s {
                            Scalar::Bool => format!("{ARGS_VAR}[{slot}] != 0u"),
                            Scalar::I32 => format!("bitcast<i32>({ARGS_VAR}[{slot}])"),
                            Scalar::U32 => format!("{ARGS_VAR}[{slot}]"),
                            Scalar::F32 => format!("bitcast<f32>({ARGS_VAR}[{slot}])"),
                            Scalar::U8 | Scalar::I8 | Scalar::U16 | Scalar::I16 => {
                                return Err(cx.unsupported(p, format!("a kernel parameter of storage type {s}")));
                            }
                            Scalar::Word | Scalar::I64 | Scalar::U64 | Scalar::F64 => {
                                format!("vec2<u32>({ARGS_VAR}[{slot}], {ARGS_VAR}[{}])", slot + 1)
                            }
                        };
                        cx.line(format!("let v{}: {} = {e};", p.index(), wgsl_ty(*s)));
                        scalar += 1;
                    }
                    t => return Err(cx.unsupported(p, format!("a parameter of type {t}"))),
                }
            }
        } else {
            let mut params = Vec::new();
            for &p in &f.params {
                let Type::Scalar(s) = &f.values[p].ty else {
                    return Err(cx.unsupported(p, "a pointer parameter of a device function (inline it)"));
                };
                let t = wgsl_ty(*s);
                params.push(format!("v{}: {t}", p.index()));
            }
            let ret = match &f.ret {
                Some(Type::Scalar(s)) => {
                    format!(" -> {}", wgsl_ty(*s))
                }
                Some(t) => return Err(cx.unsupported(Value::new(0), format!("a result of type {t}"))),
                None => String::new(),
            };
            let _ = writeln!(head, "fn f_{}({}){ret} {{", f.name, params.join(", "));
        }
        for (v, d) in f.vars.iter() {
            if d.kind == VarKind::Local {
                match cx.reg_var(v) {
                    Some(t) => cx.line(format!("var l{}: {t};", v.index())),
                    None => {
                        let words = cx.words_of(&d.ty)?;
                        cx.line(format!("var l{}: array<u32, {words}>;", v.index()));
                    }
                }
            }
        }
        cx.block(&f.body)?;
        self.used.extend(cx.used);
        self.loops |= cx.wrote_loop;
        self.guards |= cx.wrote_guard;
        self.bounded |= cx.wrote_bounds;
        for t in std::mem::take(&mut cx.called_throws) {
            if !self.called_throws.contains(&t) {
                self.called_throws.push(t);
            }
        }
        if kernel && cx.loops > 0 {
            // What the kernel's loops cost llvmpipe's counter before any
            // goes round ([`super::super::unroll`]).
            let _ = writeln!(head, "    relok_iterations = {}u;", cx.loops);
        }
        if cx.opaque_zero {
            // The device writes 0 after the arguments (the last slot): a
            // zero the driver cannot know (one it could prove, such as a
            // bound on `arrayLength`, NVIDIA's compiler sees through).
            let _ = writeln!(head, "    let relok_zero: u32 = {ARGS_VAR}[arrayLength(&{ARGS_VAR}) - 1u];");
        }
        self.out.push_str(&head);
        self.out.push_str(&cx.body);
        self.out.push_str("}\n\n");
        Ok(cx.loops)
    }
}
