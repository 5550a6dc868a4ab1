//! The kernel IR: modules, functions, structured statements and operations.
//!
//! Shape (docs/design.md §4):
//! - A [`Module`] holds constant aggregates (`const @name`) and functions,
//!   each in an [`Arena`]; functions refer to them by handle.
//! - A [`Function`] is a kernel (entry point) or a device function. Its SSA
//!   values live in `values` (a type per value); its mutable variables
//!   (`local` per thread, `shared` per block) in `vars`; its body is a tree of
//!   structured statements: `if`/`else`, `loop` with `break`/`continue`,
//!   `return`. There are no phi nodes: a value that changes across iterations
//!   lives in a variable (`set` / `get`).
//!
//! Invariants (checked by [`crate::verify()`], relied on by every consumer of
//! a verified module):
//! - every handle indexes its arena;
//! - parameters are `values[0..params.len()]` in order, and every other value
//!   is defined by exactly one `Let`, in order of its index (the canonical
//!   numbering the text format prints);
//! - a use is dominated by its definition: the definition precedes it in the
//!   same block or in an enclosing one;
//! - every operation is well typed against the declared type of its result.
//!
//! Source spans ride along for error messages but are not part of the IR's
//! identity: [`Span`] compares equal to every other span and hashes to
//! nothing, so `parse(print(ir)) == ir` holds although the parsed copy has
//! positions and the built one does not.

use crate::entity::{Arena, entity};
use crate::types::{Scalar, Type};
use std::fmt;
use std::hash::{Hash, Hasher};

entity!(
    /// An SSA value of a function. Text: `v3`.
    Value,
    "v"
);
entity!(
    /// A mutable variable of a function (`local` or `shared`). Text: `%name`
    /// (the name is printed from the declaration).
    Var,
    "var"
);
entity!(
    /// A function of a module. Text: `@name`.
    FuncId,
    "func"
);
entity!(
    /// A constant aggregate of a module. Text: `@name`.
    ConstId,
    "const"
);

/// A position in kernel text: 1-based line and column. Compares equal to
/// every span and hashes to nothing (see the module docs).
#[derive(Copy, Clone, Default, Debug)]
pub struct Span {
    /// 1-based line; 0 when the IR was not parsed from text.
    pub line: u32,
    /// 1-based column; 0 when unknown.
    pub col: u32,
}

impl Span {
    /// A span at `line:col`.
    pub const fn new(line: u32, col: u32) -> Span {
        Span { line, col }
    }
    /// Whether this span came from text.
    pub const fn is_known(self) -> bool {
        self.line != 0
    }
}

impl PartialEq for Span {
    fn eq(&self, _: &Span) -> bool {
        true
    }
}
impl Eq for Span {}
impl Hash for Span {
    fn hash<H: Hasher>(&self, _: &mut H) {}
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

/// One of the three grid axes.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum Axis {
    /// `.x`
    X,
    /// `.y`
    Y,
    /// `.z`
    Z,
}

impl Axis {
    /// All axes.
    pub const ALL: [Axis; 3] = [Axis::X, Axis::Y, Axis::Z];
    /// Index 0, 1, 2.
    pub const fn index(self) -> usize {
        self as usize
    }
    /// Text syntax (`x`, `y`, `z`).
    pub const fn name(self) -> &'static str {
        match self {
            Axis::X => "x",
            Axis::Y => "y",
            Axis::Z => "z",
        }
    }
}

/// Launch geometry builtins; all are `u32`.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum Builtin {
    /// Thread index within its block: `thread_id.x`.
    ThreadId(Axis),
    /// Block index within the grid: `block_id.x`.
    BlockId(Axis),
    /// Threads per block: `block_dim.x`.
    BlockDim(Axis),
    /// Blocks in the grid: `grid_dim.x`.
    GridDim(Axis),
}

impl Builtin {
    /// Text syntax of the builtin family.
    pub const fn family(self) -> &'static str {
        match self {
            Builtin::ThreadId(_) => "thread_id",
            Builtin::BlockId(_) => "block_id",
            Builtin::BlockDim(_) => "block_dim",
            Builtin::GridDim(_) => "grid_dim",
        }
    }
    /// The axis.
    pub const fn axis(self) -> Axis {
        match self {
            Builtin::ThreadId(a) | Builtin::BlockId(a) | Builtin::BlockDim(a) | Builtin::GridDim(a) => a,
        }
    }
}

impl fmt::Display for Builtin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.family(), self.axis().name())
    }
}

/// A host object a kernel refers to (docs/design.md §1). Its word is unknown until
/// the kernel is loaded on a device, so no pass may fold it; lowering turns
/// every reference into a relocation record.
///
/// Text: `:name` (symbol), `@name` (a module constant as a host value),
/// `"text"` (a string value), `global name + 8` (a runtime global cell).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum HostRef {
    /// An interned symbol, by name (`[A-Za-z0-9_.]+`). Its word is an
    /// identity only: equal names give equal words.
    Symbol(String),
    /// A module constant as a host value: identity is the hash of its type
    /// and bytes; the word is the device address of its one copy on that
    /// device (dereference it with `wordptr`). The constant holds no words.
    Value(ConstId),
    /// A string host value (type tag `str`, the UTF-8 bytes), e.g. an
    /// exception message.
    Str(String),
    /// A runtime global (a per-device cell, e.g. a counter) plus a byte
    /// offset into it; the word is the cell's device address + offset.
    Global {
        /// The global's name (`[A-Za-z0-9_]+`).
        name: String,
        /// Byte offset into its cell.
        offset: u64,
    },
}

/// Fields of the kernel state every kernel receives implicitly (docs/design.md §3).
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum StateField {
    /// `state.reloc_table`: `ptr<global, word>`, the relocation table of the
    /// `table` strategy (null when the kernel has no records).
    RelocTable,
    /// `state.exception`: `ptr<global, u64>`, the launch's exception record.
    Exception,
    /// `state.rng_seed`: `u64`, the launch's random seed.
    RngSeed,
}

impl StateField {
    /// Every field, in layout order.
    pub const ALL: [StateField; 3] = [StateField::RelocTable, StateField::Exception, StateField::RngSeed];
    /// Text syntax (after `state.`).
    pub const fn name(self) -> &'static str {
        match self {
            StateField::RelocTable => "reloc_table",
            StateField::Exception => "exception",
            StateField::RngSeed => "rng_seed",
        }
    }
    /// The type the field reads as.
    pub fn ty(self) -> Type {
        match self {
            StateField::RelocTable => Type::ptr(crate::types::AddrSpace::Global, Type::Scalar(Scalar::Word)),
            StateField::Exception => Type::ptr(crate::types::AddrSpace::Global, Type::Scalar(Scalar::U64)),
            StateField::RngSeed => Type::Scalar(Scalar::U64),
        }
    }
}

/// Where a module is in the pipeline: written by a user (references to host
/// objects are symbolic), or lowered with one delivery strategy.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Default)]
pub enum Stage {
    /// As written: `ref` operations and `ref` constant fields allowed;
    /// `word` and `patch` operations are not.
    #[default]
    Source,
    /// After relocation lowering (docs/design.md §3); printed as a first line
    /// `lowered bake|patch|table`. No `ref` remains.
    Lowered(Strategy),
}

/// How the words of host objects reach the code (docs/design.md §3).
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum Strategy {
    /// The words themselves, as immediates (`word 0x…`): valid for one
    /// session and device; never persisted.
    Bake,
    /// One named cell per record (`patch NAME`), written by the loader.
    Patch,
    /// Loads of `state.reloc_table[i]`, i = the record's rank.
    Table,
}

impl Strategy {
    /// Every strategy.
    pub const ALL: [Strategy; 3] = [Strategy::Bake, Strategy::Patch, Strategy::Table];
    /// Text syntax.
    pub const fn name(self) -> &'static str {
        match self {
            Strategy::Bake => "bake",
            Strategy::Patch => "patch",
            Strategy::Table => "table",
        }
    }
    /// Parses the text syntax.
    pub fn from_name(s: &str) -> Option<Strategy> {
        Strategy::ALL.into_iter().find(|t| t.name() == s)
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

macro_rules! op_names {
    ($(#[$attr:meta])* $name:ident { $($(#[$vattr:meta])* $variant:ident = $text:literal),* $(,)? }) => {
        $(#[$attr])*
        #[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
        pub enum $name { $($(#[$vattr])* $variant),* }
        impl $name {
            /// Every operator.
            pub const ALL: &'static [$name] = &[$($name::$variant),*];
            /// Text syntax.
            pub const fn name(self) -> &'static str {
                match self { $($name::$variant => $text),* }
            }
            /// Parses the text syntax.
            pub fn from_name(s: &str) -> Option<$name> {
                match s { $($text => Some($name::$variant),)* _ => None }
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

op_names!(
    /// Unary operators; the result has the operand's type.
    UnaryOp {
        /// Integer: wrapping negation. Float: sign flip.
        Neg = "neg",
        /// Integer: bitwise complement. Bool: logical not.
        Not = "not",
        /// Integer: wrapping absolute value (`abs(MIN) == MIN`). Float: clears the sign.
        Abs = "abs",
        /// Float only: IEEE square root (NaN for negative inputs).
        Sqrt = "sqrt",
    }
);

op_names!(
    /// Binary operators; both operands and the result have one type.
    BinaryOp {
        /// Wrapping for integers, IEEE for floats.
        Add = "add",
        /// Wrapping for integers, IEEE for floats.
        Sub = "sub",
        /// Wrapping for integers, IEEE for floats.
        Mul = "mul",
        /// Integers: truncating; `x / 0 == 0`; `MIN / -1 == MIN`. Floats: IEEE.
        Div = "div",
        /// Integers: sign of the dividend; `x % 0 == x`; `MIN % -1 == 0`. Floats: `fmod`.
        Rem = "rem",
        /// Integers: the smaller. Floats: IEEE minNum (a NaN operand yields the other one).
        Min = "min",
        /// Integers: the larger. Floats: IEEE maxNum (a NaN operand yields the other one).
        Max = "max",
        /// Integers and bool.
        And = "and",
        /// Integers and bool.
        Or = "or",
        /// Integers and bool.
        Xor = "xor",
        /// Integers; the amount is taken modulo the bit width.
        Shl = "shl",
        /// Integers; arithmetic for signed, logical for unsigned; amount modulo the bit width.
        Shr = "shr",
    }
);

op_names!(
    /// Comparisons; the result is `bool`.
    CmpOp {
        /// Equal (floats: ordered, so NaN is unequal to everything).
        Eq = "eq",
        /// Not equal (floats: unordered, so true when either is NaN).
        Ne = "ne",
        /// Less than.
        Lt = "lt",
        /// Less than or equal.
        Le = "le",
        /// Greater than.
        Gt = "gt",
        /// Greater than or equal.
        Ge = "ge",
    }
);

op_names!(
    /// Read-modify-write atomics; each returns the old value.
    AtomicOp {
        /// Wrapping add.
        Add = "atomic.add",
        /// Signed or unsigned minimum, by the type.
        Min = "atomic.min",
        /// Signed or unsigned maximum, by the type.
        Max = "atomic.max",
        /// Exchange.
        Xchg = "atomic.xchg",
    }
);

op_names!(
    /// Math functions on `f32` and `f64` (docs/ir.md "Math functions"): every
    /// operand and the result have one float type. The rounding functions,
    /// `copysign` and `fma` are exact (one rounding at most); the others are
    /// within the bound docs/ir.md's accuracy table gives, and compute the
    /// same bits on every device.
    MathFn {
        /// `fma a, b, c`: `a * b + c` rounded once (never a multiply and an add).
        Fma = "fma",
        /// Largest integer not above the operand.
        Floor = "floor",
        /// Smallest integer not below the operand.
        Ceil = "ceil",
        /// The integer part (rounds toward zero).
        Trunc = "trunc",
        /// Nearest integer, halfway cases away from zero (Rust's `round`).
        Round = "round",
        /// `copysign a, b`: the magnitude of `a` with the sign bit of `b`.
        Copysign = "copysign",
        /// e to the power of the operand.
        Exp = "exp",
        /// 2 to the power of the operand.
        Exp2 = "exp2",
        /// Natural logarithm (NaN below 0, -inf at ±0).
        Log = "log",
        /// Base-2 logarithm.
        Log2 = "log2",
        /// Base-10 logarithm.
        Log10 = "log10",
        /// Sine (radians).
        Sin = "sin",
        /// Cosine (radians).
        Cos = "cos",
        /// Tangent (radians).
        Tan = "tan",
        /// Hyperbolic sine.
        Sinh = "sinh",
        /// Hyperbolic cosine.
        Cosh = "cosh",
        /// Hyperbolic tangent.
        Tanh = "tanh",
        /// Arcsine, in [-pi/2, pi/2] (NaN outside [-1, 1]).
        Asin = "asin",
        /// Arccosine, in [0, pi] (NaN outside [-1, 1]).
        Acos = "acos",
        /// Arctangent, in [-pi/2, pi/2].
        Atan = "atan",
        /// `atan2 y, x`: the angle of the point (x, y), in [-pi, pi], C's `atan2`.
        Atan2 = "atan2",
        /// `pow x, y`: x to the power y, C's `pow` special cases.
        Pow = "pow",
        /// `hypot x, y`: sqrt(x² + y²) without overflow; inf if either is infinite.
        Hypot = "hypot",
        /// The error function.
        Erf = "erf",
    }
);

impl MathFn {
    /// How many operands the function takes (1, 2 or 3).
    pub const fn arity(self) -> usize {
        match self {
            MathFn::Fma => 3,
            MathFn::Copysign | MathFn::Atan2 | MathFn::Pow | MathFn::Hypot => 2,
            _ => 1,
        }
    }

    /// Whether the result is exact (the rounding functions and `copysign`)
    /// or rounded once (`fma`): every device computes it natively and the
    /// constant folder folds it. The others are computed by relok's math
    /// library, written in the IR (`relok_compiler::math`).
    pub const fn is_exact(self) -> bool {
        matches!(self, MathFn::Fma | MathFn::Floor | MathFn::Ceil | MathFn::Trunc | MathFn::Round | MathFn::Copysign)
    }
}

/// An operation producing one value.
///
/// Where an operation takes an optional `index`, the address used is
/// `ptr + index * size_of(pointee)` (the index is any integer type, taken as
/// signed when the type is signed).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum Op {
    /// A scalar literal of the result type: the value's bits, zero-extended
    /// to 64 (bool: 0 or 1; `i32 -1` is `0xffff_ffff`). Never of type `word`.
    Const(u64),
    /// `neg v1`
    Unary(UnaryOp, Value),
    /// `add v1, v2`
    Binary(BinaryOp, Value, Value),
    /// `lt v1, v2` (result `bool`)
    Compare(CmpOp, Value, Value),
    /// `select c, a, b`: `a` when `c` is true.
    Select(Value, Value, Value),
    /// `convert v`: numeric conversion to the result type. Integer to
    /// integer truncates or extends by the source's signedness; float to
    /// integer rounds toward zero and saturates (NaN gives 0); integer to
    /// float and float to float round to nearest even. `bool` converts to 0/1
    /// and from `!= 0`.
    Convert(Value),
    /// `bitcast v`: reinterpret the bits; sizes must match (word ↔ u64 is
    /// the only way in or out of `word`).
    Bitcast(Value),
    /// `load p` / `load p[i]`: a scalar or pointer from memory.
    Load {
        /// Base pointer.
        ptr: Value,
        /// Element offset.
        index: Option<Value>,
    },
    /// `offset p, i`: `p + i * size_of(pointee)`, same type as `p`.
    Offset {
        /// Base pointer.
        ptr: Value,
        /// Element offset.
        index: Value,
    },
    /// `elem p, i`: from `ptr<S, [T; N]>` to `ptr<S, T>` of element `i`.
    Elem {
        /// Pointer to an array.
        ptr: Value,
        /// Element index.
        index: Value,
    },
    /// `field p, k`: from `ptr<S, {..}>` to `ptr<S, field k>`.
    Field {
        /// Pointer to a struct.
        ptr: Value,
        /// Field number.
        field: u32,
    },
    /// `addr %name`: a pointer to a variable; an array variable decays to a
    /// pointer to its first element (`[T; N]` gives `ptr<S, T>`).
    VarAddr(Var),
    /// `addr @name`: a `ptr<const, T>` to a module constant, arrays decaying
    /// as for variables.
    ConstAddr(ConstId),
    /// `get %name`: the value of a scalar `local` variable.
    Get(Var),
    /// `thread_id.x` etc.
    Builtin(Builtin),
    /// `ref :foo` / `ref @table` / `ref "text"` / `ref global name + 8`: the
    /// word of a host object (source stage only; result `word`).
    Ref(HostRef),
    /// `wordptr v`: the word of a host value (or a global cell) as a
    /// `ptr<global, T>`; `T` is the declared result's pointee.
    WordPtr(Value),
    /// `state.reloc_table` etc.: a field of the kernel state.
    State(StateField),
    /// `word 0x…`: a baked word (stage `lowered bake` only).
    BakedWord(u64),
    /// `patch NAME`: the word in the named patch cell (stage `lowered patch`
    /// only); NAME is a relocation record's name.
    Patch(String),
    /// `call @f(v1, v2)` of a device function returning a value.
    Call(FuncId, Vec<Value>),
    /// `atomic.add p[i], v`: returns the old value.
    Atomic {
        /// Which read-modify-write.
        op: AtomicOp,
        /// Base pointer (global or shared).
        ptr: Value,
        /// Element offset.
        index: Option<Value>,
        /// Operand.
        value: Value,
    },
    /// `exp v1`, `atan2 v1, v2`, `fma v1, v2, v3`: a math function of
    /// [`MathFn::arity`] float operands of the result's type.
    Math(MathFn, Vec<Value>),
    /// `atomic.cas p[i], expected, new`: stores `new` if the old value equals
    /// `expected`; returns the old value.
    AtomicCas {
        /// Base pointer (global or shared).
        ptr: Value,
        /// Element offset.
        index: Option<Value>,
        /// Compared with the old value.
        expected: Value,
        /// Stored on equality.
        new: Value,
    },
}

impl Op {
    /// Every value this operation reads, in text order.
    pub fn operands(&self) -> Vec<Value> {
        let mut out = Vec::new();
        self.for_each_operand(|v| out.push(v));
        out
    }

    /// Calls `f` on every value this operation reads, in text order.
    pub fn for_each_operand(&self, mut f: impl FnMut(Value)) {
        match self {
            Op::Const(_)
            | Op::VarAddr(_)
            | Op::ConstAddr(_)
            | Op::Get(_)
            | Op::Builtin(_)
            | Op::Ref(_)
            | Op::State(_)
            | Op::BakedWord(_)
            | Op::Patch(_) => {}
            Op::WordPtr(a) => f(*a),
            Op::Unary(_, a) | Op::Convert(a) | Op::Bitcast(a) => f(*a),
            Op::Field { ptr, .. } => f(*ptr),
            Op::Binary(_, a, b) | Op::Compare(_, a, b) => {
                f(*a);
                f(*b);
            }
            Op::Offset { ptr, index } | Op::Elem { ptr, index } => {
                f(*ptr);
                f(*index);
            }
            Op::Select(c, a, b) => {
                f(*c);
                f(*a);
                f(*b);
            }
            Op::Load { ptr, index } => {
                f(*ptr);
                index.iter().copied().for_each(&mut f);
            }
            Op::Call(_, args) | Op::Math(_, args) => args.iter().copied().for_each(f),
            Op::Atomic { ptr, index, value, .. } => {
                f(*ptr);
                index.iter().copied().for_each(&mut f);
                f(*value);
            }
            Op::AtomicCas { ptr, index, expected, new } => {
                f(*ptr);
                index.iter().copied().for_each(&mut f);
                f(*expected);
                f(*new);
            }
        }
    }

    /// Calls `f` on every operand, mutably, in text order (passes rewrite
    /// operands through this).
    pub fn for_each_operand_mut(&mut self, mut f: impl FnMut(&mut Value)) {
        match self {
            Op::Const(_)
            | Op::VarAddr(_)
            | Op::ConstAddr(_)
            | Op::Get(_)
            | Op::Builtin(_)
            | Op::Ref(_)
            | Op::State(_)
            | Op::BakedWord(_)
            | Op::Patch(_) => {}
            Op::WordPtr(a) => f(a),
            Op::Unary(_, a) | Op::Convert(a) | Op::Bitcast(a) => f(a),
            Op::Field { ptr, .. } => f(ptr),
            Op::Binary(_, a, b) | Op::Compare(_, a, b) => {
                f(a);
                f(b);
            }
            Op::Offset { ptr, index } | Op::Elem { ptr, index } => {
                f(ptr);
                f(index);
            }
            Op::Select(c, a, b) => {
                f(c);
                f(a);
                f(b);
            }
            Op::Load { ptr, index } => {
                f(ptr);
                index.iter_mut().for_each(&mut f);
            }
            Op::Call(_, args) | Op::Math(_, args) => args.iter_mut().for_each(f),
            Op::Atomic { ptr, index, value, .. } => {
                f(ptr);
                index.iter_mut().for_each(&mut f);
                f(value);
            }
            Op::AtomicCas { ptr, index, expected, new } => {
                f(ptr);
                index.iter_mut().for_each(&mut f);
                f(expected);
                f(new);
            }
        }
    }

    /// Whether the operation has an effect beyond its result (memory writes,
    /// calls): such operations are never removed or merged.
    pub fn has_side_effects(&self) -> bool {
        matches!(self, Op::Call(..) | Op::Atomic { .. } | Op::AtomicCas { .. })
    }
}

/// A statement. `span` is where it starts in kernel text.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Stmt {
    /// What the statement does.
    pub kind: StmtKind,
    /// Where it came from.
    pub span: Span,
}

impl Stmt {
    /// A statement without a source position.
    pub const fn new(kind: StmtKind) -> Stmt {
        Stmt { kind, span: Span::new(0, 0) }
    }
}

/// A sequence of statements.
pub type Block = Vec<Stmt>;

/// Statement kinds.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum StmtKind {
    /// `v3: T = op`: defines `result`, whose type is `values[result].ty`.
    Let {
        /// The defined value.
        result: Value,
        /// How it is computed.
        op: Op,
    },
    /// `store p, v` / `store p[i], v`.
    Store {
        /// Base pointer.
        ptr: Value,
        /// Element offset.
        index: Option<Value>,
        /// Stored value.
        value: Value,
    },
    /// `set %name, v`: assigns a scalar `local` variable.
    Set {
        /// The variable.
        var: Var,
        /// Its new value.
        value: Value,
    },
    /// `call @f(v1)` of a device function without a result.
    Call(FuncId, Vec<Value>),
    /// `barrier`: every thread of the block waits here until all arrive;
    /// shared memory written before is visible after.
    Barrier,
    /// `if c { .. } else { .. }`; the else block may be empty.
    If {
        /// A `bool`.
        cond: Value,
        /// Taken when `cond` is true.
        then_body: Block,
        /// Taken otherwise.
        else_body: Block,
    },
    /// `loop { .. }`: repeats until `break` or `return`.
    Loop(Block),
    /// `break`: leaves the innermost loop.
    Break,
    /// `continue`: starts the innermost loop's next iteration.
    Continue,
    /// `return` / `return v`.
    Return(Option<Value>),
    /// `exit`: ends the calling thread (not just the function), e.g. after
    /// recording an exception.
    Exit,
}

impl StmtKind {
    /// Calls `f` on every value this statement itself reads, in text order
    /// (not those of nested blocks; a `Let`'s result is a definition, not a
    /// read).
    pub fn for_each_operand(&self, mut f: impl FnMut(Value)) {
        match self {
            StmtKind::Let { op, .. } => op.for_each_operand(f),
            StmtKind::Store { ptr, index, value } => {
                f(*ptr);
                index.iter().copied().for_each(&mut f);
                f(*value);
            }
            StmtKind::Set { value, .. } | StmtKind::Return(Some(value)) => f(*value),
            StmtKind::Call(_, args) => args.iter().copied().for_each(f),
            StmtKind::If { cond, .. } => f(*cond),
            StmtKind::Return(None)
            | StmtKind::Loop(_)
            | StmtKind::Barrier
            | StmtKind::Break
            | StmtKind::Continue
            | StmtKind::Exit => {}
        }
    }

    /// Calls `f` on every value this statement itself reads, mutably, in
    /// text order (as [`StmtKind::for_each_operand`]).
    pub fn for_each_operand_mut(&mut self, mut f: impl FnMut(&mut Value)) {
        match self {
            StmtKind::Let { op, .. } => op.for_each_operand_mut(f),
            StmtKind::Store { ptr, index, value } => {
                f(ptr);
                index.iter_mut().for_each(&mut f);
                f(value);
            }
            StmtKind::Set { value, .. } | StmtKind::Return(Some(value)) => f(value),
            StmtKind::Call(_, args) => args.iter_mut().for_each(f),
            StmtKind::If { cond, .. } => f(cond),
            StmtKind::Return(None)
            | StmtKind::Loop(_)
            | StmtKind::Barrier
            | StmtKind::Break
            | StmtKind::Continue
            | StmtKind::Exit => {}
        }
    }
}

/// Per-value data.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct ValueData {
    /// The value's type: a scalar or a pointer.
    pub ty: Type,
}

/// Where a variable lives.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum VarKind {
    /// `local %x: T`: one per thread.
    Local,
    /// `shared %x: T`: one per block; kernels only.
    Shared,
}

/// A variable declaration.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct VarDecl {
    /// Name without `%`, unique in the function, `[A-Za-z_][A-Za-z0-9_]*`.
    pub name: String,
    /// Local or shared.
    pub kind: VarKind,
    /// Its type (any sized type; scalar locals may be read with `get`).
    pub ty: Type,
    /// Where it was declared.
    pub span: Span,
}

/// Kernel or device function.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum FuncKind {
    /// An entry point launched by the host: `kernel @name(..)`; no result.
    Kernel,
    /// A device function called by kernels: `fn @name(..) -> T`.
    Device,
    /// A device function defined by a library and linked in later:
    /// `import fn @name(..) -> T` with no body.
    Import,
}

/// A kernel's `u32` parameter that counts elements of one of its pointer
/// parameters, written `v3: u32 len(v2)` in the signature: the caller
/// promises that `len` is at most the elements of `of`'s pointee type from
/// `of` to the end of the buffer it points into, and a device checks that
/// promise at launch wherever it checks accesses (the cpu device always,
/// a GPU in checked mode), so that an index below `len` needs no other
/// check. A Rust kernel's slice is one: its pointer and its length.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct LenParam {
    /// The `u32` length parameter.
    pub len: Value,
    /// The `ptr<global, T>` parameter it counts `T`s of.
    pub of: Value,
}

/// The most threads per block along x, y and z that any device launches
/// (CUDA's limits; a wgpu adapter's may be lower: wgpu's defaults are 256,
/// 256 and 64).
pub const MAX_BLOCK: [u32; 3] = [1024, 1024, 64];

/// The most threads per block in all that any device launches (wgpu's
/// default is 256).
pub const MAX_BLOCK_THREADS: u32 = 1024;

/// Why no device launches blocks of shape `block` (a zero, a dimension
/// over [`MAX_BLOCK`], more than [`MAX_BLOCK_THREADS`] in all), `None` if
/// one may. A device's own limits may be lower (wgpu's adapters).
///
/// ```
/// assert_eq!(relok_ir::block_shape_problem([16, 16, 1]), None);
/// assert!(relok_ir::block_shape_problem([64, 32, 1]).unwrap().contains("2048 threads"));
/// ```
pub fn block_shape_problem(block: [u32; 3]) -> Option<String> {
    if block.contains(&0) {
        return Some(format!("block {block:?} has a zero dimension"));
    }
    // Each dimension first, so that the product cannot overflow.
    if block.iter().zip(MAX_BLOCK).any(|(&d, max)| d > max) {
        let [x, y, z] = MAX_BLOCK;
        return Some(format!("block {block:?} exceeds ({x}, {y}, {z})"));
    }
    let threads: u64 = block.iter().map(|&d| u64::from(d)).product();
    (threads > u64::from(MAX_BLOCK_THREADS))
        .then(|| format!("block {block:?} has {threads} threads, more than {MAX_BLOCK_THREADS}"))
}

/// A function.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Function {
    /// Name without `@`, unique in the module.
    pub name: String,
    /// Kernel or device function.
    pub kind: FuncKind,
    /// Parameters: `values[0..params.len()]`, in order.
    pub params: Vec<Value>,
    /// A kernel's length parameters ([`LenParam`]), in the order of
    /// their `len` parameters; empty for device functions.
    pub lens: Vec<LenParam>,
    /// Result type of a device function, if any (a value type).
    pub ret: Option<Type>,
    /// The block shape (threads along x, y, z) that every launch of this
    /// kernel must have, written `block(16, 16, 1)` after the parameters;
    /// `None` (any shape) for device functions and most kernels. Every
    /// device refuses a launch of another shape, so the compiler may
    /// assume it: `block_dim` is a constant, `thread_id` is below it (the
    /// bounds checks it implies are proven), and WGSL has a fixed
    /// `@workgroup_size`.
    pub block: Option<[u32; 3]>,
    /// Every SSA value's type; parameters first, then in definition order.
    pub values: Arena<Value, ValueData>,
    /// `local` and `shared` variables, in declaration order.
    pub vars: Arena<Var, VarDecl>,
    /// The body.
    pub body: Block,
    /// Where the function starts.
    pub span: Span,
}

impl Function {
    /// An empty function.
    pub fn new(name: impl Into<String>, kind: FuncKind) -> Function {
        Function {
            name: name.into(),
            kind,
            params: Vec::new(),
            lens: Vec::new(),
            ret: None,
            block: None,
            values: Arena::new(),
            vars: Arena::new(),
            body: Vec::new(),
            span: Span::default(),
        }
    }
    /// The type of `v` (panics on a foreign handle: verify first).
    pub fn ty(&self, v: Value) -> &Type {
        &self.values[v].ty
    }
    /// The type of `v` as a scalar, if it is one and `v` exists.
    pub fn scalar_ty(&self, v: Value) -> Option<Scalar> {
        self.values.get(v).and_then(|d| d.ty.as_scalar())
    }
    /// The pointer parameter that `len` is a length of ([`LenParam`]).
    pub fn len_of(&self, len: Value) -> Option<Value> {
        self.lens.iter().find(|l| l.len == len).map(|l| l.of)
    }
    /// Whether this is a kernel.
    pub fn is_kernel(&self) -> bool {
        self.kind == FuncKind::Kernel
    }
    /// The variable named `name`.
    pub fn var_by_name(&self, name: &str) -> Option<Var> {
        self.vars.iter().find(|(_, d)| d.name == name).map(|(v, _)| v)
    }
}

/// An initializer of a constant aggregate, shaped like its type.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum ConstInit {
    /// A scalar's bits, as in [`Op::Const`]. For a `word` field only in
    /// stage `lowered bake` (a baked word) or `lowered patch` (0, the
    /// loader writes the word).
    Scalar(u64),
    /// `ref …`: the word of a host object in a `word` field (source stage):
    /// an interior relocation site.
    Ref(HostRef),
    /// `[a, b, ...]`: one per element.
    Array(Vec<ConstInit>),
    /// `{a, b, ...}`: one per field.
    Struct(Vec<ConstInit>),
}

/// `const @name: T = init`: read-only data every thread may read.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct ConstDecl {
    /// Name without `@`, unique among the module's constants and functions.
    pub name: String,
    /// Its type (no pointers, no words).
    pub ty: Type,
    /// Its contents.
    pub init: ConstInit,
    /// Where it was declared.
    pub span: Span,
}

/// A module: constants and functions, printed in that order.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct Module {
    /// Source, or lowered with a strategy.
    pub stage: Stage,
    /// Constant aggregates.
    pub consts: Arena<ConstId, ConstDecl>,
    /// Kernels and device functions.
    pub funcs: Arena<FuncId, Function>,
}

impl Module {
    /// An empty module.
    pub fn new() -> Module {
        Module::default()
    }
    /// The function named `name`.
    pub fn func_by_name(&self, name: &str) -> Option<FuncId> {
        self.funcs.iter().find(|(_, f)| f.name == name).map(|(id, _)| id)
    }
    /// The constant named `name`.
    pub fn const_by_name(&self, name: &str) -> Option<ConstId> {
        self.consts.iter().find(|(_, c)| c.name == name).map(|(id, _)| id)
    }
    /// The kernels, in order.
    pub fn kernels(&self) -> impl Iterator<Item = (FuncId, &Function)> {
        self.funcs.iter().filter(|(_, f)| f.is_kernel())
    }
}

/// Visits every statement of `block`, depth first, in text order.
pub fn walk_stmts<'a>(block: &'a [Stmt], f: &mut impl FnMut(&'a Stmt)) {
    for s in block {
        f(s);
        match &s.kind {
            StmtKind::If { then_body, else_body, .. } => {
                walk_stmts(then_body, f);
                walk_stmts(else_body, f);
            }
            StmtKind::Loop(body) => walk_stmts(body, f),
            _ => {}
        }
    }
}

/// Visits every statement of `block` mutably, depth first, in text order
/// (a statement before the blocks nested in it).
pub fn walk_stmts_mut(block: &mut [Stmt], f: &mut impl FnMut(&mut Stmt)) {
    for s in block {
        f(s);
        match &mut s.kind {
            StmtKind::If { then_body, else_body, .. } => {
                walk_stmts_mut(then_body, f);
                walk_stmts_mut(else_body, f);
            }
            StmtKind::Loop(body) => walk_stmts_mut(body, f),
            _ => {}
        }
    }
}

/// Whether control can reach the end of `block` and go on after it: no
/// statement of it leaves on every path (`exit`, `return`, `break`,
/// `continue`; an `if` neither of whose branches falls through; a `loop`
/// that no `break` leaves).
///
/// ```
/// let m = relok_ir::parse("kernel @k(v0: bool) {\n    if v0 {\n        exit\n    }\n    return\n}\n").unwrap();
/// let f = &m.funcs[m.func_by_name("k").unwrap()];
/// let relok_ir::StmtKind::If { then_body, .. } = &f.body[0].kind else { panic!() };
/// assert!(!relok_ir::falls_through(then_body));
/// assert!(relok_ir::falls_through(&f.body[..1]));
/// ```
pub fn falls_through(block: &[Stmt]) -> bool {
    !block.iter().any(|s| match &s.kind {
        StmtKind::Exit | StmtKind::Return(_) | StmtKind::Break | StmtKind::Continue => true,
        StmtKind::If { then_body, else_body, .. } => !falls_through(then_body) && !falls_through(else_body),
        StmtKind::Loop(body) => !loop_breaks(body),
        _ => false,
    })
}

/// Whether `block`, a loop's body, holds a `break` of that loop (not of a
/// nested one).
fn loop_breaks(block: &[Stmt]) -> bool {
    block.iter().any(|s| match &s.kind {
        StmtKind::Break => true,
        StmtKind::If { then_body, else_body, .. } => loop_breaks(then_body) || loop_breaks(else_body),
        _ => false,
    })
}
