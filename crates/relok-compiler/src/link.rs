//! Linking a user module with a library module (docs/design.md §4: "link runtime
//! library").
//!
//! A user module declares what it needs with `import fn @name(..) -> T`
//! (no body). [`link`] replaces each such declaration by the library's
//! function of that name — same signature, else an error naming both — and
//! pulls in every library function it calls and every library constant
//! those functions use, with their handles remapped. Items keep their
//! order: the user's first (imports replaced in place), then the pulled-in
//! library items in library order. Name clashes between user items and
//! pulled-in library items are errors. An import the library lacks is an
//! error when something calls it; an uncalled one stays a declaration.
//!
//! [`runtime_library`] is relok's own runtime library (`runtime.rk`):
//!
//! - `fn @relok_throw(v0: word)`: the first thread to throw records the
//!   message word and its block and thread ids in the exception record
//!   (`state.exception`, layout in [`crate::state::EXCEPTION_LAYOUT`]); every
//!   throwing thread then exits.
//! - `fn @relok_throw_with(v0: word, v1: u64, v2: u64)`: as `@relok_throw`,
//!   and the record keeps the two values: the host writes them in place of
//!   `{0}` and `{1}` in the message text (a Rust kernel's bounds check
//!   throws its length and index this way).
//! - `fn @relok_count(v0: u64) -> u64`: adds to the per-device runtime
//!   global `relok_counter`; returns the old value.
//! - `fn @relok_rng_next(v0: u64) -> u64`: one splitmix64 step of `v0`
//!   mixed with `state.rng_seed`.

use crate::lower::remap_items;
use relok_ir::EntityRef;
use relok_ir::{ConstId, ConstInit, FuncId, FuncKind, Function, HostRef, Module, Op, StmtKind, walk_stmts};
use std::sync::OnceLock;

/// The runtime library's text.
pub const RUNTIME_SOURCE: &str = include_str!("runtime.rk");

/// Why linking failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LinkError {
    /// The library defines no function of the imported name.
    #[error("import fn @{name}: the library defines no function @{name}")]
    MissingImport {
        /// The imported name.
        name: String,
    },
    /// The library's function has another signature than the import.
    #[error("import fn @{name} is declared `{import}`, but the library defines `{library}`")]
    SignatureMismatch {
        /// The imported name.
        name: String,
        /// The import's signature.
        import: String,
        /// The library function's signature.
        library: String,
    },
    /// The library's item of that name is not a device function with a body.
    #[error("import fn @{name}: the library's @{name} is not a device function with a body")]
    NotADefinition {
        /// The imported name.
        name: String,
    },
    /// A library item pulled in has the name of a user item.
    #[error("library {kind} @{name} clashes with the user module's item of the same name")]
    NameClash {
        /// `function` or `constant`.
        kind: &'static str,
        /// The name.
        name: String,
    },
    /// The runtime library does not parse.
    #[error("the runtime library does not parse: {0}")]
    Parse(String),
    /// The result does not verify.
    #[error("the linked module does not verify: {0}")]
    Verify(String),
}

/// `fn @name(T1, T2) -> R`: a function's signature for messages.
fn signature(f: &Function) -> String {
    let params: Vec<String> = f.params.iter().map(|&p| f.ty(p).to_string()).collect();
    match &f.ret {
        Some(r) => format!("fn @{}({}) -> {r}", f.name, params.join(", ")),
        None => format!("fn @{}({})", f.name, params.join(", ")),
    }
}

fn same_signature(a: &Function, b: &Function) -> bool {
    a.ret == b.ret
        && a.params.len() == b.params.len()
        && a.params.iter().zip(&b.params).all(|(&p, &q)| a.ty(p) == b.ty(q))
}

/// relok's runtime library, parsed once from `runtime.rk`.
pub fn runtime_library() -> Result<Module, LinkError> {
    static LIB: OnceLock<Result<Module, LinkError>> = OnceLock::new();
    LIB.get_or_init(|| relok_ir::parse(RUNTIME_SOURCE).map_err(|e| LinkError::Parse(e.to_string()))).clone()
}

/// Functions and constants `f` refers to, in first-use order.
pub(crate) fn uses(f: &Function) -> (Vec<FuncId>, Vec<ConstId>) {
    let mut funcs = Vec::new();
    let mut consts = Vec::new();
    walk_stmts(&f.body, &mut |s| match &s.kind {
        StmtKind::Call(g, _) | StmtKind::Let { op: Op::Call(g, _), .. } => funcs.push(*g),
        StmtKind::Let { op: Op::ConstAddr(c) | Op::Ref(HostRef::Value(c)), .. } => consts.push(*c),
        _ => {}
    });
    (funcs, consts)
}

pub(crate) fn init_consts(init: &ConstInit, out: &mut Vec<ConstId>) {
    match init {
        ConstInit::Ref(HostRef::Value(c)) => out.push(*c),
        ConstInit::Array(items) | ConstInit::Struct(items) => items.iter().for_each(|i| init_consts(i, out)),
        _ => {}
    }
}

/// Links `user` with `lib`: every `import fn` of `user` that `lib` defines
/// becomes `lib`'s function (see the module docs).
pub fn link(user: &Module, lib: &Module) -> Result<Module, LinkError> {
    let mut out = user.clone();
    // Library function → its handle in `out` (imports map to the import's slot).
    let mut fmap: Vec<Option<FuncId>> = vec![None; lib.funcs.len()];
    let mut imports = Vec::new();
    let mut called = vec![false; user.funcs.len()];
    for f in user.funcs.values() {
        for g in uses(f).0 {
            if let Some(c) = called.get_mut(g.index()) {
                *c = true;
            }
        }
    }
    for (id, f) in user.funcs.iter() {
        if f.kind != FuncKind::Import {
            continue;
        }
        let Some(lid) = lib.func_by_name(&f.name) else {
            if !called[id.index()] {
                // Never called: stays a declaration.
                continue;
            }
            return Err(LinkError::MissingImport { name: f.name.clone() });
        };
        let lf = &lib.funcs[lid];
        if lf.kind != FuncKind::Device {
            return Err(LinkError::NotADefinition { name: f.name.clone() });
        }
        if !same_signature(f, lf) {
            return Err(LinkError::SignatureMismatch {
                name: f.name.clone(),
                import: signature(f),
                library: signature(lf),
            });
        }
        fmap[lid.index()] = Some(id);
        imports.push(lid);
    }
    // Everything the imported functions reach, and the constants they use.
    let mut needed_f = vec![false; lib.funcs.len()];
    let mut needed_c = vec![false; lib.consts.len()];
    let mut work = imports.clone();
    while let Some(g) = work.pop() {
        if std::mem::replace(&mut needed_f[g.index()], true) {
            continue;
        }
        let (fs, cs) = uses(&lib.funcs[g]);
        work.extend(fs.into_iter().filter(|h| lib.funcs.contains(*h)));
        let mut cwork: Vec<ConstId> = cs.into_iter().filter(|c| lib.consts.contains(*c)).collect();
        while let Some(c) = cwork.pop() {
            if !std::mem::replace(&mut needed_c[c.index()], true) {
                let mut more = Vec::new();
                init_consts(&lib.consts[c].init, &mut more);
                cwork.extend(more.into_iter().filter(|c| lib.consts.contains(*c)));
            }
        }
    }
    let clash = |name: &str| user.func_by_name(name).is_some() || user.const_by_name(name).is_some();
    // Constants, in library order.
    let mut cmap: Vec<Option<ConstId>> = vec![None; lib.consts.len()];
    for (cid, c) in lib.consts.iter() {
        if needed_c[cid.index()] {
            if clash(&c.name) {
                return Err(LinkError::NameClash { kind: "constant", name: c.name.clone() });
            }
            cmap[cid.index()] = Some(out.consts.push(c.clone()));
        }
    }
    // Library functions that are not imports get fresh slots, in library order.
    let mut fresh: Vec<FuncId> = Vec::new();
    for (lid, f) in lib.funcs.iter() {
        if needed_f[lid.index()] && fmap[lid.index()].is_none() {
            if clash(&f.name) {
                return Err(LinkError::NameClash { kind: "function", name: f.name.clone() });
            }
            fmap[lid.index()] = Some(FuncId::new(out.funcs.len() + fresh.len()));
            fresh.push(lid);
        }
    }
    let fm = |g: FuncId| fmap.get(g.index()).copied().flatten().unwrap_or(g);
    let cm = |c: ConstId| cmap.get(c.index()).copied().flatten().unwrap_or(c);
    for (cid, _) in lib.consts.iter() {
        if let Some(new) = cmap[cid.index()] {
            remap_init(&mut out.consts[new].init, &cm);
        }
    }
    for &lid in &imports {
        let mut body = lib.funcs[lid].clone();
        remap_items(&mut body, &fm, &cm);
        let slot = fm(lid);
        // Keep the user's span for messages about the import.
        body.span = out.funcs[slot].span;
        out.funcs[slot] = body;
    }
    for lid in fresh {
        let mut body = lib.funcs[lid].clone();
        remap_items(&mut body, &fm, &cm);
        out.funcs.push(body);
    }
    relok_ir::verify(&out).map_err(|e| LinkError::Verify(e.to_string()))?;
    Ok(out)
}

pub(crate) fn remap_init(init: &mut ConstInit, cm: &impl Fn(ConstId) -> ConstId) {
    match init {
        ConstInit::Ref(HostRef::Value(c)) => *c = cm(*c),
        ConstInit::Array(items) | ConstInit::Struct(items) => items.iter_mut().for_each(|i| remap_init(i, cm)),
        _ => {}
    }
}

/// The runtime library's throws, by name: the functions that record an
/// exception and end the thread. The WGSL and PTX writers write them once
/// per shader or function, out of line, instead of inlined at each call
/// (`crate::wgsl::throws`, the PTX writer's throw tails).
pub(crate) const THROWS: [&str; 2] = ["relok_throw", "relok_throw_with"];

/// The throws of `module` (a stencil, not yet optimised) that are the
/// runtime library's own definitions: the names the optimiser keeps from
/// inlining for WGSL and PTX (`crate::passes::inline_keeping`).
pub(crate) fn library_throws(module: &Module) -> Vec<&'static str> {
    let Ok(lib) = runtime_library() else { return Vec::new() };
    THROWS
        .into_iter()
        .filter(|n| match (module.func_by_name(n), lib.func_by_name(n)) {
            (Some(f), Some(g)) => alone(&module.funcs[f]) == alone(&lib.funcs[g]),
            _ => false,
        })
        .collect()
}

/// The device functions of `module` (optimised, the library's throws
/// kept) that are throws, with their names.
pub(crate) fn kept_throws(module: &Module) -> Vec<(FuncId, &'static str)> {
    module
        .funcs
        .iter()
        .filter(|(_, f)| f.kind == FuncKind::Device)
        .filter_map(|(id, f)| THROWS.into_iter().find(|n| *n == f.name).map(|n| (id, n)))
        .collect()
}

/// `f`'s text, alone in a module.
fn alone(f: &Function) -> String {
    let mut m = Module::new();
    m.funcs.push(f.clone());
    relok_ir::print(&m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use relok_ir::builder::ModuleBuilder;
    use relok_ir::{AddrSpace, Axis, Builtin, Scalar, StateField, Stmt, Type};

    fn word() -> Type {
        Type::Scalar(Scalar::Word)
    }
    fn gptr(t: Scalar) -> Type {
        Type::ptr(AddrSpace::Global, Type::Scalar(t))
    }

    /// `@relok_throw(message)` or, `with_values`, `@relok_throw_with(message,
    /// a: u64, b: u64)`: claims the exception record's flag (a
    /// compare-and-swap 0 → `THREW`, which WGSL writes as `atomicMax`, no
    /// loop), writes the message word, the values and the block and thread
    /// ids, and with values adds 1 to the flag (`THREW_WITH_VALUES`, an
    /// atomic add: other threads may be claiming it), then exits.
    fn throw_fn(mb: &mut ModuleBuilder, name: &str, with_values: bool) {
        use crate::state::ExceptionLayout;
        let mut f = mb.device_fn(name, None);
        let msg = f.param(word());
        let values = if with_values { vec![f.param(Scalar::U64), f.param(Scalar::U64)] } else { Vec::new() };
        let exc = f.op(Op::State(StateField::Exception));
        let zero32 = f.u32(0);
        let zero = f.u64(0);
        let flag = f.u64(ExceptionLayout::THREW);
        let old = f.atomic_cas(exc, Some(zero32), zero, flag);
        let won = f.eq(old, zero);
        f.if_(won, |f| {
            let m = f.bitcast(msg, Scalar::U64);
            let i = f.u32(ExceptionLayout::MESSAGE_WORD);
            f.store(exc, Some(i), m);
            let mut slot = ExceptionLayout::BLOCK_WORD;
            for b in [Builtin::BlockId as fn(Axis) -> Builtin, Builtin::ThreadId] {
                for a in Axis::ALL {
                    let x = f.builtin(b(a));
                    let x = f.convert(x, Scalar::U64);
                    let i = f.u32(slot);
                    f.store(exc, Some(i), x);
                    slot += 1;
                }
            }
            for (k, &v) in values.iter().enumerate() {
                let i = f.u32(ExceptionLayout::VALUES_WORD + k as u32);
                f.store(exc, Some(i), v);
            }
            if with_values {
                let more = f.u64(ExceptionLayout::THREW_WITH_VALUES - ExceptionLayout::THREW);
                f.atomic(relok_ir::AtomicOp::Add, exc, Some(zero32), more);
            }
        });
        let mut func = f.finish().unwrap();
        func.body.push(Stmt::new(StmtKind::Exit));
        mb.add(func);
    }

    /// The runtime library built with the builder: it must print exactly as
    /// `runtime.rk` reads (so the text is canonical whatever the parser's
    /// state).
    pub(crate) fn runtime_by_builder() -> Module {
        let mut mb = ModuleBuilder::new();
        throw_fn(&mut mb, "relok_throw", false);
        throw_fn(&mut mb, "relok_throw_with", true);

        let mut f = mb.device_fn("relok_count", Some(Scalar::U64.into()));
        let n = f.param(Scalar::U64);
        let w = f.op(Op::Ref(HostRef::Global { name: "relok_counter".into(), offset: 0 }));
        let p = f.op_typed(Op::WordPtr(w), gptr(Scalar::U64));
        let old = f.atomic(relok_ir::AtomicOp::Add, p, None, n);
        f.ret(Some(old));
        let func = f.finish().unwrap();
        mb.add(func);

        let mut f = mb.device_fn("relok_rng_next", Some(Scalar::U64.into()));
        let x = f.param(Scalar::U64);
        let seed = f.op(Op::State(StateField::RngSeed));
        let z = f.xor(x, seed);
        let c = f.u64(0x9e37_79b9_7f4a_7c15);
        let z = f.add(z, c);
        let mut z = z;
        for (shift, mul) in [(30, Some(0xbf58_476d_1ce4_e5b9u64)), (27, Some(0x94d0_49bb_1331_11eb)), (31, None)] {
            let s = f.u64(shift);
            let t = f.shr(z, s);
            z = f.xor(z, t);
            if let Some(m) = mul {
                let m = f.u64(m);
                z = f.mul(z, m);
            }
        }
        f.ret(Some(z));
        let func = f.finish().unwrap();
        mb.add(func);
        mb.build()
    }

    #[test]
    fn runtime_text_is_canonical() {
        let m = runtime_by_builder();
        relok_ir::verify(&m).expect("runtime library verifies");
        let text = relok_ir::print(&m);
        if std::env::var_os("BLESS").is_some() {
            std::fs::write(concat!(env!("CARGO_MANIFEST_DIR"), "/src/runtime.rk"), &text).expect("runtime.rk written");
            return;
        }
        assert_eq!(text, RUNTIME_SOURCE, "runtime.rk differs from the builder's library (BLESS=1 rewrites it)");
    }

    #[test]
    fn runtime_library_parses() {
        assert_eq!(runtime_library().expect("runtime.rk parses and verifies"), runtime_by_builder());
    }

    fn user_with_import(ret: Option<Type>, param: Type, name: &str) -> Module {
        let mut mb = ModuleBuilder::new();
        let mut imp = Function::new(name, FuncKind::Import);
        imp.ret = ret.clone();
        let p = imp.values.push(relok_ir::ValueData { ty: param.clone() });
        imp.params.push(p);
        let id = mb.add(imp);
        let mut k = mb.kernel("k");
        let out = k.param(gptr(Scalar::U64));
        let x = k.param(param);
        if ret.is_some() {
            let r = k.call(id, vec![x]);
            k.store(out, None, r);
        } else {
            k.call_void(id, vec![x]);
        }
        let kf = k.finish().unwrap();
        mb.add(kf);
        mb.build()
    }

    #[test]
    fn import_is_replaced() {
        let lib = runtime_by_builder();
        let user = user_with_import(Some(Scalar::U64.into()), Scalar::U64.into(), "relok_rng_next");
        let linked = link(&user, &lib).unwrap();
        let f = &linked.funcs[linked.func_by_name("relok_rng_next").unwrap()];
        assert_eq!(f.kind, FuncKind::Device);
        assert_eq!(f, &lib.funcs[lib.func_by_name("relok_rng_next").unwrap()]);
        // Only what is needed comes along.
        assert!(linked.func_by_name("relok_count").is_none());
        assert_eq!(linked.funcs.len(), 2);
        // Deterministic.
        assert_eq!(relok_ir::print(&linked), relok_ir::print(&link(&user, &lib).unwrap()));
    }

    #[test]
    fn callees_and_constants_come_along() {
        // Library: @outer calls @inner, which reads const @tab.
        let mut mb = ModuleBuilder::new();
        let tab = mb.constant(
            "tab",
            Type::array(Scalar::U64.into(), 2),
            ConstInit::Array(vec![ConstInit::Scalar(7), ConstInit::Scalar(9)]),
        );
        let mut f = mb.device_fn("inner", Some(Scalar::U64.into()));
        let i = f.param(Scalar::U32);
        let p = f.const_addr(tab);
        let v = f.load(p, Some(i));
        f.ret(Some(v));
        let inner_f = f.finish().unwrap();
        let inner = mb.add(inner_f);
        let mut f = mb.device_fn("outer", Some(Scalar::U64.into()));
        let i = f.param(Scalar::U32);
        let v = f.call(inner, vec![i]);
        f.ret(Some(v));
        let outer_f = f.finish().unwrap();
        mb.add(outer_f);
        let lib = mb.build();
        relok_ir::verify(&lib).unwrap();

        let mut user = user_with_import(Some(Scalar::U64.into()), Scalar::U32.into(), "outer");
        // A user constant before, so the library's handles must shift.
        user.consts.push(relok_ir::ConstDecl {
            name: "mine".into(),
            ty: Scalar::U32.into(),
            init: ConstInit::Scalar(1),
            span: Default::default(),
        });
        let linked = link(&user, &lib).unwrap();
        assert!(linked.func_by_name("inner").is_some());
        let tab2 = linked.const_by_name("tab").unwrap();
        let inner2 = &linked.funcs[linked.func_by_name("inner").unwrap()];
        let mut saw = false;
        walk_stmts(&inner2.body, &mut |s| {
            if let StmtKind::Let { op: Op::ConstAddr(c), .. } = &s.kind {
                saw = *c == tab2;
            }
        });
        assert!(saw);

        // A user item named like a pulled-in library item is an error.
        let mut clash = user.clone();
        clash.consts[ConstId::new(0)].name = "tab".into();
        assert!(matches!(link(&clash, &lib), Err(LinkError::NameClash { kind: "constant", .. })));
    }

    #[test]
    fn missing_import_is_an_error() {
        let lib = runtime_by_builder();
        let user = user_with_import(Some(Scalar::U64.into()), Scalar::U64.into(), "relok_nope");
        let e = link(&user, &lib).unwrap_err();
        assert!(matches!(&e, LinkError::MissingImport { name } if name == "relok_nope"));
        assert!(e.to_string().contains("@relok_nope"), "{e}");
    }

    #[test]
    fn signature_mismatch_is_an_error() {
        let lib = runtime_by_builder();
        let user = user_with_import(Some(Scalar::U64.into()), Scalar::U32.into(), "relok_count");
        let e = link(&user, &lib).unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, LinkError::SignatureMismatch { .. }));
        assert!(text.contains("fn @relok_count(u32) -> u64"), "{text}");
        assert!(text.contains("fn @relok_count(u64) -> u64"), "{text}");
    }

    #[test]
    fn unused_imports_stay() {
        let lib = runtime_by_builder();
        let mut user = ModuleBuilder::new().build();
        let mut imp = Function::new("relok_count", FuncKind::Import);
        imp.ret = Some(Scalar::U64.into());
        let p = imp.values.push(relok_ir::ValueData { ty: Scalar::U64.into() });
        imp.params.push(p);
        user.funcs.push(imp);
        let linked = link(&user, &lib).unwrap();
        assert_eq!(linked.funcs.len(), 1);
        assert_eq!(linked.funcs[FuncId::new(0)].kind, FuncKind::Device);
        // Uncalled and missing from the library: left as a declaration.
        user.funcs[FuncId::new(0)].name = "relok_nope".into();
        let linked = link(&user, &lib).unwrap();
        assert_eq!(linked.funcs[FuncId::new(0)].kind, FuncKind::Import);
    }
}
