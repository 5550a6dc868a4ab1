//! The canonical printer.
//!
//! Total on any module, verified or not: a handle that does not exist prints
//! as `?` plus its Display (`@?func7`, `?v9`), which the parser rejects, and
//! bits that do not fit their literal's type print as hex (which the parser
//! rejects with a "does not fit" error). Nothing here panics.

use crate::entity::EntityRef;
use crate::ir::{
    ConstId, ConstInit, FuncId, FuncKind, Function, HostRef, Module, Op, Stage, Stmt, StmtKind, Value, Var, VarKind,
};
use crate::types::{Scalar, Type};
use std::fmt::Write as _;

/// Canonical quiet NaN of `f32`, printed `nan`.
pub(super) const F32_NAN: u32 = 0x7fc0_0000;
/// Canonical quiet NaN of `f64`, printed `nan`.
pub(super) const F64_NAN: u64 = 0x7ff8_0000_0000_0000;

pub(super) fn print_module(m: &Module) -> String {
    let mut p = Printer { m, out: String::new() };
    let mut first = true;
    if let Stage::Lowered(strategy) = m.stage {
        p.separate(&mut first);
        let _ = writeln!(p.out, "lowered {strategy}");
    }
    for (_, c) in m.consts.iter() {
        p.separate(&mut first);
        let _ = writeln!(p.out, "const @{}: {} = {}", c.name, c.ty, init_text(m, &c.ty, &c.init));
    }
    for (_, f) in m.funcs.iter() {
        p.separate(&mut first);
        p.function(f);
    }
    p.out
}

/// The text of a literal of type `ty` with the given bits (see the module
/// docs of [`super`] for the rules).
pub(super) fn literal_text(ty: &Type, bits: u64) -> String {
    let fits32 = bits <= u64::from(u32::MAX);
    match ty {
        Type::Scalar(Scalar::Bool) if bits <= 1 => (if bits == 1 { "true" } else { "false" }).to_string(),
        Type::Scalar(Scalar::I32) if fits32 => (bits as u32 as i32).to_string(),
        Type::Scalar(Scalar::U32) if fits32 => bits.to_string(),
        Type::Scalar(Scalar::U8) if bits <= 0xff => bits.to_string(),
        Type::Scalar(Scalar::U16) if bits <= 0xffff => bits.to_string(),
        Type::Scalar(Scalar::I8) if bits <= 0xff => (bits as u8 as i8).to_string(),
        Type::Scalar(Scalar::I16) if bits <= 0xffff => (bits as u16 as i16).to_string(),
        Type::Scalar(Scalar::I64) => (bits as i64).to_string(),
        Type::Scalar(Scalar::U64) => bits.to_string(),
        Type::Scalar(Scalar::F32) if fits32 => {
            let x = f32::from_bits(bits as u32);
            if x.is_nan() {
                if bits as u32 == F32_NAN { "nan".to_string() } else { format!("{bits:#010x}") }
            } else {
                float_text(x.is_infinite(), x.is_sign_negative(), || format!("{x:?}"))
            }
        }
        Type::Scalar(Scalar::F64) => {
            let x = f64::from_bits(bits);
            if x.is_nan() {
                if bits == F64_NAN { "nan".to_string() } else { format!("{bits:#018x}") }
            } else {
                float_text(x.is_infinite(), x.is_sign_negative(), || format!("{x:?}"))
            }
        }
        Type::Scalar(Scalar::Word) => format!("{bits:#018x}"),
        _ => format!("{bits:#x}"),
    }
}

fn float_text(inf: bool, neg: bool, finite: impl FnOnce() -> String) -> String {
    match (inf, neg) {
        (true, false) => "inf".to_string(),
        (true, true) => "-inf".to_string(),
        _ => finite(),
    }
}

/// A constant initializer: shaped by the initializer, leaves typed by the
/// part of `ty` at the same position (hex where the shapes disagree).
fn init_text(m: &Module, ty: &Type, init: &ConstInit) -> String {
    let mut out = String::new();
    write_init(m, &mut out, Some(ty), init);
    out
}

fn write_init(m: &Module, out: &mut String, ty: Option<&Type>, init: &ConstInit) {
    let (open, close, items) = match init {
        ConstInit::Ref(r) => {
            out.push_str("ref ");
            out.push_str(&host_ref_text(Some(m), r));
            return;
        }
        ConstInit::Scalar(bits) => {
            match ty {
                Some(t) => out.push_str(&literal_text(t, *bits)),
                None => {
                    let _ = write!(out, "{bits:#x}");
                }
            }
            return;
        }
        ConstInit::Array(items) => ('[', ']', items),
        ConstInit::Struct(items) => ('{', '}', items),
    };
    out.push(open);
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let item_ty = match (init, ty) {
            (ConstInit::Array(_), Some(Type::Array(e, _))) => Some(&**e),
            (ConstInit::Struct(_), Some(Type::Struct(fields))) => fields.get(i),
            _ => None,
        };
        write_init(m, out, item_ty, item);
    }
    out.push(close);
}

struct Printer<'m> {
    m: &'m Module,
    out: String,
}

impl Printer<'_> {
    fn separate(&mut self, first: &mut bool) {
        if !*first {
            self.out.push('\n');
        }
        *first = false;
    }

    fn indent(&mut self, level: usize) {
        for _ in 0..level {
            self.out.push_str("    ");
        }
    }

    fn func_name(&self, f: FuncId) -> String {
        match self.m.funcs.get(f) {
            Some(g) => format!("@{}", g.name),
            None => format!("@?{f}"),
        }
    }

    fn const_name(&self, c: ConstId) -> String {
        match self.m.consts.get(c) {
            Some(d) => format!("@{}", d.name),
            None => format!("@?{c}"),
        }
    }

    fn function(&mut self, f: &Function) {
        let kw = match f.kind {
            FuncKind::Kernel => "kernel",
            FuncKind::Device => "fn",
            FuncKind::Import => "import fn",
        };
        let _ = write!(self.out, "{kw} @{}(", f.name);
        for (i, &p) in f.params.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            let _ = write!(self.out, "{}: {}", value(f, p), ty_text(f, p));
            if let Some(of) = f.len_of(p) {
                let _ = write!(self.out, " len({})", value(f, of));
            }
        }
        self.out.push(')');
        if let Some(ret) = &f.ret {
            let _ = write!(self.out, " -> {ret}");
        }
        if let Some([x, y, z]) = f.block {
            let _ = write!(self.out, " block({x}, {y}, {z})");
        }
        if f.kind == FuncKind::Import {
            // A declaration: the body comes from the library at link time.
            self.out.push('\n');
            return;
        }
        self.out.push_str(" {\n");
        for (_, d) in f.vars.iter() {
            let kw = match d.kind {
                VarKind::Local => "local",
                VarKind::Shared => "shared",
            };
            self.indent(1);
            let _ = writeln!(self.out, "{kw} %{}: {}", d.name, d.ty);
        }
        self.block(f, &f.body, 1);
        self.out.push_str("}\n");
    }

    fn block(&mut self, f: &Function, block: &[Stmt], level: usize) {
        for s in block {
            self.stmt(f, s, level);
        }
    }

    fn stmt(&mut self, f: &Function, s: &Stmt, level: usize) {
        self.indent(level);
        match &s.kind {
            StmtKind::Let { result, op } => {
                let _ = write!(self.out, "{}: {} = ", value(f, *result), ty_text(f, *result));
                self.op(f, *result, op);
            }
            StmtKind::Store { ptr, index, value: v } => {
                let _ = write!(self.out, "store {}, {}", place(f, *ptr, *index), value(f, *v));
            }
            StmtKind::Set { var: x, value: v } => {
                let _ = write!(self.out, "set {}, {}", var(f, *x), value(f, *v));
            }
            StmtKind::Call(g, args) => {
                let _ = write!(self.out, "call {}({})", self.func_name(*g), values(f, args));
            }
            StmtKind::Barrier => self.out.push_str("barrier"),
            StmtKind::Exit => self.out.push_str("exit"),
            StmtKind::Break => self.out.push_str("break"),
            StmtKind::Continue => self.out.push_str("continue"),
            StmtKind::Return(None) => self.out.push_str("return"),
            StmtKind::Return(Some(v)) => {
                let _ = write!(self.out, "return {}", value(f, *v));
            }
            StmtKind::If { cond, then_body, else_body } => {
                let _ = writeln!(self.out, "if {} {{", value(f, *cond));
                self.block(f, then_body, level + 1);
                if !else_body.is_empty() {
                    self.indent(level);
                    self.out.push_str("} else {\n");
                    self.block(f, else_body, level + 1);
                }
                self.indent(level);
                self.out.push('}');
            }
            StmtKind::Loop(body) => {
                self.out.push_str("loop {\n");
                self.block(f, body, level + 1);
                self.indent(level);
                self.out.push('}');
            }
        }
        self.out.push('\n');
    }

    fn op(&mut self, f: &Function, result: Value, op: &Op) {
        let text = match op {
            Op::Const(bits) => {
                let lit = match f.values.get(result) {
                    Some(d) => literal_text(&d.ty, *bits),
                    None => format!("{bits:#x}"),
                };
                format!("const {lit}")
            }
            Op::Unary(u, a) => format!("{u} {}", value(f, *a)),
            Op::Binary(b, x, y) => format!("{b} {}, {}", value(f, *x), value(f, *y)),
            Op::Compare(c, x, y) => format!("{c} {}, {}", value(f, *x), value(f, *y)),
            Op::Select(c, a, b) => format!("select {}, {}, {}", value(f, *c), value(f, *a), value(f, *b)),
            Op::Math(m, args) => {
                let args: Vec<String> = args.iter().map(|&a| value(f, a)).collect();
                format!("{m} {}", args.join(", "))
            }
            Op::Convert(a) => format!("convert {}", value(f, *a)),
            Op::Bitcast(a) => format!("bitcast {}", value(f, *a)),
            Op::Load { ptr, index } => format!("load {}", place(f, *ptr, *index)),
            Op::Offset { ptr, index } => format!("offset {}, {}", value(f, *ptr), value(f, *index)),
            Op::Elem { ptr, index } => format!("elem {}, {}", value(f, *ptr), value(f, *index)),
            Op::Field { ptr, field } => format!("field {}, {field}", value(f, *ptr)),
            Op::VarAddr(x) => format!("addr {}", var(f, *x)),
            Op::ConstAddr(c) => format!("addr {}", self.const_name(*c)),
            Op::Get(x) => format!("get {}", var(f, *x)),
            Op::Builtin(b) => b.to_string(),
            Op::Ref(r) => format!("ref {}", host_ref_text(Some(self.m), r)),
            Op::WordPtr(a) => format!("wordptr {}", value(f, *a)),
            Op::State(field) => format!("state.{}", field.name()),
            Op::BakedWord(bits) => format!("word {bits:#018x}"),
            Op::Patch(name) => format!("patch {name}"),
            Op::Call(g, args) => format!("call {}({})", self.func_name(*g), values(f, args)),
            Op::Atomic { op, ptr, index, value: v } => {
                format!("{op} {}, {}", place(f, *ptr, *index), value(f, *v))
            }
            Op::AtomicCas { ptr, index, expected, new } => {
                format!("atomic.cas {}, {}, {}", place(f, *ptr, *index), value(f, *expected), value(f, *new))
            }
        };
        self.out.push_str(&text);
    }
}

/// `:name`, `@const`, `"text"` (Rust-style escapes), `global name + 8`.
/// Constants print by name when the module is known, else by handle.
pub(super) fn host_ref_text(m: Option<&Module>, r: &HostRef) -> String {
    match r {
        HostRef::Symbol(name) => format!(":{name}"),
        HostRef::Value(c) => match m.and_then(|m| m.consts.get(*c)) {
            Some(d) => format!("@{}", d.name),
            None => format!("@?{}", c.index()),
        },
        HostRef::Str(text) => format!("{text:?}"),
        HostRef::Global { name, offset: 0 } => format!("global {name}"),
        HostRef::Global { name, offset } => format!("global {name} + {offset}"),
    }
}

fn value(f: &Function, v: Value) -> String {
    if f.values.contains(v) { v.to_string() } else { format!("?{v}") }
}

fn ty_text(f: &Function, v: Value) -> String {
    match f.values.get(v) {
        Some(d) => d.ty.to_string(),
        None => "?".to_string(),
    }
}

fn var(f: &Function, x: Var) -> String {
    match f.vars.get(x) {
        Some(d) => format!("%{}", d.name),
        None => format!("%?{}", x.index()),
    }
}

fn values(f: &Function, vs: &[Value]) -> String {
    vs.iter().map(|&v| value(f, v)).collect::<Vec<_>>().join(", ")
}

fn place(f: &Function, ptr: Value, index: Option<Value>) -> String {
    match index {
        Some(i) => format!("{}[{}]", value(f, ptr), value(f, i)),
        None => value(f, ptr),
    }
}
