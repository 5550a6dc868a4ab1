//! The verifier: checks every invariant of [`crate::ir`] that a backend, the
//! interpreter or a pass relies on, collects every problem it finds, and on
//! success returns a [`ModuleInfo`] that consumers take as proof that it ran.
//!
//! It never panics, whatever the input (hand-assembled modules with dangling
//! handles included), and reports many errors at once rather than the first.
//!
//! # Invariants checked
//!
//! Module (`items.rs`):
//! - function and constant names are identifiers `[A-Za-z_][A-Za-z0-9_]*`
//!   and unique in one namespace;
//! - a constant's type contains no pointer, and has a layout (no empty
//!   arrays or structs, at most 4 GiB); `word` fields are allowed;
//! - a constant's initializer is shaped exactly like its type (one item per
//!   array element, one per struct field) and every literal fits its scalar
//!   ([`crate::typing::literal_fits`]);
//! - `word` leaves: `ref ...` in source modules (a literal there is an
//!   error: words come from host objects), a literal in `lowered bake` and
//!   `lowered patch`, none at all in `lowered table`; `ref ...` only at
//!   `word` leaves, only before lowering, with valid names, and `ref @c`
//!   only of a constant holding no words or pointers.
//!
//! Phase 1, per function: handles and order (`handles.rs`). Phase 2 runs only
//! on functions that pass it, so it may index freely.
//! - every value, variable, function and constant handle indexes its arena;
//! - parameters are `v0, v1, ...` in order;
//! - every other value is defined by exactly one `Let`, and the `Let`s
//!   define them in increasing index order in text (depth-first) order: the
//!   canonical numbering;
//! - every use is dominated by its definition: defined earlier in the same
//!   block or in an enclosing one (a value defined in an `if` or `loop` body
//!   is not visible after it, nor is a `Let`'s result in its own operation).
//!
//! Phase 2, per function: types and rules (`rules.rs`).
//! - every value's type is a scalar or pointer whose pointee has a layout;
//! - every `Let` is well typed against its declared type
//!   ([`crate::typing::check`]);
//! - `store p[i], v`: `p` is a pointer, not into `const` memory, to a scalar
//!   or pointer type equal to `v`'s; `i` is an integer;
//! - `set %x, v`: `%x` is a scalar or pointer `local` of `v`'s type;
//! - `call @f(..)` as a statement: arguments match
//!   ([`crate::typing::check_call`], which also rejects calling kernels) and
//!   `@f` has no result;
//! - an `if` condition is `bool`; `break` and `continue` are inside a loop;
//! - kernels: no result type, `return` without a value, parameters are
//!   scalars or `ptr<global, T>`, and each `len(vK)` parameter
//!   ([`crate::LenParam`]) is a `u32` counting a `ptr<global, T>`
//!   parameter's elements, each parameter in at most one; device functions: parameters and result
//!   are scalars or pointers, `return` matches the result type, and a device
//!   function with a result cannot reach its end (some statement of the body
//!   returns on every path: `return` or `exit`, an `if` whose branches both
//!   do, or a `loop` without a `break`);
//! - variables: names are identifiers unique in the function; types have a
//!   layout (`word`s and pointers are allowed); `shared` only in kernels,
//!   whose shared variables together take at most 4 GiB.
//!
//! - stages: `ref` operations only in source modules ("lowering leaves no
//!   `ref`"); `word` only in `lowered bake`, `patch` only in `lowered
//!   patch`; symbol names `[A-Za-z0-9_.]+`, global names `[A-Za-z0-9_]+`,
//!   patch names `[A-Za-z0-9_$]+` (all non-empty);
//! - `import fn`: no statements and no variables (calls to it are fine:
//!   linking supplies the body);
//! - `exit` is allowed anywhere and ends every path like `return`.
//!
//! Call graph (`calls.rs`): no recursion; every cycle is reported by name.

mod calls;
mod error;
mod handles;
mod items;
mod rules;
#[cfg(test)]
mod tests;

pub use error::{NameKind, VerifyError, VerifyErrorKind, VerifyErrors};

use crate::entity::EntityRef;
use crate::ir::{FuncId, Module};
use error::Reporter;

/// What the verifier learned about one function.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct FunctionInfo {
    /// Whether it executes a `barrier`, itself or through a call.
    pub uses_barrier: bool,
    /// The functions it calls directly, sorted, without duplicates.
    pub callees: Vec<FuncId>,
    /// Kernels: the bytes of its `shared` variables, laid out in declaration
    /// order like struct fields. Device functions: 0.
    pub shared_bytes: u32,
}

/// Proof that a module passed verification, with facts backends use. Only
/// [`verify`] makes one.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ModuleInfo {
    functions: Vec<FunctionInfo>,
    call_order: Vec<FuncId>,
}

impl ModuleInfo {
    /// Facts about function `f` (`None` for a handle of another module).
    pub fn function(&self, f: FuncId) -> Option<&FunctionInfo> {
        self.functions.get(f.index())
    }
    /// Facts about every function, indexed by [`FuncId`].
    pub fn functions(&self) -> &[FunctionInfo] {
        &self.functions
    }
    /// Every function once, callees before their callers (a valid order to
    /// compile or inline in).
    pub fn call_order(&self) -> &[FuncId] {
        &self.call_order
    }
}

impl std::ops::Index<FuncId> for ModuleInfo {
    type Output = FunctionInfo;
    fn index(&self, f: FuncId) -> &FunctionInfo {
        &self.functions[f.index()]
    }
}

/// A module the verifier accepted, kept with the verifier's facts
/// ([`ModuleInfo`]): the proof that verification ran, which the compiler
/// takes (`relok_compiler::stencil::Stencil::new`) as naga's backends take
/// naga's `ModuleInfo`. Only [`VerifiedModule::new`] makes one, and it
/// gives its module out read-only, so the facts stay the module's.
///
/// ```
/// let m = relok_ir::parse("kernel @k() {\n    return\n}\n").unwrap();
/// let v = relok_ir::VerifiedModule::new(m).unwrap();
/// assert_eq!(v.info().functions().len(), v.module().funcs.len());
/// ```
#[derive(Clone, Debug)]
pub struct VerifiedModule {
    module: Module,
    info: ModuleInfo,
}

impl VerifiedModule {
    /// Verifies `module` ([`verify`]): the module with its facts, or every
    /// problem found.
    pub fn new(module: Module) -> Result<VerifiedModule, VerifyErrors> {
        let info = verify(&module)?;
        Ok(VerifiedModule { module, info })
    }

    /// The module.
    pub fn module(&self) -> &Module {
        &self.module
    }

    /// What the verifier found.
    pub fn info(&self) -> &ModuleInfo {
        &self.info
    }

    /// The module, giving up the proof.
    pub fn into_module(self) -> Module {
        self.module
    }
}

impl std::ops::Deref for VerifiedModule {
    type Target = Module;
    fn deref(&self) -> &Module {
        &self.module
    }
}

/// Verifies `module`: every problem found, or the facts of a valid module.
pub fn verify(module: &Module) -> Result<ModuleInfo, VerifyErrors> {
    let mut errors = Vec::new();
    items::names(module, &mut errors);
    for c in module.consts.values() {
        items::constant(module, c, &mut Reporter { errors: &mut errors, func: Some(&c.name) });
    }
    for f in module.funcs.values() {
        let mut r = Reporter { errors: &mut errors, func: Some(&f.name) };
        if handles::check(module, f, &mut r) {
            rules::check(module, f, &mut r);
        }
    }
    let graph = calls::direct(module);
    let call_order = calls::order(module, &graph, &mut errors);
    if !errors.is_empty() {
        return Err(VerifyErrors { errors });
    }
    let functions = calls::infos(module, graph, &call_order);
    Ok(ModuleInfo { functions, call_order })
}
