//! Relocation lowering (docs/design.md §2–§3): one kernel of a source-stage module
//! becomes a module of stage `lowered <strategy>` plus its frozen manifest.
//!
//! # Records
//!
//! - every `ref` operation of the kernel is a **slot** record named
//!   [`record_name`]`(kernel, target)`;
//! - every constant the kernel takes the address of (`addr @c`) whose
//!   initializer holds `ref` leaves gives one **interior** record per leaf,
//!   named [`record_name_interior`]`(kernel, c)`, at the leaf's byte offset.
//!
//! Targets: `:sym` → [`Target::Symbol`]; `@c` → [`Target::Value`] keyed by
//! the constant's type (printed) and its bytes in the IR layout
//! (little-endian); `"text"` → [`Target::Value`] of type tag `str`;
//! `global g + n` → [`Target::Global`]. Every value target's bytes come back
//! in [`Lowered::values`] so a loader can register them.
//!
//! # Strategies
//!
//! - **bake**: `ref` → `word 0x…` from the resolver; ref leaves → the word.
//! - **patch**: `ref` → `patch NAME`; ref leaves → 0, and the constant is
//!   renamed to its record name (the loader writes each word at the record's
//!   offset into the constant of that name).
//! - **table**: `ref` → `t = state.reloc_table; i = const rank; load t[i]`
//!   before the use; a constant with ref leaves is copied into a kernel
//!   local `%relok_copy_<c>` at kernel entry (leaf by leaf, its words from
//!   the table), every `addr @c` of the kernel becomes `addr %relok_copy_<c>`
//!   and pointers derived from it turn from `ptr<const, X>` to
//!   `ptr<local, X>`. The constant itself keeps its other leaves for the
//!   copy; its word leaves become `u64` 0 (never read), so its type has
//!   `u64` where the source had `word`. A constant of words only is dropped.
//!
//! The output holds the kernel and the device functions it calls, in module
//! order, and only the constants they address. Device functions that the
//! kernel calls must hold no references (inline them first): the `table`
//! strategy could not reach the state from them.
//!
//! Everything iterates in module, statement or manifest order: the same
//! input gives the same printed module and manifest (docs/design.md §4).

use crate::reloc::{
    FrozenManifest, Manifest, ManifestError, Record, Site, SiteTable, Target, ValueKey, record_name,
    record_name_interior,
};
use relok_ir::{
    AddrSpace, Block, ConstDecl, ConstId, ConstInit, EntityRef, FuncId, FuncKind, Function, HostRef, LayoutError,
    Module, Op, Scalar, Stage, StateField, Stmt, StmtKind, Strategy, Type, Value, ValueData, Var, VarDecl, VarKind,
    walk_stmts,
};
use std::collections::BTreeMap;

/// A host value a lowered kernel refers to: register it with the session.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct HostValue {
    /// Its stable identity: `ValueKey::of(type_tag, bytes)`.
    pub key: ValueKey,
    /// The type tag (`str`, or the IR type as printed, e.g. `[u32; 4]`).
    pub type_tag: String,
    /// Its bytes (IR layout, little-endian).
    pub bytes: Vec<u8>,
}

/// One kernel after relocation lowering.
#[derive(Clone, Debug)]
pub struct Lowered {
    /// Stage `Lowered(strategy)`: the kernel and the functions it calls.
    pub module: Module,
    /// The kernel's name.
    pub kernel: String,
    /// The kernel's records, frozen (rank = table index).
    pub manifest: FrozenManifest,
    /// Every value target's type tag and bytes, sorted by key.
    pub values: Vec<HostValue>,
}

/// Why lowering failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LowerError {
    /// The module has no function of that name.
    #[error("no kernel @{0} in the module")]
    NoSuchKernel(String),
    /// The function is not a kernel.
    #[error("@{0} is not a kernel")]
    NotAKernel(String),
    /// Lowering produced a use of a value it never defined (a bug).
    #[error("lowering broke the value numbering: {0}")]
    Renumber(String),
    /// The module was lowered already.
    #[error("the module is already lowered ({0}); lowering takes a source-stage module")]
    NotSource(Strategy),
    /// A device function the kernel calls holds a reference.
    #[error(
        "kernel @{kernel} calls @{function}, which refers to host objects ({what}); \
         inline it into the kernel before lowering relocations"
    )]
    RefInDeviceFunction {
        /// The kernel.
        kernel: String,
        /// The device function.
        function: String,
        /// What it refers to.
        what: String,
    },
    /// The kernel calls an import that was never linked.
    #[error("kernel @{kernel} calls import fn @{function}, which was never linked")]
    Unlinked {
        /// The kernel.
        kernel: String,
        /// The import.
        function: String,
    },
    /// `bake` needs a resolver.
    #[error("the bake strategy needs the session's word resolver")]
    MissingResolver,
    /// The resolver failed.
    #[error("cannot resolve the word of {target}: {message}")]
    Resolve {
        /// The target.
        target: Target,
        /// The resolver's message.
        message: String,
    },
    /// A constant has no layout or is not shaped like its type.
    #[error("constant @{name}: {why}")]
    BadConstant {
        /// The constant.
        name: String,
        /// What is wrong.
        why: String,
    },
    /// A pointer into a constant with relocated words (table strategy) goes
    /// somewhere its type cannot follow.
    #[error(
        "kernel @{kernel}: under the table strategy constant @{constant} is copied into kernel-local \
         memory, but a pointer into it {why}"
    )]
    PointerEscapes {
        /// The kernel.
        kernel: String,
        /// The constant.
        constant: String,
        /// Where it goes.
        why: String,
    },
    /// A manifest rule was broken (conflict, bad name, missing site).
    #[error(transparent)]
    Manifest(#[from] ManifestError),
}

type Resolver<'a> = &'a dyn Fn(&Target) -> Result<u64, String>;

/// Lowers the relocations of kernel `kernel` of `module` with `strategy`.
/// `words` is the session's resolver for one device: required for
/// Resolves a target to its word on one device (the `bake` strategy).
pub type WordResolver<'a> = &'a dyn Fn(&Target) -> Result<u64, String>;

/// [`Strategy::Bake`], ignored otherwise.
pub fn lower(
    module: &Module,
    kernel: &str,
    strategy: Strategy,
    words: Option<WordResolver<'_>>,
) -> Result<Lowered, LowerError> {
    if let Stage::Lowered(s) = module.stage {
        return Err(LowerError::NotSource(s));
    }
    let kid = module.func_by_name(kernel).ok_or_else(|| LowerError::NoSuchKernel(kernel.to_owned()))?;
    let kfunc = &module.funcs[kid];
    if kfunc.kind != FuncKind::Kernel {
        return Err(LowerError::NotAKernel(kernel.to_owned()));
    }
    let resolver: Option<Resolver<'_>> = match strategy {
        Strategy::Bake => Some(words.ok_or(LowerError::MissingResolver)?),
        _ => None,
    };

    // Functions kept: the kernel and what it reaches, in module order.
    let mut keep = vec![false; module.funcs.len()];
    let mut work = vec![kid];
    while let Some(g) = work.pop() {
        if std::mem::replace(&mut keep[g.index()], true) {
            continue;
        }
        walk_stmts(&module.funcs[g].body, &mut |s| {
            if let StmtKind::Call(h, _) | StmtKind::Let { op: Op::Call(h, _), .. } = &s.kind
                && module.funcs.contains(*h)
            {
                work.push(*h);
            }
        });
    }
    for (id, f) in module.funcs.iter() {
        if !keep[id.index()] || id == kid {
            continue;
        }
        if f.kind == FuncKind::Import {
            return Err(LowerError::Unlinked { kernel: kernel.to_owned(), function: f.name.clone() });
        }
        if let Some(what) = refers_to_host(module, f) {
            return Err(LowerError::RefInDeviceFunction { kernel: kernel.to_owned(), function: f.name.clone(), what });
        }
    }

    // Records and values.
    let mut manifest = Manifest::new();
    let mut values = BTreeMap::new();
    let mut slot_targets: Vec<(String, Target)> = Vec::new();
    let mut err = None;
    walk_stmts(&kfunc.body, &mut |s| {
        if let StmtKind::Let { op: Op::Ref(r), .. } = &s.kind
            && err.is_none()
        {
            match target_of(module, r, &mut values) {
                Ok(t) => slot_targets.push((record_name(kernel, &t), t)),
                Err(e) => err = Some(e),
            }
        }
    });
    if let Some(e) = err {
        return Err(e);
    }
    for (name, t) in &slot_targets {
        manifest.add(Record::slot(name.clone(), t.clone()))?;
    }
    // Constants the kernel addresses that hold ref leaves, in module order.
    let kernel_consts = addressed_consts(kfunc);
    let mut ref_consts: Vec<ConstId> = Vec::new();
    for (cid, c) in module.consts.iter() {
        if kernel_consts.contains(&cid) && has_refs(&c.init) {
            ref_consts.push(cid);
            for leaf in leaves_of(c)? {
                if let ConstInit::Ref(r) = leaf.init {
                    let t = target_of(module, r, &mut values)?;
                    manifest.add(Record::interior(record_name_interior(kernel, &c.name), leaf.offset, t))?;
                }
            }
        }
    }
    let manifest = manifest.freeze();

    // The kernel, rewritten.
    let mut k = kfunc.clone();
    let mut copies: Vec<(ConstId, Var)> = Vec::new();
    match strategy {
        Strategy::Bake | Strategy::Patch => {
            let mut err = None;
            let mut i = 0;
            walk_lets_mut(&mut k.body, &mut |op| {
                if let Op::Ref(_) = op {
                    let (name, t) = &slot_targets[i];
                    i += 1;
                    *op = match resolver {
                        Some(words) => match words(t) {
                            Ok(w) => Op::BakedWord(w),
                            Err(message) => {
                                err.get_or_insert(LowerError::Resolve { target: t.clone(), message });
                                Op::BakedWord(0)
                            }
                        },
                        None => Op::Patch(name.clone()),
                    };
                }
            });
            if let Some(e) = err {
                return Err(e);
            }
        }
        Strategy::Table => {
            let ranks: Vec<u32> = slot_targets
                .iter()
                .map(|(name, _)| manifest.rank(name, 0).expect("every slot record is in the manifest") as u32)
                .collect();
            let mut i = 0;
            let body = std::mem::take(&mut k.body);
            k.body = expand_block(body, &mut k.values, &mut |stmt, values, out| match stmt.kind {
                StmtKind::Let { result, op: Op::Ref(_) } => {
                    let rank = ranks[i];
                    i += 1;
                    // The load defines the original result: its uses stay.
                    table_load(values, out, rank, Some(result));
                }
                kind => out.push(Stmt { kind, span: stmt.span }),
            });
            for &cid in &ref_consts {
                let c = &module.consts[cid];
                let name = format!("relok_copy_{}", c.name);
                if k.var_by_name(&name).is_some() {
                    return Err(LowerError::PointerEscapes {
                        kernel: kernel.to_owned(),
                        constant: c.name.clone(),
                        why: format!("cannot be copied: the kernel already has a variable %{name}"),
                    });
                }
                let var =
                    k.vars.push(VarDecl { name, kind: VarKind::Local, ty: c.ty.clone(), span: Default::default() });
                copies.push((cid, var));
            }
            if !copies.is_empty() {
                retarget_const_pointers(module, kernel, &mut k, &copies)?;
                let prologue = copy_prologue(module, kernel, &manifest, &mut k.values, &copies)?;
                let rest = std::mem::take(&mut k.body);
                k.body = prologue;
                k.body.extend(rest);
            }
            crate::passes::renumber(&mut k).map_err(|e| LowerError::Renumber(e.to_string()))?;
        }
    }

    // The output module.
    let mut out = Module { stage: Stage::Lowered(strategy), ..Module::new() };
    let mut cmap: Vec<Option<ConstId>> = vec![None; module.consts.len()];
    let mut used = vec![false; module.consts.len()];
    for (id, f) in module.funcs.iter() {
        if keep[id.index()] {
            let f = if id == kid { &k } else { f };
            for c in addressed_consts(f) {
                used[c.index()] = true;
            }
        }
    }
    for (cid, c) in module.consts.iter() {
        if !used[cid.index()] {
            continue;
        }
        let mut c = c.clone();
        if ref_consts.contains(&cid) {
            let mut err = None;
            map_ref_leaves(&mut c.init, &mut |r| match (strategy, resolver) {
                (Strategy::Bake, Some(words)) => {
                    let t = match target_of(module, r, &mut BTreeMap::new()) {
                        Ok(t) => t,
                        Err(e) => {
                            err.get_or_insert(e);
                            return ConstInit::Scalar(0);
                        }
                    };
                    match words(&t) {
                        Ok(w) => ConstInit::Scalar(w),
                        Err(message) => {
                            err.get_or_insert(LowerError::Resolve { target: t, message });
                            ConstInit::Scalar(0)
                        }
                    }
                }
                _ => ConstInit::Scalar(0),
            });
            if let Some(e) = err {
                return Err(e);
            }
            match strategy {
                Strategy::Patch => c.name = record_name_interior(kernel, &c.name),
                // Only the kernel's copy holds words; the constant keeps the
                // rest (its word leaves become `u64` 0, never read).
                Strategy::Table => c.ty = without_words(&c.ty),
                Strategy::Bake => {}
            }
        }
        cmap[cid.index()] = Some(out.consts.push(c));
    }
    let fmap = renumbering(&keep);
    let fm = |g: FuncId| fmap.get(g.index()).copied().flatten().unwrap_or(g);
    let cm = |c: ConstId| cmap.get(c.index()).copied().flatten().unwrap_or(c);
    for (id, f) in module.funcs.iter() {
        if keep[id.index()] {
            let mut f = if id == kid { k.clone() } else { f.clone() };
            remap_items(&mut f, &fm, &cm);
            out.funcs.push(f);
        }
    }
    let lowered = Lowered { module: out, kernel: kernel.to_owned(), manifest, values: values.into_values().collect() };
    // Baked code holds the words themselves, not sites: its manifest only
    // says which words were baked (e.g. to key a per-session cache).
    if strategy != Strategy::Bake {
        lowered.manifest.validate(&site_table(&lowered))?;
    }
    Ok(lowered)
}

/// The sites the lowered code contains (see [`FrozenManifest::validate`]):
/// `patch`: every `patch NAME` as a slot and every renamed constant as an
/// aggregate of its size; `table`: one slot per table load the kernel holds
/// (named by the record of its index), and one aggregate per kernel-local
/// copy of a constant; `bake`: none.
pub fn site_table(lowered: &Lowered) -> SiteTable {
    let mut st = SiteTable::new();
    let agg_prefix = record_name_interior(&lowered.kernel, "");
    match lowered.module.stage {
        Stage::Lowered(Strategy::Patch) => {
            for f in lowered.module.funcs.values() {
                walk_stmts(&f.body, &mut |s| {
                    if let StmtKind::Let { op: Op::Patch(name), .. } = &s.kind {
                        st.slots.insert(name.clone());
                    }
                });
            }
            for c in lowered.module.consts.values() {
                if c.name.starts_with(&agg_prefix)
                    && let Ok(size) = c.ty.size()
                {
                    st.aggregates.insert(c.name.clone(), size);
                }
            }
        }
        Stage::Lowered(Strategy::Table) => {
            let Some(kid) = lowered.module.func_by_name(&lowered.kernel) else { return st };
            let k = &lowered.module.funcs[kid];
            let mut is_table = vec![false; k.values.len()];
            let mut consts: Vec<Option<u64>> = vec![None; k.values.len()];
            let records = lowered.manifest.records();
            walk_stmts(&k.body, &mut |s| {
                let StmtKind::Let { result, op } = &s.kind else { return };
                match op {
                    Op::State(StateField::RelocTable) => is_table[result.index()] = true,
                    Op::Const(bits) => consts[result.index()] = Some(*bits),
                    Op::Load { ptr, index: Some(i) } if is_table.get(ptr.index()) == Some(&true) => {
                        let rank = consts.get(i.index()).copied().flatten();
                        if let Some(r) = rank.and_then(|r| records.get(r as usize)) {
                            match r.site() {
                                Site::Slot => {
                                    st.slots.insert(r.name().to_owned());
                                }
                                Site::Interior { .. } => {
                                    let copy = k.vars.values().find(|d| {
                                        d.name
                                            .strip_prefix("relok_copy_")
                                            .is_some_and(|c| record_name_interior(&lowered.kernel, c) == r.name())
                                    });
                                    if let Some(size) = copy.and_then(|d| d.ty.size().ok()) {
                                        st.aggregates.insert(r.name().to_owned(), size);
                                    }
                                }
                            }
                        }
                    }
                    _ => {}
                }
            });
        }
        _ => {}
    }
    st
}

// ---- targets and constant layout ---------------------------------------

fn target_of(module: &Module, r: &HostRef, values: &mut BTreeMap<ValueKey, HostValue>) -> Result<Target, LowerError> {
    Ok(match r {
        HostRef::Symbol(s) => Target::Symbol(s.clone()),
        HostRef::Global { name, offset } => Target::Global { name: name.clone(), offset: *offset },
        HostRef::Str(s) => {
            let key = ValueKey::of("str", s.as_bytes());
            values.entry(key).or_insert_with(|| HostValue {
                key,
                type_tag: "str".into(),
                bytes: s.as_bytes().to_vec(),
            });
            Target::Value(key)
        }
        HostRef::Value(c) => {
            let Some(d) = module.consts.get(*c) else {
                return Err(LowerError::BadConstant { name: c.to_string(), why: "no such constant".into() });
            };
            let bytes = const_bytes(d)?;
            let tag = d.ty.to_string();
            let key = ValueKey::of(&tag, &bytes);
            values.entry(key).or_insert(HostValue { key, type_tag: tag, bytes });
            Target::Value(key)
        }
    })
}

/// One scalar leaf of a constant.
struct Leaf<'a> {
    /// Field/element indices from the top.
    path: Vec<u32>,
    /// Byte offset.
    offset: u32,
    /// Its type.
    scalar: Scalar,
    /// Its initializer (`Scalar` or `Ref`).
    init: &'a ConstInit,
}

fn bad(c: &ConstDecl, why: impl Into<String>) -> LowerError {
    LowerError::BadConstant { name: c.name.clone(), why: why.into() }
}

fn layout(c: &ConstDecl, r: Result<u32, LayoutError>) -> Result<u32, LowerError> {
    r.map_err(|e| bad(c, e.to_string()))
}

fn leaves_of(c: &ConstDecl) -> Result<Vec<Leaf<'_>>, LowerError> {
    fn go<'a>(
        c: &ConstDecl,
        ty: &Type,
        init: &'a ConstInit,
        offset: u32,
        path: &mut Vec<u32>,
        out: &mut Vec<Leaf<'a>>,
    ) -> Result<(), LowerError> {
        match (ty, init) {
            (Type::Scalar(s), ConstInit::Scalar(_) | ConstInit::Ref(_)) => {
                if matches!(init, ConstInit::Ref(_)) && *s != Scalar::Word {
                    return Err(bad(c, format!("a `ref` leaf must be a word, not {s}")));
                }
                out.push(Leaf { path: path.clone(), offset, scalar: *s, init });
            }
            (Type::Array(e, n), ConstInit::Array(items)) if items.len() == *n as usize => {
                let size = layout(c, e.size())?;
                for (i, item) in items.iter().enumerate() {
                    path.push(i as u32);
                    go(c, e, item, offset + size * i as u32, path, out)?;
                    path.pop();
                }
            }
            (Type::Struct(fields), ConstInit::Struct(items)) if items.len() == fields.len() => {
                for (i, (f, item)) in fields.iter().zip(items).enumerate() {
                    let off = layout(c, ty.field_offset(i).expect("field in range"))?;
                    path.push(i as u32);
                    go(c, f, item, offset + off, path, out)?;
                    path.pop();
                }
            }
            _ => return Err(bad(c, format!("initializer is not shaped like {ty}"))),
        }
        Ok(())
    }
    layout(c, c.ty.size())?;
    let mut out = Vec::new();
    go(c, &c.ty, &c.init, 0, &mut Vec::new(), &mut out)?;
    Ok(out)
}

/// A lowered constant's bytes in the IR layout, little-endian, padding
/// zero, word leaves as their (baked or 0) bits: what a device places in
/// memory (the cpu device, the PTX and WGSL backends). A `ref` leaf (not
/// lowered) is an error.
pub fn const_image(c: &ConstDecl) -> Result<Vec<u8>, String> {
    fn go(ty: &Type, init: &ConstInit, offset: usize, bytes: &mut [u8]) -> Result<(), String> {
        match (ty, init) {
            (Type::Scalar(s), ConstInit::Scalar(bits)) => {
                let n = s.size() as usize;
                let dst = bytes.get_mut(offset..offset + n).ok_or("out of range")?;
                dst.copy_from_slice(&bits.to_le_bytes()[..n]);
                Ok(())
            }
            (Type::Array(e, n), ConstInit::Array(items)) if items.len() == *n as usize => {
                let size = e.size().map_err(|e| e.to_string())? as usize;
                items.iter().enumerate().try_for_each(|(i, item)| go(e, item, offset + i * size, bytes))
            }
            (Type::Struct(fields), ConstInit::Struct(items)) if items.len() == fields.len() => {
                for (i, (fty, item)) in fields.iter().zip(items).enumerate() {
                    let off = ty.field_offset(i).ok_or("no such field")?.map_err(|e| e.to_string())? as usize;
                    go(fty, item, offset + off, bytes)?;
                }
                Ok(())
            }
            (_, ConstInit::Ref(_)) => Err("a `ref` leaf reaches the device: lower the module first".into()),
            _ => Err(format!("initializer is not shaped like {ty}")),
        }
    }
    let size = c.ty.size().map_err(|e| e.to_string())?;
    let mut bytes = vec![0u8; size as usize];
    go(&c.ty, &c.init, 0, &mut bytes)?;
    Ok(bytes)
}

/// A host value's bytes: its initializer in the IR layout, little-endian,
/// padding zero.
fn const_bytes(c: &ConstDecl) -> Result<Vec<u8>, LowerError> {
    let size = layout(c, c.ty.size())?;
    let mut bytes = vec![0u8; size as usize];
    for leaf in leaves_of(c)? {
        let ConstInit::Scalar(bits) = leaf.init else {
            return Err(bad(c, "a host value holds no words: it has a `ref` leaf"));
        };
        if leaf.scalar == Scalar::Word {
            return Err(bad(c, "a host value holds no words"));
        }
        let n = leaf.scalar.size() as usize;
        let at = leaf.offset as usize;
        bytes[at..at + n].copy_from_slice(&bits.to_le_bytes()[..n]);
    }
    Ok(bytes)
}

fn has_refs(init: &ConstInit) -> bool {
    match init {
        ConstInit::Ref(_) => true,
        ConstInit::Scalar(_) => false,
        ConstInit::Array(items) | ConstInit::Struct(items) => items.iter().any(has_refs),
    }
}

fn map_ref_leaves(init: &mut ConstInit, f: &mut impl FnMut(&HostRef) -> ConstInit) {
    match init {
        ConstInit::Ref(r) => *init = f(r),
        ConstInit::Scalar(_) => {}
        ConstInit::Array(items) | ConstInit::Struct(items) => items.iter_mut().for_each(|i| map_ref_leaves(i, f)),
    }
}

/// Constants `f` takes the address of, first use first, no duplicates.
fn addressed_consts(f: &Function) -> Vec<ConstId> {
    let mut out = Vec::new();
    walk_stmts(&f.body, &mut |s| {
        if let StmtKind::Let { op: Op::ConstAddr(c), .. } = &s.kind
            && !out.contains(c)
        {
            out.push(*c);
        }
    });
    out
}

/// What host objects `f` refers to, if any (for the inlining precondition).
fn refers_to_host(module: &Module, f: &Function) -> Option<String> {
    let mut what = None;
    walk_stmts(&f.body, &mut |s| {
        if what.is_some() {
            return;
        }
        match &s.kind {
            StmtKind::Let { op: Op::Ref(r), .. } => what = Some(format!("ref {}", host_ref_text(module, r))),
            StmtKind::Let { op: Op::ConstAddr(c), .. } => {
                if let Some(d) = module.consts.get(*c).filter(|d| has_refs(&d.init)) {
                    what = Some(format!("constant @{} holds ref fields", d.name));
                }
            }
            _ => {}
        }
    });
    what
}

fn host_ref_text(module: &Module, r: &HostRef) -> String {
    match r {
        HostRef::Symbol(s) => format!(":{s}"),
        HostRef::Value(c) => format!("@{}", module.consts.get(*c).map_or("?", |d| d.name.as_str())),
        HostRef::Str(s) => format!("{s:?}"),
        HostRef::Global { name, offset: 0 } => format!("global {name}"),
        HostRef::Global { name, offset } => format!("global {name} + {offset}"),
    }
}

// ---- table strategy ------------------------------------------------------

fn push_let(values: &mut relok_ir::Arena<Value, ValueData>, out: &mut Block, ty: Type, op: Op) -> Value {
    let result = values.push(ValueData { ty });
    out.push(Stmt::new(StmtKind::Let { result, op }));
    result
}

/// `t = state.reloc_table; i = const rank; w = load t[i]`; returns `w`,
/// which is `into` when given (an existing `word` value), else a new value.
fn table_load(
    values: &mut relok_ir::Arena<Value, ValueData>,
    out: &mut Block,
    rank: u32,
    into: Option<Value>,
) -> Value {
    let t = push_let(values, out, StateField::RelocTable.ty(), Op::State(StateField::RelocTable));
    let i = push_let(values, out, Type::Scalar(Scalar::U32), Op::Const(u64::from(rank)));
    let op = Op::Load { ptr: t, index: Some(i) };
    match into {
        Some(result) => {
            out.push(Stmt::new(StmtKind::Let { result, op }));
            result
        }
        None => push_let(values, out, Type::Scalar(Scalar::Word), op),
    }
}

/// `ty` with every `word` replaced by `u64` (same layout).
fn without_words(ty: &Type) -> Type {
    match ty {
        Type::Scalar(Scalar::Word) => Type::Scalar(Scalar::U64),
        Type::Scalar(_) | Type::Ptr(..) => ty.clone(),
        Type::Array(e, n) => Type::array(without_words(e), *n),
        Type::Struct(fields) => Type::Struct(fields.iter().map(without_words).collect()),
    }
}

/// The type of `addr` of a variable or constant of type `ty` in `space`
/// (arrays decay to a pointer to their first element).
fn addr_type(space: AddrSpace, ty: &Type) -> Type {
    match ty {
        Type::Array(e, _) => Type::ptr(space, (**e).clone()),
        t => Type::ptr(space, t.clone()),
    }
}

/// A pointer to the leaf at `path` from `base` (the `addr` of a `ty`).
fn leaf_ptr(
    values: &mut relok_ir::Arena<Value, ValueData>,
    out: &mut Block,
    space: AddrSpace,
    base: Value,
    ty: &Type,
    path: &[u32],
) -> Value {
    let mut p = base;
    let mut cur = ty;
    let mut rest = path;
    if let Type::Array(e, _) = ty {
        let i = path[0];
        if i != 0 {
            let iv = push_let(values, out, Type::Scalar(Scalar::U32), Op::Const(u64::from(i)));
            p = push_let(values, out, Type::ptr(space, (**e).clone()), Op::Offset { ptr: p, index: iv });
        }
        cur = e;
        rest = &path[1..];
    }
    for &i in rest {
        match cur {
            Type::Struct(fields) => {
                cur = &fields[i as usize];
                p = push_let(values, out, Type::ptr(space, cur.clone()), Op::Field { ptr: p, field: i });
            }
            Type::Array(e, _) => {
                cur = e;
                let iv = push_let(values, out, Type::Scalar(Scalar::U32), Op::Const(u64::from(i)));
                p = push_let(values, out, Type::ptr(space, cur.clone()), Op::Elem { ptr: p, index: iv });
            }
            Type::Scalar(_) | Type::Ptr(..) => unreachable!("leaf paths end at scalars"),
        }
    }
    p
}

/// Copies each constant into its local, its words from the table.
fn copy_prologue(
    module: &Module,
    kernel: &str,
    manifest: &FrozenManifest,
    values: &mut relok_ir::Arena<Value, ValueData>,
    copies: &[(ConstId, Var)],
) -> Result<Block, LowerError> {
    let mut out = Block::new();
    for &(cid, var) in copies {
        let c = &module.consts[cid];
        let name = record_name_interior(kernel, &c.name);
        let src_ty = without_words(&c.ty);
        let src = push_let(values, &mut out, addr_type(AddrSpace::Const, &src_ty), Op::ConstAddr(cid));
        let dst = push_let(values, &mut out, addr_type(AddrSpace::Local, &c.ty), Op::VarAddr(var));
        for leaf in leaves_of(c)? {
            let v = match leaf.init {
                ConstInit::Ref(_) => {
                    let rank = manifest.rank(&name, leaf.offset).expect("interior record in the manifest");
                    table_load(values, &mut out, rank as u32, None)
                }
                _ => {
                    let p = leaf_ptr(values, &mut out, AddrSpace::Const, src, &src_ty, &leaf.path);
                    push_let(values, &mut out, Type::Scalar(leaf.scalar), Op::Load { ptr: p, index: None })
                }
            };
            let q = leaf_ptr(values, &mut out, AddrSpace::Local, dst, &c.ty, &leaf.path);
            out.push(Stmt::new(StmtKind::Store { ptr: q, index: None, value: v }));
        }
    }
    Ok(out)
}

/// Every `addr @c` of a copied constant becomes `addr %copy`; pointers
/// derived from it become `ptr<local, X>`.
fn retarget_const_pointers(
    module: &Module,
    kernel: &str,
    k: &mut Function,
    copies: &[(ConstId, Var)],
) -> Result<(), LowerError> {
    // Which copied constant each derived pointer points into.
    let mut derived: Vec<Option<ConstId>> = vec![None; k.values.len()];
    let Function { body, values, .. } = k;
    let escape = |c: ConstId, why: String| LowerError::PointerEscapes {
        kernel: kernel.to_owned(),
        constant: module.consts[c].name.clone(),
        why,
    };
    let mut err: Option<LowerError> = None;
    let to_local = |t: &mut Type| {
        if let Type::Ptr(space, _) = t {
            *space = AddrSpace::Local;
        }
    };
    relok_ir::walk_stmts_mut(body, &mut |s| {
        let d = |v: Value, derived: &Vec<Option<ConstId>>| derived.get(v.index()).copied().flatten();
        match &mut s.kind {
            StmtKind::Let { result, op } => {
                let src = match op {
                    Op::ConstAddr(c) => copies.iter().find(|(cc, _)| cc == c).map(|&(c, var)| {
                        *op = Op::VarAddr(var);
                        c
                    }),
                    Op::Elem { ptr, .. } | Op::Field { ptr, .. } | Op::Offset { ptr, .. } => d(*ptr, &derived),
                    Op::Select(_, a, b) => match (d(*a, &derived), d(*b, &derived)) {
                        (Some(x), Some(_)) => Some(x),
                        (Some(x), None) | (None, Some(x)) => {
                            err.get_or_insert(escape(
                                x,
                                format!("meets another pointer in the select defining {result}"),
                            ));
                            None
                        }
                        (None, None) => None,
                    },
                    other => {
                        let mut hit = None;
                        other.for_each_operand(|v| hit = hit.or(d(v, &derived)));
                        if let Some(x) = hit
                            && !matches!(other, Op::Load { .. })
                        {
                            err.get_or_insert(escape(x, format!("is used by the operation defining {result}")));
                        }
                        None
                    }
                };
                if let Some(c) = src {
                    derived[result.index()] = Some(c);
                    to_local(&mut values[*result].ty);
                }
            }
            StmtKind::Set { value, .. } => {
                if let Some(x) = d(*value, &derived) {
                    err.get_or_insert(escape(x, "is stored in a variable".into()));
                }
            }
            StmtKind::Store { value, .. } => {
                if let Some(x) = d(*value, &derived) {
                    err.get_or_insert(escape(x, "is stored to memory".into()));
                }
            }
            StmtKind::Call(_, args) => {
                if let Some(x) = args.iter().find_map(|&a| d(a, &derived)) {
                    err.get_or_insert(escape(x, "is passed to a call".into()));
                }
            }
            _ => {}
        }
    });
    err.map_or(Ok(()), Err)
}

// ---- IR rewriting helpers ----------------------------------------------

fn walk_lets_mut(block: &mut Block, f: &mut impl FnMut(&mut Op)) {
    relok_ir::walk_stmts_mut(block, &mut |s| {
        if let StmtKind::Let { op, .. } = &mut s.kind {
            f(op);
        }
    });
}

/// Rebuilds `block`, letting `f` replace each statement by any number.
fn expand_block<V>(block: Block, values: &mut V, f: &mut impl FnMut(Stmt, &mut V, &mut Block)) -> Block {
    let mut out = Block::with_capacity(block.len());
    for mut s in block {
        match &mut s.kind {
            StmtKind::If { then_body, else_body, .. } => {
                *then_body = expand_block(std::mem::take(then_body), values, f);
                *else_body = expand_block(std::mem::take(else_body), values, f);
            }
            StmtKind::Loop(body) => *body = expand_block(std::mem::take(body), values, f),
            _ => {}
        }
        f(s, values, &mut out);
    }
    out
}

/// Rewrites `f`'s function and constant handles (calls, `addr @c`,
/// `ref @c`) through `fm` and `cm`.
/// The new handle of each kept function (`keep[i]`), numbered in order;
/// `None` for the others.
pub(crate) fn renumbering(keep: &[bool]) -> Vec<Option<FuncId>> {
    let mut next = 0;
    keep.iter()
        .map(|&k| {
            k.then(|| {
                next += 1;
                FuncId::new(next - 1)
            })
        })
        .collect()
}

pub(crate) fn remap_items(f: &mut Function, fm: &impl Fn(FuncId) -> FuncId, cm: &impl Fn(ConstId) -> ConstId) {
    relok_ir::walk_stmts_mut(&mut f.body, &mut |s| match &mut s.kind {
        StmtKind::Call(g, _) | StmtKind::Let { op: Op::Call(g, _), .. } => *g = fm(*g),
        StmtKind::Let { op: Op::ConstAddr(c) | Op::Ref(HostRef::Value(c)), .. } => *c = cm(*c),
        _ => {}
    });
}
