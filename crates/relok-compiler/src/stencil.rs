//! The stencil of a kernel: exactly the part of a module its code depends
//! on, in canonical text — what a cache key hashes (cranelift's "stencil",
//! wasmtime's hashable description of a compilation).
//!
//! [`Stencil::new`] keeps the kernel, every function it calls and every
//! constant those functions or constants refer to, in module order, with
//! handles renumbered; links the runtime library into that (its functions
//! become part of the stencil); and prints the result. Other kernels and
//! unused items of the module do not affect the stencil: editing one kernel
//! of a file leaves the keys of the others unchanged.
//!
//! The key covers the stencil's text and the inputs in [`KeyInputs`], and
//! nothing else — not addresses, words, paths or times (docs/design.md §5, §8):
//! [`KeyInputs::key`] hashes each field length-prefixed under a version
//! tag, so no two different inputs share a byte string.

use crate::CompileError;
use crate::link::{init_consts, link, remap_init, runtime_library, uses};
use crate::lower::{remap_items, renumbering};
use crate::state::STATE_LAYOUT_VERSION;
use crate::target::{COMPILER_ID, CodeTarget, CompileOptions};
use relok_ir::{ConstId, EntityRef, FuncId, FuncKind, Module, Strategy, VerifiedModule};
use sha2::{Digest, Sha256};

/// One kernel and everything it depends on, linked, with its canonical text.
#[derive(Clone, Debug)]
pub struct Stencil {
    /// The kernel, its callees (the runtime library's included) and the
    /// constants they use; stage `source`.
    pub module: Module,
    /// The kernel's name.
    pub kernel: String,
    /// `print(&module)`: the canonical text the key hashes.
    pub text: String,
}

impl Stencil {
    /// The stencil of `kernel` in `module`: a module the verifier accepted
    /// (its [`VerifiedModule`] is the proof, as naga's backends take
    /// naga's `ModuleInfo`), so extracting, linking and printing it may
    /// rely on every handle being valid.
    pub fn new(module: &VerifiedModule, kernel: &str) -> Result<Stencil, CompileError> {
        let module = module.module();
        let kid = module.func_by_name(kernel).ok_or_else(|| CompileError::UnknownKernel(kernel.to_owned()))?;
        let what = match module.funcs[kid].kind {
            FuncKind::Kernel => None,
            FuncKind::Device => Some("a device function"),
            FuncKind::Import => Some("an imported function"),
        };
        if let Some(what) = what {
            return Err(CompileError::NotAKernel { name: kernel.to_owned(), what });
        }
        // The runtime library first, then the math library: each link
        // refuses a called import its library lacks, and a kernel may both
        // throw (`@relok_throw`) and use math (a Rust kernel's bounds checks
        // and `x.exp()`).
        let mut m = extract(module, kid);
        if m.funcs.values().any(|f| f.kind == FuncKind::Import) {
            m = link(&m, &runtime_library()?)?;
        }
        let m = crate::math::link_math(&m)?;
        let text = relok_ir::print(&m);
        Ok(Stencil { module: m, kernel: kernel.to_owned(), text })
    }

    /// The key of compiling this stencil for `target` with `strategy` and
    /// `options` by this compiler.
    pub fn key(&self, target: CodeTarget, strategy: Strategy, options: CompileOptions) -> [u8; 32] {
        KeyInputs {
            compiler: COMPILER_ID,
            state_layout: STATE_LAYOUT_VERSION,
            target,
            strategy,
            options,
            ir: &self.text,
        }
        .key()
    }
}

/// The first-level key of kernel `kernel` of the text-format source
/// `text` under this compiler ([`SourceKeyInputs`] with [`COMPILER_ID`]).
/// It costs a hash of the text — no parse, no verification, no stencil —
/// so a warm start looks its kernel up without touching the compiler. The
/// compiler is deterministic, so one source key names one artifact (whose
/// own key, [`Stencil::key`], is the second level and the one artifacts
/// are compiled and checked under); caches keep the pair.
pub fn source_key(
    text: &str,
    kernel: &str,
    target: CodeTarget,
    strategy: Strategy,
    options: CompileOptions,
) -> [u8; 32] {
    SourceKeyInputs {
        compiler: COMPILER_ID,
        state_layout: STATE_LAYOUT_VERSION,
        target,
        strategy,
        options,
        kernel,
        text,
    }
    .key()
}

/// Everything a source key covers: [`KeyInputs`] with the source text and
/// the kernel's name in place of the canonical IR.
#[derive(Clone, Copy, Debug)]
pub struct SourceKeyInputs<'a> {
    /// The compiler's identity ([`COMPILER_ID`]).
    pub compiler: &'a str,
    /// The kernel-state ABI version.
    pub state_layout: u32,
    /// What code is generated.
    pub target: CodeTarget,
    /// How host objects are delivered.
    pub strategy: Strategy,
    /// Compile options.
    pub options: CompileOptions,
    /// The kernel's name.
    pub kernel: &'a str,
    /// The source text.
    pub text: &'a str,
}

impl SourceKeyInputs<'_> {
    /// SHA-256 over the fields, each length-prefixed, under a version tag
    /// of its own (a source key never equals an artifact key).
    pub fn key(&self) -> [u8; 32] {
        let mut h = Sha256::new();
        let mut field = |bytes: &[u8]| {
            h.update((bytes.len() as u64).to_le_bytes());
            h.update(bytes);
        };
        field(b"relok-source-key-v1");
        field(self.compiler.as_bytes());
        field(&self.state_layout.to_le_bytes());
        field(self.target.name().as_bytes());
        field(self.strategy.name().as_bytes());
        field(&self.options.to_bytes());
        field(self.kernel.as_bytes());
        field(self.text.as_bytes());
        h.finalize().into()
    }
}

/// Everything a cache key covers. Adding a field here is the only way to
/// make something part of the key.
#[derive(Clone, Copy, Debug)]
pub struct KeyInputs<'a> {
    /// The compiler's identity ([`COMPILER_ID`]).
    pub compiler: &'a str,
    /// The kernel-state ABI version.
    pub state_layout: u32,
    /// What code is generated.
    pub target: CodeTarget,
    /// How host objects are delivered.
    pub strategy: Strategy,
    /// Compile options.
    pub options: CompileOptions,
    /// The stencil's canonical text.
    pub ir: &'a str,
}

impl KeyInputs<'_> {
    /// SHA-256 over the fields, each length-prefixed, under a version tag.
    pub fn key(&self) -> [u8; 32] {
        let mut h = Sha256::new();
        let mut field = |bytes: &[u8]| {
            h.update((bytes.len() as u64).to_le_bytes());
            h.update(bytes);
        };
        field(b"relok-key-v1");
        field(self.compiler.as_bytes());
        field(&self.state_layout.to_le_bytes());
        field(self.target.name().as_bytes());
        field(self.strategy.name().as_bytes());
        field(&self.options.to_bytes());
        field(self.ir.as_bytes());
        h.finalize().into()
    }
}

/// The kernel `kid` of `module` with the functions it reaches and the
/// constants they use, in module order, handles renumbered.
fn extract(module: &Module, kid: FuncId) -> Module {
    let mut keep_f = vec![false; module.funcs.len()];
    let mut keep_c = vec![false; module.consts.len()];
    let mut work = vec![kid];
    while let Some(g) = work.pop() {
        if !module.funcs.contains(g) || std::mem::replace(&mut keep_f[g.index()], true) {
            continue;
        }
        let (fs, cs) = uses(&module.funcs[g]);
        work.extend(fs);
        let mut cwork = cs;
        while let Some(c) = cwork.pop() {
            if module.consts.contains(c) && !std::mem::replace(&mut keep_c[c.index()], true) {
                init_consts(&module.consts[c].init, &mut cwork);
            }
        }
    }
    let fmap = renumbering(&keep_f);
    let mut cmap = vec![None; module.consts.len()];
    let mut out = Module { stage: module.stage, ..Module::new() };
    for (id, c) in module.consts.iter() {
        if keep_c[id.index()] {
            cmap[id.index()] = Some(out.consts.push(c.clone()));
        }
    }
    let fm = |g: FuncId| fmap.get(g.index()).copied().flatten().unwrap_or(g);
    let cm = |c: ConstId| cmap.get(c.index()).copied().flatten().unwrap_or(c);
    for c in out.consts.values_mut() {
        remap_init(&mut c.init, &cm);
    }
    for (id, f) in module.funcs.iter() {
        if keep_f[id.index()] {
            let mut f = f.clone();
            remap_items(&mut f, &fm, &cm);
            out.funcs.push(f);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = "\
const @tab: [u32; 2] = [1, 2]
const @other: u32 = 7
fn @sq(v0: u32) -> u32 {
    v1: u32 = mul v0, v0
    return v1
}
fn @unused(v0: u32) -> u32 {
    return v0
}
kernel @a(v0: ptr<global, u32>) {
    v1: ptr<const, u32> = addr @tab
    v2: u32 = load v1
    v3: u32 = call @sq(v2)
    store v0, v3
    return
}
kernel @b(v0: ptr<global, u32>) {
    v1: ptr<const, u32> = addr @other
    v2: u32 = load v1
    store v0, v2
    return
}
";

    #[test]
    fn keeps_what_the_kernel_reaches() {
        let m = VerifiedModule::new(relok_ir::parse(TWO).unwrap()).expect("verifies");
        let s = Stencil::new(&m, "a").unwrap();
        relok_ir::verify(&s.module).unwrap();
        assert!(s.text.contains("@tab") && s.text.contains("@sq"));
        assert!(!s.text.contains("@other") && !s.text.contains("@unused") && !s.text.contains("@b"));
        let b = Stencil::new(&m, "b").unwrap();
        assert!(b.text.contains("@other") && !b.text.contains("@tab"));
    }

    #[test]
    fn other_kernels_do_not_change_the_key() {
        let m = VerifiedModule::new(relok_ir::parse(TWO).unwrap()).expect("verifies");
        let edited = relok_ir::parse(&TWO.replace("@other: u32 = 7", "@other: u32 = 8")).unwrap();
        let edited = VerifiedModule::new(edited).expect("verifies");
        let key = |m: &VerifiedModule, k: &str| {
            Stencil::new(m, k).unwrap().key(CodeTarget::Cpu, Strategy::Table, CompileOptions::default())
        };
        assert_eq!(key(&m, "a"), key(&edited, "a"));
        assert_ne!(key(&m, "b"), key(&edited, "b"));
    }

    #[test]
    fn every_keyed_input_changes_the_key() {
        let base = KeyInputs {
            compiler: "relok-0.1.0-aaaa",
            state_layout: 1,
            target: CodeTarget::Cpu,
            strategy: Strategy::Table,
            options: CompileOptions::default(),
            ir: "kernel @k() {\n    return\n}\n",
        };
        let variants = [
            KeyInputs { compiler: "relok-0.1.0-aaab", ..base },
            KeyInputs { state_layout: 2, ..base },
            KeyInputs { strategy: Strategy::Patch, ..base },
            KeyInputs { strategy: Strategy::Bake, ..base },
            KeyInputs { options: CompileOptions { optimize: false, ..CompileOptions::default() }, ..base },
            KeyInputs { ir: "kernel @j() {\n    return\n}\n", ..base },
            // Length prefixes: moving bytes between fields changes the key.
            KeyInputs { compiler: "relok-0.1.0-aaaak", ir: "ernel @k() {\n    return\n}\n", ..base },
        ];
        let mut keys = vec![base.key()];
        for v in variants {
            let k = v.key();
            assert!(!keys.contains(&k), "{v:?}");
            keys.push(k);
        }
        // Deterministic, and a stencil's key is exactly its KeyInputs' key.
        assert_eq!(base.key(), base.key());
        let m = VerifiedModule::new(relok_ir::parse(TWO).unwrap()).expect("verifies");
        let s = Stencil::new(&m, "a").unwrap();
        assert_eq!(
            s.key(CodeTarget::Cpu, Strategy::Table, CompileOptions::default()),
            KeyInputs {
                compiler: COMPILER_ID,
                state_layout: STATE_LAYOUT_VERSION,
                target: CodeTarget::Cpu,
                strategy: Strategy::Table,
                options: CompileOptions::default(),
                ir: &s.text,
            }
            .key()
        );
    }

    #[test]
    fn errors_name_the_kernel() {
        let m = VerifiedModule::new(relok_ir::parse(TWO).unwrap()).expect("verifies");
        assert_eq!(Stencil::new(&m, "zz").unwrap_err().to_string(), "no kernel @zz in the module");
        assert_eq!(Stencil::new(&m, "sq").unwrap_err().to_string(), "@sq is a device function, not a kernel");
    }
}
