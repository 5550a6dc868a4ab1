//! [`Element`]: the types a [`crate::Buffer`] holds and a kernel's
//! `ptr<global, T>` parameters point to ([`ElementType`]: a scalar, or a
//! `#[derive(relok::Struct)]` struct of scalars); [`Word`]: a host
//! object's word as raw bits.

use relok_ir::{Scalar, Type};

pub(crate) mod sealed {
    /// Only relok's scalars and `#[derive(relok::Struct)]` structs (whose
    /// derive checks their layout) are elements.
    pub trait Sealed {}
}

/// How one element of a buffer lies in device memory: the IR type a
/// kernel's `ptr<global, T>` parameter points to.
///
/// ```
/// use relok::{Element, ElementType, Scalar};
/// assert_eq!(<f32 as Element>::TYPE, ElementType::Scalar(Scalar::F32));
/// assert_eq!(<f32 as Element>::TYPE.to_string(), "f32");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ElementType {
    /// A scalar.
    Scalar(Scalar),
    /// A struct of these scalar fields, in order, laid out as C lays them
    /// out (the derive refuses any padding): the IR's `{f32, f32, u32}`.
    Struct(&'static [Scalar]),
}

impl ElementType {
    /// The IR type.
    ///
    /// ```
    /// use relok::{ElementType, Scalar};
    /// assert_eq!(ElementType::Struct(&[Scalar::F32, Scalar::U32]).ir_type().to_string(), "{f32, u32}");
    /// ```
    pub fn ir_type(self) -> Type {
        match self {
            ElementType::Scalar(s) => Type::Scalar(s),
            ElementType::Struct(fields) => Type::Struct(fields.iter().map(|&s| Type::Scalar(s)).collect()),
        }
    }

    /// Whether `ty` is this type.
    pub(crate) fn is(self, ty: &Type) -> bool {
        match (self, ty) {
            (ElementType::Scalar(s), Type::Scalar(t)) => s == *t,
            (ElementType::Struct(fields), Type::Struct(ts)) => {
                fields.len() == ts.len() && fields.iter().zip(ts).all(|(s, t)| *t == Type::Scalar(*s))
            }
            _ => false,
        }
    }
}

impl std::fmt::Display for ElementType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.ir_type())
    }
}

/// An element type of device buffers: `u32`, `i32`, `u64`, `i64`, `f32`,
/// `f64`, `u8`, `i8`, `u16`, `i16` — plain old data whose bytes are the IR
/// type's (little-endian, IEEE 754; the small integers are the IR's
/// storage types, loaded widened to 32 bits) —, `bool` (one byte, 0 or 1),
/// [`Word`] (the IR's `word`, 8 bytes), and a `#[derive(relok::Struct)]`
/// struct of those numbers (`#[repr(C)]`, no padding: the IR's
/// `{f32, f32, u32}`).
///
/// ```
/// use relok::{Element, ElementType, Scalar};
/// assert_eq!(<bool as Element>::TYPE, ElementType::Scalar(Scalar::Bool));
/// assert_eq!(<u8 as Element>::TYPE, ElementType::Scalar(Scalar::U8));
///
/// #[derive(Clone, Copy, Debug, relok::Struct)]
/// #[repr(C)]
/// struct Particle {
///     x: f32,
///     v: f32,
///     id: u32,
/// }
/// assert_eq!(<Particle as Element>::TYPE.to_string(), "{f32, f32, u32}");
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a buffer element",
    label = "not a scalar or a `#[derive(relok::Struct)]` struct",
    note = "elements are u32 i32 u64 i64 f32 f64 u8 i8 u16 i16 bool, `relok::Word`, and structs marked `#[derive(Clone, Copy, relok::Struct)]` and `#[repr(C)]`"
)]
pub trait Element: bytemuck::NoUninit + Send + Sync + sealed::Sealed + 'static {
    /// The IR's type of this element.
    ///
    /// ```
    /// use relok::{Element, ElementType, Scalar};
    /// assert_eq!(<i64 as Element>::TYPE, ElementType::Scalar(Scalar::I64));
    /// ```
    const TYPE: ElementType;

    /// The elements `bytes` (a whole number of them, as the device holds
    /// them) encode; `Err(i)` when element `i` is not a value of the type
    /// (a `bool` byte other than 0 or 1).
    #[doc(hidden)]
    fn from_device_bytes(bytes: &[u8]) -> Result<Vec<Self>, usize>;
}

/// A scalar launch argument: `u32`, `i32`, `u64`, `i64`, `f32`, `f64`,
/// `bool`, and a [`Word`] for a `word` parameter given as raw bits.
///
/// ```
/// use relok::ScalarArg;
/// assert_eq!(2.5f32.bits(), 2.5f32.to_bits() as u64);
/// assert_eq!(<bool as ScalarArg>::SCALAR, relok::Scalar::Bool);
/// ```
pub trait ScalarArg: Copy + sealed::Sealed {
    /// The IR's scalar type.
    ///
    /// ```
    /// use relok::ScalarArg;
    /// assert_eq!(<u32 as ScalarArg>::SCALAR, relok::Scalar::U32);
    /// ```
    const SCALAR: Scalar;
    /// The value's bits, zero-extended to 64 (the IR's convention).
    ///
    /// ```
    /// use relok::ScalarArg;
    /// assert_eq!((-1i32).bits(), 0xffff_ffff);
    /// assert_eq!(true.bits(), 1);
    /// ```
    fn bits(self) -> u64;
}

macro_rules! element {
    ($($t:ty => $s:ident, |$x:ident| $bits:expr;)*) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const TYPE: ElementType = ElementType::Scalar(Scalar::$s);
            fn from_device_bytes(bytes: &[u8]) -> Result<Vec<Self>, usize> {
                Ok(bytemuck::pod_collect_to_vec(bytes))
            }
        }
        impl ScalarArg for $t {
            const SCALAR: Scalar = Scalar::$s;
            fn bits(self) -> u64 {
                let $x = self;
                $bits
            }
        }
    )*};
}

element! {
    u32 => U32, |x| u64::from(x);
    i32 => I32, |x| u64::from(x as u32);
    u64 => U64, |x| x;
    i64 => I64, |x| x as u64;
    f32 => F32, |x| u64::from(x.to_bits());
    f64 => F64, |x| x.to_bits();
    Word => Word, |x| x.0;
}

/// The storage elements (`u8 i8 u16 i16`): a buffer holds them, a kernel
/// loads them widened to `u32`/`i32` and stores the low bits of one; no
/// kernel parameter or IR value has their type, so they are not
/// [`ScalarArg`]s.
macro_rules! storage_element {
    ($($t:ty => $s:ident;)*) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const TYPE: ElementType = ElementType::Scalar(Scalar::$s);
            fn from_device_bytes(bytes: &[u8]) -> Result<Vec<Self>, usize> {
                Ok(bytemuck::pod_collect_to_vec(bytes))
            }
        }
    )*};
}

storage_element! {
    u8 => U8;
    i8 => I8;
    u16 => U16;
    i16 => I16;
}

impl sealed::Sealed for bool {}
impl ScalarArg for bool {
    const SCALAR: Scalar = Scalar::Bool;
    fn bits(self) -> u64 {
        u64::from(self)
    }
}

/// A buffer of `bool` is one byte per element, 0 or 1, as the IR's `bool`
/// in memory: a byte other than those read back is
/// [`crate::Error::InvalidBool`], never a guess.
///
/// ```
/// let ctx = relok::Context::cpu();
/// assert_eq!(ctx.upload(&[true, false])?.download()?, [true, false]);
/// # Ok::<(), relok::Error>(())
/// ```
impl Element for bool {
    const TYPE: ElementType = ElementType::Scalar(Scalar::Bool);
    fn from_device_bytes(bytes: &[u8]) -> Result<Vec<Self>, usize> {
        bytes
            .iter()
            .enumerate()
            .map(|(i, &b)| match b {
                0 => Ok(false),
                1 => Ok(true),
                _ => Err(i),
            })
            .collect()
    }
}

/// The word of a host object (the IR's `word`: a symbol's, a value's, a
/// runtime global's), as raw bits: what a kernel stores through a
/// `ptr<global, word>` parameter, or a `word` argument given as bits
/// rather than as a [`crate::Symbol`] (a word a kernel wrote before, say).
/// Words are valid in one context only (docs/design.md §1): compare them,
/// pass them back, never compute with them.
///
/// ```
/// let ctx = relok::Context::cpu();
/// let p = relok::Program::parse(
///     "kernel @tag(v0: ptr<global, word>) {\n    v1: word = ref :circle\n    v2: u32 = const 0\n    store v0[v2], v1\n    return\n}\n",
/// )?;
/// let mut out = ctx.zeros::<relok::Word>(1)?;
/// let s = ctx.stream();
/// ctx.kernel(&p, "tag")?.launch(&s, relok::Grid::new(1, 1), (&mut out,))?;
/// s.synchronize()?;
/// assert_ne!(out.download()?[0], relok::Word::from_bits(0));
/// # Ok::<(), relok::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
#[repr(transparent)]
pub struct Word(u64);

impl Word {
    /// The word with these bits.
    ///
    /// ```
    /// assert_eq!(relok::Word::from_bits(7).to_bits(), 7);
    /// ```
    pub const fn from_bits(bits: u64) -> Word {
        Word(bits)
    }

    /// The word's bits.
    ///
    /// ```
    /// assert_eq!(relok::Word::default().to_bits(), 0);
    /// ```
    pub const fn to_bits(self) -> u64 {
        self.0
    }
}

// SAFETY: `Word` is `repr(transparent)` over a `u64`: all zeros is a valid
// value.
unsafe impl bytemuck::Zeroable for Word {}
// SAFETY: `repr(transparent)` over a `u64`: no padding, every bit pattern
// valid, `Copy` and `'static`.
unsafe impl bytemuck::Pod for Word {}
