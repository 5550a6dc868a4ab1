//! Types of the kernel IR and their memory layout.
//!
//! Scalars are the only values an operation computes; pointers carry the
//! address space they point into and the type they point at; arrays and
//! structs exist for memory (constant aggregates, shared and local arrays).
//!
//! Layout is C-like and is the one definition every backend and the cpu
//! device use: a scalar's size is its alignment (`bool` is one byte holding 0
//! or 1; `word` and pointers are eight bytes); an array is its element
//! repeated with no padding beyond the element's own; a struct places each
//! field at the next multiple of its alignment and is padded to a multiple of
//! its largest alignment.

use std::fmt;

/// Scalar types.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum Scalar {
    /// `true`/`false`; one byte in memory.
    Bool,
    /// 32-bit two's-complement integer.
    I32,
    /// 32-bit unsigned integer.
    U32,
    /// 64-bit two's-complement integer.
    I64,
    /// 64-bit unsigned integer.
    U64,
    /// IEEE-754 binary32.
    F32,
    /// IEEE-754 binary64.
    F64,
    /// The 64-bit word of a host object (docs/design.md §1). Opaque: it can be
    /// compared for equality, selected, stored, loaded and bitcast to/from
    /// `u64`, never computed with, and there are no word literals.
    Word,
    /// 8-bit unsigned integer, a *storage* type ([`Scalar::is_storage`]).
    U8,
    /// 8-bit two's-complement integer, a storage type.
    I8,
    /// 16-bit unsigned integer, a storage type.
    U16,
    /// 16-bit two's-complement integer, a storage type.
    I16,
}

impl Scalar {
    /// Every scalar, in a fixed order (parsers, generators).
    pub const ALL: [Scalar; 12] = [
        Scalar::Bool,
        Scalar::I32,
        Scalar::U32,
        Scalar::I64,
        Scalar::U64,
        Scalar::F32,
        Scalar::F64,
        Scalar::Word,
        Scalar::U8,
        Scalar::I8,
        Scalar::U16,
        Scalar::I16,
    ];

    /// Every scalar an SSA value may have: [`Scalar::ALL`] without the
    /// storage types.
    pub const VALUES: [Scalar; 8] =
        [Scalar::Bool, Scalar::I32, Scalar::U32, Scalar::I64, Scalar::U64, Scalar::F32, Scalar::F64, Scalar::Word];

    /// Size in bytes (also the alignment).
    pub const fn size(self) -> u32 {
        match self {
            Scalar::Bool | Scalar::U8 | Scalar::I8 => 1,
            Scalar::U16 | Scalar::I16 => 2,
            Scalar::I32 | Scalar::U32 | Scalar::F32 => 4,
            Scalar::I64 | Scalar::U64 | Scalar::F64 | Scalar::Word => 8,
        }
    }
    /// Width in bits of the value (bool: 1).
    pub const fn bits(self) -> u32 {
        match self {
            Scalar::Bool => 1,
            _ => self.size() * 8,
        }
    }
    /// A storage type (`u8 i8 u16 i16`): memory holds it, no value has it.
    /// A `load` of one gives its value widened to 32 bits ([`Scalar::widened`]:
    /// zero-extended to `u32`, sign-extended to `i32`); a `store` of such a
    /// 32-bit value keeps its low bits.
    pub const fn is_storage(self) -> bool {
        matches!(self, Scalar::U8 | Scalar::I8 | Scalar::U16 | Scalar::I16)
    }
    /// The type of the value a load of this type gives: `u32` for `u8` and
    /// `u16`, `i32` for `i8` and `i16`, else itself.
    pub const fn widened(self) -> Scalar {
        match self {
            Scalar::U8 | Scalar::U16 => Scalar::U32,
            Scalar::I8 | Scalar::I16 => Scalar::I32,
            s => s,
        }
    }
    /// Signed or unsigned integer (of a value type: not a storage type).
    pub const fn is_int(self) -> bool {
        matches!(self, Scalar::I32 | Scalar::U32 | Scalar::I64 | Scalar::U64)
    }
    /// Signed integer.
    pub const fn is_signed(self) -> bool {
        matches!(self, Scalar::I32 | Scalar::I64)
    }
    /// Floating point.
    pub const fn is_float(self) -> bool {
        matches!(self, Scalar::F32 | Scalar::F64)
    }
    /// Integer or float.
    pub const fn is_numeric(self) -> bool {
        self.is_int() || self.is_float()
    }
    /// Text syntax.
    pub const fn name(self) -> &'static str {
        match self {
            Scalar::Bool => "bool",
            Scalar::I32 => "i32",
            Scalar::U32 => "u32",
            Scalar::I64 => "i64",
            Scalar::U64 => "u64",
            Scalar::F32 => "f32",
            Scalar::F64 => "f64",
            Scalar::Word => "word",
            Scalar::U8 => "u8",
            Scalar::I8 => "i8",
            Scalar::U16 => "u16",
            Scalar::I16 => "i16",
        }
    }
    /// Parses the text syntax.
    pub fn from_name(s: &str) -> Option<Scalar> {
        Scalar::ALL.into_iter().find(|t| t.name() == s)
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Address spaces a pointer may point into.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum AddrSpace {
    /// Device memory visible to every thread: kernel buffer arguments.
    Global,
    /// Per-block memory: the kernel's `shared` declarations.
    Shared,
    /// Per-thread memory: `local` array declarations.
    Local,
    /// Read-only module constants (`const @name`).
    Const,
}

impl AddrSpace {
    /// Every address space.
    pub const ALL: [AddrSpace; 4] = [AddrSpace::Global, AddrSpace::Shared, AddrSpace::Local, AddrSpace::Const];
    /// Text syntax.
    pub const fn name(self) -> &'static str {
        match self {
            AddrSpace::Global => "global",
            AddrSpace::Shared => "shared",
            AddrSpace::Local => "local",
            AddrSpace::Const => "const",
        }
    }
    /// Parses the text syntax.
    pub fn from_name(s: &str) -> Option<AddrSpace> {
        AddrSpace::ALL.into_iter().find(|a| a.name() == s)
    }
}

impl fmt::Display for AddrSpace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A type. Text syntax: `i32`, `ptr<global, f32>`, `[u32; 16]`, `{word, u32}`.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum Type {
    /// A scalar.
    Scalar(Scalar),
    /// A pointer into `space` at values of the pointee type. Eight bytes.
    Ptr(AddrSpace, Box<Type>),
    /// `len` elements; `len` is at least 1.
    Array(Box<Type>, u32),
    /// Fields in order; at least one.
    Struct(Vec<Type>),
}

/// Layout failure: the type's size does not fit in `u32`, or it is empty.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
pub enum LayoutError {
    /// The size overflows `u32` bytes.
    #[error("type is too large (over 4 GiB)")]
    TooLarge,
    /// Arrays of length zero and structs without fields have no layout.
    #[error("type is empty")]
    Empty,
}

impl Type {
    /// Shorthand for `Type::Scalar`.
    pub const fn scalar(s: Scalar) -> Type {
        Type::Scalar(s)
    }
    /// Shorthand for a pointer type.
    pub fn ptr(space: AddrSpace, pointee: Type) -> Type {
        Type::Ptr(space, Box::new(pointee))
    }
    /// Shorthand for an array type.
    pub fn array(elem: Type, len: u32) -> Type {
        Type::Array(Box::new(elem), len)
    }
    /// The scalar, if this is one.
    pub fn as_scalar(&self) -> Option<Scalar> {
        match self {
            Type::Scalar(s) => Some(*s),
            _ => None,
        }
    }
    /// The address space and pointee, if this is a pointer.
    pub fn as_ptr(&self) -> Option<(AddrSpace, &Type)> {
        match self {
            Type::Ptr(space, p) => Some((*space, p)),
            _ => None,
        }
    }
    /// Whether an SSA value may have this type (scalars other than the
    /// storage types, and pointers).
    pub fn is_value_type(&self) -> bool {
        match self {
            Type::Scalar(s) => !s.is_storage(),
            Type::Ptr(..) => true,
            _ => false,
        }
    }
    /// Whether a `load` may read this type and a `store` write it: a value
    /// type or a storage scalar.
    pub fn is_loadable(&self) -> bool {
        self.is_value_type() || matches!(self, Type::Scalar(s) if s.is_storage())
    }
    /// The type of the value a `load` of this type gives (a storage scalar
    /// widened, [`Scalar::widened`]).
    pub fn loaded(&self) -> Type {
        match self {
            Type::Scalar(s) => Type::Scalar(s.widened()),
            t => t.clone(),
        }
    }
    /// Alignment in bytes.
    pub fn align(&self) -> u32 {
        match self {
            Type::Scalar(s) => s.size(),
            Type::Ptr(..) => 8,
            Type::Array(e, _) => e.align(),
            Type::Struct(fields) => fields.iter().map(Type::align).max().unwrap_or(1),
        }
    }
    /// Size in bytes, a multiple of the alignment.
    pub fn size(&self) -> Result<u32, LayoutError> {
        match self {
            Type::Scalar(s) => Ok(s.size()),
            Type::Ptr(..) => Ok(8),
            Type::Array(e, n) => {
                if *n == 0 {
                    return Err(LayoutError::Empty);
                }
                e.size()?.checked_mul(*n).ok_or(LayoutError::TooLarge)
            }
            Type::Struct(fields) => {
                let (end, align) = self.struct_end(fields.len())?;
                round_up(end, align)
            }
        }
    }
    /// Byte offset of field `i` of a struct type (`None` if not a struct or
    /// out of range).
    pub fn field_offset(&self, i: usize) -> Option<Result<u32, LayoutError>> {
        match self {
            Type::Struct(fields) if i < fields.len() => {
                Some(self.struct_end(i).and_then(|(end, _)| round_up(end, fields[i].align())))
            }
            _ => None,
        }
    }
    /// End offset of the first `n` fields, and the struct's alignment.
    fn struct_end(&self, n: usize) -> Result<(u32, u32), LayoutError> {
        let Type::Struct(fields) = self else { unreachable!("struct_end on a non-struct") };
        if fields.is_empty() {
            return Err(LayoutError::Empty);
        }
        let mut end = 0u32;
        for f in &fields[..n] {
            end = round_up(end, f.align())?.checked_add(f.size()?).ok_or(LayoutError::TooLarge)?;
        }
        Ok((end, self.align()))
    }
}

fn round_up(x: u32, align: u32) -> Result<u32, LayoutError> {
    x.checked_next_multiple_of(align).ok_or(LayoutError::TooLarge)
}

impl From<Scalar> for Type {
    fn from(s: Scalar) -> Type {
        Type::Scalar(s)
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Scalar(s) => write!(f, "{s}"),
            Type::Ptr(space, p) => write!(f, "ptr<{space}, {p}>"),
            Type::Array(e, n) => write!(f, "[{e}; {n}]"),
            Type::Struct(fields) => {
                f.write_str("{")?;
                for (i, t) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{t}")?;
                }
                f.write_str("}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn struct_layout_is_c_like() {
        let t = Type::Struct(vec![Scalar::Bool.into(), Scalar::Word.into(), Scalar::U32.into()]);
        assert_eq!(t.field_offset(0), Some(Ok(0)));
        assert_eq!(t.field_offset(1), Some(Ok(8)));
        assert_eq!(t.field_offset(2), Some(Ok(16)));
        assert_eq!(t.size(), Ok(24));
        assert_eq!(t.align(), 8);
        assert_eq!(t.field_offset(3), None);
    }

    #[test]
    fn huge_arrays_do_not_overflow() {
        let t = Type::array(Type::array(Scalar::F64.into(), 1 << 20), 1 << 20);
        assert_eq!(t.size(), Err(LayoutError::TooLarge));
        assert_eq!(Type::array(Scalar::U32.into(), 0).size(), Err(LayoutError::Empty));
    }

    #[test]
    fn display_is_text_syntax() {
        let t =
            Type::ptr(AddrSpace::Global, Type::Struct(vec![Scalar::Word.into(), Type::array(Scalar::F32.into(), 4)]));
        assert_eq!(t.to_string(), "ptr<global, {word, [f32; 4]}>");
    }
}
