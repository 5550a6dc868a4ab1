//! [`Element`]: the plain-old-data types a [`crate::Buffer`] holds and a
//! kernel's `ptr<global, T>` parameters point to.

use relok_ir::Scalar;

mod sealed {
    pub trait Sealed {}
}

/// An element type of device buffers: `u32`, `i32`, `u64`, `i64`, `f32`,
/// `f64` — plain old data whose bytes are the IR type's (little-endian,
/// IEEE 754).
///
/// ```
/// use relok::Element;
/// assert_eq!(<f32 as Element>::SCALAR, relok::Scalar::F32);
/// ```
pub trait Element: bytemuck::Pod + Send + Sync + std::fmt::Debug + sealed::Sealed + 'static {
    /// The IR's scalar type of this element.
    ///
    /// ```
    /// use relok::Element;
    /// assert_eq!(<i64 as Element>::SCALAR, relok::Scalar::I64);
    /// ```
    const SCALAR: Scalar;
}

/// A scalar launch argument: the element types and `bool`.
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
            const SCALAR: Scalar = Scalar::$s;
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
}

impl sealed::Sealed for bool {}
impl ScalarArg for bool {
    const SCALAR: Scalar = Scalar::Bool;
    fn bits(self) -> u64 {
        u64::from(self)
    }
}
