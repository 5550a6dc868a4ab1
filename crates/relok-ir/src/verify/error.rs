//! Verifier errors: one small [`VerifyErrorKind`] per broken rule, wrapped
//! in a [`VerifyError`] that says where (function or constant, value, span),
//! collected into [`VerifyErrors`].

use crate::ir::{ConstId, FuncId, Span, Strategy, Value, Var};
use crate::types::{LayoutError, Scalar, Type};
use crate::typing::TypeError;
use std::fmt::{self, Write as _};

/// What kind of name a [`VerifyErrorKind::BadName`] or
/// [`VerifyErrorKind::DuplicateName`] is about.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum NameKind {
    /// `@name` of a function.
    Function,
    /// `@name` of a constant.
    Constant,
    /// `%name` of a variable.
    Variable,
}

impl fmt::Display for NameKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NameKind::Function => "function",
            NameKind::Constant => "constant",
            NameKind::Variable => "variable",
        })
    }
}

/// One broken rule. Variants are grouped by the phase that finds them; the
/// list of rules is in the [module docs](super).
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum VerifyErrorKind {
    // ---- phase 1: handles and order ----
    /// A value handle outside the function's `values`.
    #[error("{0} does not exist")]
    DanglingValue(Value),
    /// A variable handle outside the function's `vars`.
    #[error("variable {0} does not exist")]
    DanglingVar(Var),
    /// A function handle outside the module's `funcs`.
    #[error("function {0} does not exist")]
    DanglingFunc(FuncId),
    /// A constant handle outside the module's `consts`.
    #[error("constant {0} does not exist")]
    DanglingConst(ConstId),
    /// `params[index]` is not `v{index}`.
    #[error("parameter {index} is {found}; parameters must be v0, v1, ... in order")]
    ParamOrder {
        /// Position in the parameter list.
        index: u32,
        /// The value found there.
        found: Value,
    },
    /// A value defined by a second `Let` (or a parameter redefined).
    #[error("{0} is defined more than once")]
    Redefined(Value),
    /// A `Let` that breaks the canonical numbering (reported once per
    /// function, at the first break).
    #[error("{found} is defined where {expected} is expected: values are numbered in definition order")]
    OutOfOrder {
        /// The value defined.
        found: Value,
        /// The value the numbering expects here.
        expected: Value,
    },
    /// A value of the arena that no parameter or `Let` defines.
    #[error("{0} is never defined")]
    Undefined(Value),
    /// A use whose definition is not earlier in this block or an enclosing one.
    #[error("{0} is used where it is not defined: its definition must come earlier in this block or an enclosing one")]
    NotDominated(Value),

    // ---- phase 2: types and rules ----
    /// An operation breaks a typing rule of [`crate::typing`].
    #[error("{0}")]
    Type(#[source] Box<TypeError>),
    /// A value whose type is not a scalar or pointer.
    #[error("a value cannot have type {0}: values are scalars or pointers{hint}", hint = storage_hint(.0))]
    NotValueType(Box<Type>),
    /// A type (of a variable, constant, value's pointee, ...) without a layout.
    #[error("type {ty} has no layout: {source}")]
    Layout {
        /// The type.
        ty: Box<Type>,
        /// Why.
        #[source]
        source: LayoutError,
    },
    /// A `store` whose operands have the wrong types.
    #[error("store: {0}")]
    Store(#[source] Box<TypeError>),
    /// A `store` through a `ptr<const, T>`.
    #[error("store into `const` memory: constants are read-only")]
    StoreToConst,
    /// `set` of a shared variable or of one that is not a scalar or pointer.
    #[error("`set %{var}`: only scalar or pointer `local` variables can be set; %{var} is a {}{ty}{}", if *.shared { "shared " } else { "" }, storage_hint(ty))]
    SetTarget {
        /// The variable's name.
        var: String,
        /// Its type.
        ty: Box<Type>,
        /// Whether it is `shared`.
        shared: bool,
    },
    /// `set` of a value whose type is not the variable's.
    #[error("`set %{var}`: the variable is {}, the value is {}", .types.0, .types.1)]
    SetMismatch {
        /// The variable's name.
        var: String,
        /// The variable's type and the value's type.
        types: Box<(Type, Type)>,
    },
    /// A `call` statement that breaks the callee's signature.
    #[error("{0}")]
    Call(#[source] Box<TypeError>),
    /// A `call` statement of a function that returns a value.
    #[error("`call @{callee}` as a statement drops its {ret} result; bind it with `vN: T = call ...`")]
    UnusedResult {
        /// The callee's name.
        callee: String,
        /// Its result type.
        ret: Box<Type>,
    },
    /// An `if` whose condition is not `bool`.
    #[error("the `if` condition is {0}, not bool")]
    CondNotBool(Box<Type>),
    /// `break` outside every loop.
    #[error("`break` outside a loop")]
    BreakOutsideLoop,
    /// `continue` outside every loop.
    #[error("`continue` outside a loop")]
    ContinueOutsideLoop,
    /// `return v` in a kernel.
    #[error("kernels return no value")]
    KernelReturnsValue,
    /// `return` / `return v` that does not match a device function's result.
    #[error("{}", return_message(.expected.as_deref(), .found.as_deref()))]
    ReturnType {
        /// The declared result type.
        expected: Option<Box<Type>>,
        /// The returned value's type.
        found: Option<Box<Type>>,
    },
    /// A device function with a result that may fall off its end.
    #[error("the function returns {0} but may reach its end without `return`")]
    MissingReturn(Box<Type>),
    /// A `shared` variable in a device function.
    #[error("shared %{0}: only kernels declare `shared` variables")]
    SharedInDevice(String),
    /// A kernel's shared variables take more than 4 GiB.
    #[error("the kernel's shared variables take more than 4 GiB")]
    SharedTooLarge,
    /// A kernel parameter that is not a scalar or `ptr<global, T>` (the
    /// error's `value` is the parameter).
    #[error("kernel parameters are scalars or ptr<global, T>, not {0}{hint}", hint = storage_hint(.0))]
    KernelParam(Box<Type>),
    /// A `len(…)` parameter that is not a kernel's `u32` parameter naming
    /// another of its parameters, a `ptr<global, T>`, once (the error's
    /// `value` is the length parameter; [`crate::LenParam`]).
    #[error("`len(…)`: {0}")]
    BadLenParam(String),
    /// A `block(x, y, z)` shape ([`crate::Function::block`]) on a device
    /// function, or one no device can launch ([`crate::block_shape_problem`]).
    #[error("`block(…)`: {0}")]
    BadBlock(String),
    /// A kernel with a result type.
    #[error("kernels have no result type (declared {0})")]
    KernelResult(Box<Type>),
    /// A device function's result type is not a scalar or pointer.
    #[error("result type {0} is not a scalar or pointer")]
    BadResultType(Box<Type>),
    /// A name that is not `[A-Za-z_][A-Za-z0-9_]*`.
    #[error("{kind} name `{name}` is not an identifier ([A-Za-z_][A-Za-z0-9_]*)")]
    BadName {
        /// Function, constant or variable.
        kind: NameKind,
        /// The name.
        name: String,
    },
    /// A name used twice (functions and constants share one namespace;
    /// variables are unique within their function).
    #[error("{kind} name `{name}` is already taken")]
    DuplicateName {
        /// Function, constant or variable.
        kind: NameKind,
        /// The name.
        name: String,
    },
    /// A constant whose type contains a pointer (`word` fields are fine:
    /// they hold host objects' words).
    #[error("constant type {0} contains a pointer; constants are plain data (a `word` field may hold `ref ...`)")]
    ConstTypeNotData(Box<Type>),
    /// A scalar literal in a `word` field of a source-stage constant.
    #[error("initializer{path}: a literal in a `word` field; words come from host objects (write `ref ...`)")]
    ConstWordLiteral {
        /// Where in the initializer.
        path: Box<str>,
    },
    /// A `ref ...` initializer where the type is not `word`.
    #[error("initializer{path}: `ref` gives a word, but the type here is {ty}")]
    ConstRefNotWord {
        /// Where in the initializer.
        path: Box<str>,
        /// The type at that position.
        ty: Box<Type>,
    },
    /// A `word` field of a constant in `lowered table` code, where no word
    /// stays in a constant (the table delivers it).
    #[error("initializer{path}: a `word` field in `lowered table` code; the table delivers words, constants hold none")]
    ConstWordInTable {
        /// Where in the initializer.
        path: Box<str>,
    },
    /// A `ref ...` (operation, or constant initializer at `path`) in a
    /// lowered module.
    #[error("{}lowering leaves no `ref`: this module is `lowered {stage}`", .path.as_deref().map(|p| format!("initializer{p}: ")).unwrap_or_default())]
    RefAfterLowering {
        /// The module's strategy.
        stage: Strategy,
        /// Where in a constant's initializer; `None` for an operation.
        path: Option<Box<str>>,
    },
    /// `word` or `patch` in source-stage code.
    #[error("`{op}` only appears in lowered code (`lowered {}`)", if *.op == "word" { "bake" } else { "patch" })]
    LoweredOnly {
        /// `word` or `patch`.
        op: &'static str,
    },
    /// `word` outside `lowered bake`, or `patch` outside `lowered patch`.
    #[error("`{op}` only appears in `lowered {needs}` code; this module is `lowered {stage}`")]
    WrongStrategy {
        /// `word` or `patch`.
        op: &'static str,
        /// The strategy the operation belongs to.
        needs: Strategy,
        /// The module's strategy.
        stage: Strategy,
    },
    /// A host-object or patch name that is empty or outside its charset.
    #[error("{kind} name {name:?} must be non-empty and use only {}", host_charset(.kind))]
    BadHostName {
        /// `symbol`, `global` or `patch`.
        kind: &'static str,
        /// The name.
        name: Box<str>,
    },
    /// `ref @c` of a constant that holds words or pointers (in a constant
    /// initializer; in code the typing rule reports it).
    #[error("initializer{path}: `ref @{name}`: a host value's bytes are fixed, so it may hold no words or pointers")]
    RefValueNotData {
        /// Where in the initializer.
        path: Box<str>,
        /// The referenced constant.
        name: Box<str>,
    },
    /// An `import fn` with statements or variables.
    #[error("an `import fn` has no body or variables: the library that defines it is linked in later")]
    ImportWithBody,
    /// A constant initializer not shaped like the type.
    #[error("initializer{path}: expected {expected}")]
    ConstInitShape {
        /// Where in the initializer (`[3].1`; empty for the whole).
        path: Box<str>,
        /// The type expected there.
        expected: Box<Type>,
    },
    /// A scalar literal of a constant initializer that does not fit its type.
    #[error("initializer{path}: literal {bits:#x} does not fit {ty}")]
    ConstLiteral {
        /// Where in the initializer.
        path: Box<str>,
        /// The bits.
        bits: u64,
        /// The scalar type.
        ty: Scalar,
    },
    /// A cycle in the call graph: names in call order, the first repeated
    /// at the end.
    #[error("recursive calls: {}", cycle_message(.0))]
    Recursion(Vec<String>),
}

fn return_message(expected: Option<&Type>, found: Option<&Type>) -> String {
    match (expected, found) {
        (Some(e), None) => format!("`return` without a value in a function returning {e}"),
        (None, Some(f)) => format!("`return` of a {f} value in a function without a result"),
        (Some(e), Some(f)) => format!("`return` of a {f} value in a function returning {e}"),
        (None, None) => "`return` mismatch".into(),
    }
}

fn host_charset(kind: &str) -> &'static str {
    match kind {
        "symbol" => "[A-Za-z0-9_.]",
        "patch" => "[A-Za-z0-9_$]",
        _ => "[A-Za-z0-9_]",
    }
}

fn cycle_message(names: &[String]) -> String {
    names.iter().map(|n| format!("@{n}")).collect::<Vec<_>>().join(" -> ")
}

/// One problem, and where it is.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub struct VerifyError {
    /// The function or constant (`@name`) the problem is in; `None` for
    /// module-wide problems.
    pub func: Option<String>,
    /// The value whose definition (`Let`) the problem is in, if any.
    pub value: Option<Value>,
    /// The statement or declaration (0:0 for IR that was not parsed).
    pub span: Span,
    /// What rule is broken.
    #[source]
    pub kind: VerifyErrorKind,
}

impl fmt::Display for VerifyError {
    /// `@func: v3: message`, leaving out the absent parts.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(func) = &self.func {
            write!(f, "@{func}: ")?;
        }
        if let Some(v) = self.value {
            write!(f, "{v}: ")?;
        }
        write!(f, "{}", self.kind)
    }
}

/// Every problem the verifier found, in a stable order: module-wide names,
/// constants, then each function in order (handles first, then rules), then
/// call-graph cycles.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub struct VerifyErrors {
    /// The problems; never empty.
    pub errors: Vec<VerifyError>,
}

impl VerifyErrors {
    /// The problems.
    pub fn iter(&self) -> std::slice::Iter<'_, VerifyError> {
        self.errors.iter()
    }
    /// How many.
    pub fn len(&self) -> usize {
        self.errors.len()
    }
    /// Whether there are none (never, for an error returned by `verify`).
    pub fn is_empty(&self) -> bool {
        self.errors.is_empty()
    }
    /// One line per error, `file:line:col: error: @func: v3: message`, or
    /// `file: error: ...` where the span is unknown (built IR).
    pub fn render(&self, file: &str) -> String {
        let mut out = String::new();
        for e in &self.errors {
            let s = e.span;
            // Writing to a String cannot fail.
            let _ = if !s.is_known() {
                writeln!(out, "{file}: error: {e}")
            } else if s.col == 0 {
                writeln!(out, "{file}:{}: error: {e}", s.line)
            } else {
                writeln!(out, "{file}:{}:{}: error: {e}", s.line, s.col)
            };
        }
        out
    }
}

impl fmt::Display for VerifyErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.errors.len();
        write!(f, "verification failed with {n} error{}", if n == 1 { "" } else { "s" })?;
        for e in &self.errors {
            write!(f, "\n  {e}")?;
        }
        Ok(())
    }
}

impl<'a> IntoIterator for &'a VerifyErrors {
    type Item = &'a VerifyError;
    type IntoIter = std::slice::Iter<'a, VerifyError>;
    fn into_iter(self) -> Self::IntoIter {
        self.errors.iter()
    }
}

/// Collects errors for one function or constant (or the module).
#[derive(Debug)]
pub(super) struct Reporter<'a> {
    pub(super) errors: &'a mut Vec<VerifyError>,
    pub(super) func: Option<&'a str>,
}

impl Reporter<'_> {
    pub(super) fn report(&mut self, span: Span, value: Option<Value>, kind: VerifyErrorKind) {
        self.errors.push(VerifyError { func: self.func.map(str::to_owned), value, span, kind });
    }
}

/// What an error about a storage type (`u8 i8 u16 i16`) adds: how to use one.
fn storage_hint(ty: &Type) -> &'static str {
    match ty {
        Type::Scalar(s) if s.is_storage() => {
            " (u8, i8, u16 and i16 are storage types: memory holds them, a load widens them to u32 or i32, a store of a u32 or i32 keeps its low bits)"
        }
        _ => "",
    }
}
