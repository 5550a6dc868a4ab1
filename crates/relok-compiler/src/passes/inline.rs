//! Inlining: every call of a `fn` (device function) is replaced by the
//! callee's body, callees first, so kernels become self-contained; device
//! functions are then removed (`import fn` declarations and kernels stay).
//!
//! A call site becomes, in the caller:
//!
//! ```text
//! loop {                      ; only when the callee returns early
//!     <callee body, values renamed, locals renamed i<N>_<callee>_<name>>
//!     break
//! }
//! vR = get %i<N>_<callee>_ret  ; only for a call with a result
//! ```
//!
//! where each `return v` becomes `set %ret, v; break`. A `return` inside a
//! loop of the callee also sets a flag local `%…_done`, checked after every
//! callee loop that contains a return (`if done { break }`), so control
//! leaves every callee loop up to the wrapper. Callee locals are zero-filled
//! on every call on the cpu device; an inlined site inside a loop of the
//! caller therefore re-zeroes the callee's scalar and aggregate locals on
//! entry (pointer locals are left as they are: reading one before writing it
//! has no meaning).

use super::{PassError, map_stmt, renumber_all};
use relok_ir::{
    AddrSpace, BinaryOp, Block, CmpOp, FuncId, FuncKind, Function, Module, Op, Scalar, Stmt, StmtKind, Type, Value,
    ValueData, Var, VarDecl, VarKind,
};
use std::collections::HashMap;

/// Inlines every device-function call in `module` and removes the device
/// functions; returns how many call sites were inlined.
pub fn inline(module: &mut Module) -> Result<usize, PassError> {
    inline_keeping(module, &[])
}

/// [`inline`], but the device functions named in `keep` stay functions,
/// called where they were (a target that writes them once, out of line:
/// the runtime library's throws on WGSL, `crate::wgsl::throws`, and on
/// PTX, the writer's throw tails). A call of a kept function
/// whose every path ends in `exit` is followed by an `exit`, so that the
/// caller still shows that it never comes back (a bounds check's failure
/// path must, for the conditions after it to be known).
pub fn inline_keeping(module: &mut Module, keep: &[&str]) -> Result<usize, PassError> {
    let kept = |f: &Function| f.kind == FuncKind::Device && keep.contains(&f.name.as_str());
    let exiting: Vec<FuncId> =
        module.funcs.iter().filter(|(_, f)| kept(f) && always_exits(&f.body)).map(|(id, _)| id).collect();
    if !exiting.is_empty() {
        let ids: Vec<FuncId> = module.funcs.keys().collect();
        for id in ids {
            exit_after_calls(&mut module.funcs[id].body, &exiting);
        }
    }
    let ids: Vec<FuncId> = module.funcs.keys().collect();
    let mut state: HashMap<FuncId, bool> = HashMap::new(); // false: in progress, true: done
    for (id, f) in module.funcs.iter() {
        if kept(f) {
            state.insert(id, true);
        }
    }
    let mut count = 0;
    for id in ids {
        flatten(module, id, &mut state, &mut count, &kept)?;
    }
    // Remove the device functions, remapping the ids of the calls that remain
    // (to imports and kept functions).
    let old = std::mem::take(&mut module.funcs);
    let mut remap = HashMap::new();
    for (id, f) in old.iter() {
        if f.kind != FuncKind::Device || kept(f) {
            remap.insert(id, module.funcs.push(f.clone()));
        }
    }
    let ids: Vec<FuncId> = module.funcs.keys().collect();
    for id in ids {
        remap_calls(&mut module.funcs[id].body, &remap);
    }
    renumber_all(module)?;
    Ok(count)
}

fn remap_calls(block: &mut Block, remap: &HashMap<FuncId, FuncId>) {
    for s in block {
        match &mut s.kind {
            StmtKind::Let { op: Op::Call(f, _), .. } | StmtKind::Call(f, _) => {
                if let Some(&n) = remap.get(f) {
                    *f = n;
                }
            }
            StmtKind::If { then_body, else_body, .. } => {
                remap_calls(then_body, remap);
                remap_calls(else_body, remap);
            }
            StmtKind::Loop(body) => remap_calls(body, remap),
            _ => {}
        }
    }
}

/// Whether every path through `body` ends in `exit` (no `return`).
fn always_exits(body: &[Stmt]) -> bool {
    let mut returns = false;
    relok_ir::walk_stmts(body, &mut |s| returns |= matches!(s.kind, StmtKind::Return(_)));
    !returns && !relok_ir::falls_through(body)
}

/// Puts an `exit` after every call of one of `fs` in `block` (and the
/// blocks in it) that is not followed by one.
fn exit_after_calls(block: &mut Block, fs: &[FuncId]) {
    let mut i = 0;
    while i < block.len() {
        let call = matches!(&block[i].kind, StmtKind::Call(g, _) if fs.contains(g));
        if call {
            if !matches!(block.get(i + 1).map(|s| &s.kind), Some(StmtKind::Exit)) {
                let span = block[i].span;
                block.insert(i + 1, Stmt { kind: StmtKind::Exit, span });
            }
            i += 2;
            continue;
        }
        match &mut block[i].kind {
            StmtKind::If { then_body, else_body, .. } => {
                exit_after_calls(then_body, fs);
                exit_after_calls(else_body, fs);
            }
            StmtKind::Loop(body) => exit_after_calls(body, fs),
            _ => {}
        }
        i += 1;
    }
}

fn callees(block: &[Stmt], out: &mut Vec<FuncId>) {
    relok_ir::walk_stmts(block, &mut |s| match &s.kind {
        StmtKind::Let { op: Op::Call(f, _), .. } | StmtKind::Call(f, _) => out.push(*f),
        _ => {}
    });
}

/// Inlines every device call of `id`, after flattening its callees.
fn flatten(
    module: &mut Module,
    id: FuncId,
    state: &mut HashMap<FuncId, bool>,
    count: &mut usize,
    kept: &impl Fn(&Function) -> bool,
) -> Result<(), PassError> {
    match state.get(&id) {
        Some(true) => return Ok(()),
        Some(false) => return Err(PassError::Recursion(module.funcs[id].name.clone())),
        None => {}
    }
    state.insert(id, false);
    let mut cs = Vec::new();
    callees(&module.funcs[id].body, &mut cs);
    let mut bodies = HashMap::new();
    for c in cs {
        if module.funcs.get(c).is_some_and(|f| f.kind == FuncKind::Device && !kept(f)) && !bodies.contains_key(&c) {
            flatten(module, c, state, count, kept)?;
            bodies.insert(c, module.funcs[c].clone());
        }
    }
    if !bodies.is_empty() {
        let f = &mut module.funcs[id];
        let body = std::mem::take(&mut f.body);
        let mut cx = Inliner { f, callees: &bodies, sites: 0 };
        let body = cx.block(body, false);
        *count += cx.sites;
        f.body = body;
    }
    state.insert(id, true);
    Ok(())
}

struct Inliner<'a> {
    f: &'a mut Function,
    callees: &'a HashMap<FuncId, Function>,
    sites: usize,
}

/// Renaming of one inlined call site.
struct Site {
    values: HashMap<Value, Value>,
    vars: HashMap<Var, Var>,
    ret: Option<Var>,
    done: Option<Var>,
    wrapped: bool,
}

fn has_return(block: &[Stmt]) -> bool {
    let mut found = false;
    relok_ir::walk_stmts(block, &mut |s| found |= matches!(s.kind, StmtKind::Return(_)));
    found
}

fn return_in_loop(block: &[Stmt]) -> bool {
    block.iter().any(|s| match &s.kind {
        StmtKind::Loop(b) => has_return(b),
        StmtKind::If { then_body, else_body, .. } => return_in_loop(then_body) || return_in_loop(else_body),
        _ => false,
    })
}

impl Inliner<'_> {
    fn value(&mut self, ty: Type) -> Value {
        self.f.values.push(ValueData { ty })
    }

    fn let_(&mut self, out: &mut Block, op: Op, ty: Type) -> Value {
        let result = self.value(ty);
        out.push(Stmt::new(StmtKind::Let { result, op }));
        result
    }

    fn local(&mut self, base: String, ty: Type) -> Var {
        let mut name = base;
        while self.f.var_by_name(&name).is_some() {
            name.push('_');
        }
        self.f.vars.push(VarDecl { name, kind: VarKind::Local, ty, span: relok_ir::Span::default() })
    }

    fn block(&mut self, block: Block, in_loop: bool) -> Block {
        let mut out = Vec::with_capacity(block.len());
        for mut s in block {
            match &mut s.kind {
                StmtKind::Let { result, op: Op::Call(c, args) } if self.callees.contains_key(c) => {
                    let (c, args, result) = (*c, args.clone(), *result);
                    self.expand(&mut out, c, &args, Some(result), in_loop);
                    continue;
                }
                StmtKind::Call(c, args) if self.callees.contains_key(c) => {
                    let (c, args) = (*c, args.clone());
                    self.expand(&mut out, c, &args, None, in_loop);
                    continue;
                }
                StmtKind::If { then_body, else_body, .. } => {
                    *then_body = self.block(std::mem::take(then_body), in_loop);
                    *else_body = self.block(std::mem::take(else_body), in_loop);
                }
                StmtKind::Loop(body) => *body = self.block(std::mem::take(body), true),
                _ => {}
            }
            out.push(s);
        }
        out
    }

    fn expand(&mut self, out: &mut Block, c: FuncId, args: &[Value], result: Option<Value>, in_loop: bool) {
        let callees = self.callees;
        let callee = &callees[&c];
        let n = self.sites;
        self.sites += 1;
        let tag: String =
            callee.name.chars().map(|ch| if ch.is_ascii_alphanumeric() || ch == '_' { ch } else { '_' }).collect();
        let prefix = format!("i{n}_{tag}");
        let mut values: HashMap<Value, Value> = callee.params.iter().copied().zip(args.iter().copied()).collect();
        for (v, d) in callee.values.iter() {
            if let std::collections::hash_map::Entry::Vacant(e) = values.entry(v) {
                e.insert(self.value(d.ty.clone()));
            }
        }
        let mut vars = HashMap::new();
        for (v, d) in callee.vars.iter() {
            let nv = self.local(format!("{prefix}_{}", d.name), d.ty.clone());
            vars.insert(v, nv);
        }
        let ret = match (&callee.ret, result) {
            (Some(ty), Some(_)) => Some(self.local(format!("{prefix}_ret"), ty.clone())),
            _ => None,
        };
        let done = return_in_loop(&callee.body).then(|| self.local(format!("{prefix}_done"), Scalar::Bool.into()));
        let returns = {
            let mut k = 0;
            relok_ir::walk_stmts(&callee.body, &mut |s| k += usize::from(matches!(s.kind, StmtKind::Return(_))));
            k
        };
        let final_return = matches!(callee.body.last().map(|s| &s.kind), Some(StmtKind::Return(_)));
        let wrapped = !(returns == 0 || (returns == 1 && final_return));
        if in_loop {
            for (_, &nv) in vars.iter().collect::<std::collections::BTreeMap<_, _>>() {
                self.zero_var(out, nv);
            }
        }
        if let Some(done) = done {
            let f = self.let_(out, Op::Const(0), Scalar::Bool.into());
            out.push(Stmt::new(StmtKind::Set { var: done, value: f }));
        }
        let site = Site { values, vars, ret, done, wrapped };
        let mut body = self.rewrite(&site, &callee.body, 0);
        if wrapped {
            body.push(Stmt::new(StmtKind::Break));
            out.push(Stmt::new(StmtKind::Loop(body)));
        } else {
            out.extend(body);
        }
        if let (Some(result), Some(ret)) = (result, ret) {
            out.push(Stmt::new(StmtKind::Let { result, op: Op::Get(ret) }));
        }
    }

    /// The callee's `block` at `depth` callee loops, renamed into the caller.
    fn rewrite(&mut self, site: &Site, block: &[Stmt], depth: u32) -> Block {
        let mut out = Vec::with_capacity(block.len());
        let mut vmap = |v: Value| site.values.get(&v).copied().unwrap_or(v);
        for s in block {
            let span = s.span;
            let kind = match &s.kind {
                StmtKind::Return(v) => {
                    if let (Some(v), Some(ret)) = (v, site.ret) {
                        out.push(Stmt { kind: StmtKind::Set { var: ret, value: vmap(*v) }, span });
                    }
                    if depth > 0
                        && let Some(done) = site.done
                    {
                        let t = self.let_(&mut out, Op::Const(1), Scalar::Bool.into());
                        out.push(Stmt::new(StmtKind::Set { var: done, value: t }));
                    }
                    if site.wrapped {
                        out.push(Stmt { kind: StmtKind::Break, span });
                    }
                    continue;
                }
                StmtKind::If { cond, then_body, else_body } => StmtKind::If {
                    cond: vmap(*cond),
                    then_body: self.rewrite(site, then_body, depth),
                    else_body: self.rewrite(site, else_body, depth),
                },
                StmtKind::Loop(body) => {
                    out.push(Stmt { kind: StmtKind::Loop(self.rewrite(site, body, depth + 1)), span });
                    if let Some(done) = site.done
                        && has_return(body)
                    {
                        let d = self.let_(&mut out, Op::Get(done), Scalar::Bool.into());
                        out.push(Stmt::new(StmtKind::If {
                            cond: d,
                            then_body: vec![Stmt::new(StmtKind::Break)],
                            else_body: Vec::new(),
                        }));
                    }
                    continue;
                }
                other => {
                    let mut st = Stmt { kind: other.clone(), span };
                    map_stmt(&mut st, &mut vmap, true);
                    match &mut st.kind {
                        StmtKind::Let { op: Op::VarAddr(v) | Op::Get(v), .. } | StmtKind::Set { var: v, .. } => {
                            if let Some(&nv) = site.vars.get(v) {
                                *v = nv;
                            }
                        }
                        _ => {}
                    }
                    st.kind
                }
            };
            out.push(Stmt { kind, span });
        }
        out
    }

    /// Re-zeroes the local `var` (as a fresh call frame would be).
    fn zero_var(&mut self, out: &mut Block, var: Var) {
        let ty = self.f.vars[var].ty.clone();
        match &ty {
            Type::Scalar(s) => {
                if let Some(z) = self.zero(out, *s) {
                    out.push(Stmt::new(StmtKind::Set { var, value: z }));
                }
            }
            Type::Ptr(..) => {}
            Type::Array(elem, len) => {
                let p = self.let_(out, Op::VarAddr(var), Type::ptr(AddrSpace::Local, (**elem).clone()));
                let elem = (**elem).clone();
                self.zero_loop(out, *len, |cx, body, i| {
                    let q = cx.let_(body, Op::Offset { ptr: p, index: i }, Type::ptr(AddrSpace::Local, elem.clone()));
                    cx.zero_mem(body, q, &elem);
                });
            }
            Type::Struct(_) => {
                let p = self.let_(out, Op::VarAddr(var), Type::ptr(AddrSpace::Local, ty.clone()));
                self.zero_mem(out, p, &ty);
            }
        }
    }

    /// A zero of scalar `s` (a `word` zero is `bitcast` of `u64 0`).
    fn zero(&mut self, out: &mut Block, s: Scalar) -> Option<Value> {
        if s == Scalar::Word {
            let z = self.let_(out, Op::Const(0), Scalar::U64.into());
            return Some(self.let_(out, Op::Bitcast(z), Scalar::Word.into()));
        }
        Some(self.let_(out, Op::Const(0), s.into()))
    }

    /// Stores zeros over the `ty` that `p` (a `ptr<local, ty>`) points at.
    fn zero_mem(&mut self, out: &mut Block, p: Value, ty: &Type) {
        match ty {
            Type::Scalar(s) => {
                if let Some(z) = self.zero(out, *s) {
                    out.push(Stmt::new(StmtKind::Store { ptr: p, index: None, value: z }));
                }
            }
            Type::Ptr(..) => {}
            Type::Array(elem, len) => {
                let elem = (**elem).clone();
                self.zero_loop(out, *len, |cx, body, i| {
                    let q = cx.let_(body, Op::Elem { ptr: p, index: i }, Type::ptr(AddrSpace::Local, elem.clone()));
                    cx.zero_mem(body, q, &elem);
                });
            }
            Type::Struct(fields) => {
                for (k, fty) in fields.iter().enumerate() {
                    let q =
                        self.let_(out, Op::Field { ptr: p, field: k as u32 }, Type::ptr(AddrSpace::Local, fty.clone()));
                    self.zero_mem(out, q, fty);
                }
            }
        }
    }

    /// `for i in 0..len { each(i) }` over a fresh `u32` counter local.
    fn zero_loop(&mut self, out: &mut Block, len: u32, each: impl FnOnce(&mut Self, &mut Block, Value)) {
        let cnt = self.local("zero_i".to_owned(), Scalar::U32.into());
        let z = self.let_(out, Op::Const(0), Scalar::U32.into());
        out.push(Stmt::new(StmtKind::Set { var: cnt, value: z }));
        let mut body = Vec::new();
        let i = self.let_(&mut body, Op::Get(cnt), Scalar::U32.into());
        let n = self.let_(&mut body, Op::Const(u64::from(len)), Scalar::U32.into());
        let done = self.let_(&mut body, Op::Compare(CmpOp::Ge, i, n), Scalar::Bool.into());
        body.push(Stmt::new(StmtKind::If {
            cond: done,
            then_body: vec![Stmt::new(StmtKind::Break)],
            else_body: vec![],
        }));
        each(self, &mut body, i);
        let one = self.let_(&mut body, Op::Const(1), Scalar::U32.into());
        let next = self.let_(&mut body, Op::Binary(BinaryOp::Add, i, one), Scalar::U32.into());
        body.push(Stmt::new(StmtKind::Set { var: cnt, value: next }));
        out.push(Stmt::new(StmtKind::Loop(body)));
    }
}
