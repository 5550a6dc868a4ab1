//! WGSL helper functions for what WGSL lacks: 64-bit integers (`i64`,
//! `u64` as `vec2<u32>` (low, high)), `f64` (its bits as `vec2<u32>`,
//! IEEE binary64 emulated exactly: naga cannot bitcast to f64 and Metal
//! has none), float conversions and `fmod` done on the bits, and NaN tests
//! by bits (a driver may assume no NaNs and fold `x != x`; integer
//! operations it cannot fold).
//!
//! As naga's `back/wgsl/polyfill`: each helper is a `.wgsl` file in this
//! folder (the function, with the comment above it), pulled in with
//! `include_str!` and described by one row of the table below: its
//! [`Helper`] variant, its file (the WGSL function is `relok_` + the file's
//! stem) and the helpers it calls.
//!
//! A module gets each helper it uses (and what that one calls) once, in the
//! order of the table, a blank line after each, so the text is byte-stable.
//! Every helper's WGSL has a line-by-line Rust transcription in `mirror.rs`,
//! which `tests.rs` checks against Rust's native operations (the IR
//! semantics of `relok_ir::eval`); `tests.rs` also checks the table against
//! the files (each defines its function and calls exactly the helpers its
//! row lists) and validates each helper with naga on its own.

#[cfg(test)]
mod mirror;
#[cfg(test)]
mod tests;

/// Declares [`Helper`] from the table: one row per helper,
/// `Variant = file_stem calls [Variant, …];` under the variant's docs (its
/// signature and what it computes). The rows' order is the output order.
macro_rules! helpers {
    ($($(#[doc = $doc:literal])* $variant:ident = $stem:ident calls [$($dep:ident),*];)*) => {
        /// One helper function.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub(super) enum Helper {
            $($(#[doc = $doc])* $variant,)*
        }

        impl Helper {
            /// Every helper, in output order.
            pub(super) const ALL: &'static [Helper] = &[$(Helper::$variant),*];

            /// The WGSL function's name.
            pub(super) const fn name(self) -> &'static str {
                match self {
                    $(Helper::$variant => concat!("relok_", stringify!($stem)),)*
                }
            }

            /// The helpers this one calls.
            pub(super) const fn deps(self) -> &'static [Helper] {
                match self {
                    $(Helper::$variant => &[$(Helper::$dep),*],)*
                }
            }

            /// The WGSL text: the function and the comment above it, ending
            /// with its closing line.
            pub(super) const fn source(self) -> &'static str {
                match self {
                    $(Helper::$variant => include_str!(concat!(stringify!($stem), ".wgsl")),)*
                }
            }
        }
    };
}

helpers! {
    /// `relok_isnan(x: f32) -> bool`.
    IsNan = isnan calls [];
    /// `relok_add64(a, b)`: wrapping, with the carry.
    Add64 = add64 calls [];
    /// `relok_sub64(a, b)`: wrapping, with the borrow (`neg` is `0 - a`).
    Sub64 = sub64 calls [];
    /// `relok_mul32(a: u32, b: u32) -> vec2<u32>`: the full product.
    Mul32 = mul32 calls [];
    /// `relok_mul64(a, b)`: the low 64 bits of the product.
    Mul64 = mul64 calls [Mul32];
    /// `relok_lt_u64(a, b) -> bool`.
    LtU64 = lt_u64 calls [];
    /// `relok_lt_i64(a, b) -> bool`.
    LtI64 = lt_i64 calls [];
    /// `relok_shl64(a, n: u32)`: `n` modulo 64.
    Shl64 = shl64 calls [];
    /// `relok_shr64(a, n: u32)`: logical, `n` modulo 64.
    Shr64 = shr64 calls [];
    /// `relok_sar64(a, n: u32)`: arithmetic, `n` modulo 64.
    Sar64 = sar64 calls [];
    /// `relok_udivmod64(n, d) -> vec4<u32>`: (quotient, remainder).
    UDivMod64 = udivmod64 calls [LtU64, Sub64];
    /// `relok_sdivmod64(n, d) -> vec4<u32>`: (quotient, remainder), signed.
    SDivMod64 = sdivmod64 calls [UDivMod64, Sub64];
    /// `relok_u64_to_f32(a) -> f32`: to nearest, ties to even.
    U64ToF32 = u64_to_f32 calls [Shl64];
    /// `relok_i64_to_f32(a) -> f32`: to nearest, ties to even.
    I64ToF32 = i64_to_f32 calls [U64ToF32, Sub64];
    /// `relok_f32_to_i32(x) -> i32`: toward zero, saturating, NaN to 0.
    F32ToI32 = f32_to_i32 calls [];
    /// `relok_f32_to_u32(x) -> u32`: toward zero, saturating, NaN to 0.
    F32ToU32 = f32_to_u32 calls [];
    /// `relok_f32_to_u64(x)`: toward zero, saturating, NaN to 0.
    F32ToU64 = f32_to_u64 calls [Shl64];
    /// `relok_f32_to_i64(x)`: toward zero, saturating, NaN to 0.
    F32ToI64 = f32_to_i64 calls [Shl64, Sub64];
    /// `relok_fdiv32(x, y) -> f32`: `/` with IEEE specials and divisors
    /// beyond 2^126 or below 2^-126 (where WGSL bounds no driver's division).
    FDiv32 = fdiv32 calls [];
    /// `relok_fsqrt32(x) -> f32`: `sqrt`, correctly rounded (the driver's
    /// as a first guess, corrected on the exact integer residual).
    FSqrt32 = fsqrt32 calls [];
    /// `relok_fmod32(x, y) -> f32`: C's `fmodf`, exactly.
    Fmod32 = fmod32 calls [];
    /// `relok_isnan64(a) -> bool`: f64 (as `vec2<u32>` bits) NaN.
    IsNan64 = isnan64 calls [];
    /// `relok_eq_f64(a, b) -> bool`: IEEE `==` (NaN unordered, -0 == +0).
    EqF64 = eq_f64 calls [IsNan64];
    /// `relok_lt_f64(a, b) -> bool`: IEEE `<`.
    LtF64 = lt_f64 calls [IsNan64, LtU64];
    /// `relok_min_f64(a, b)`: Rust's `f64::min` on x86-64.
    MinF64 = min_f64 calls [IsNan64, LtF64];
    /// `relok_max_f64(a, b)`: Rust's `f64::max` on x86-64.
    MaxF64 = max_f64 calls [IsNan64, LtF64];
    /// `relok_u64_to_f64(a)`: to nearest, ties to even.
    U64ToF64 = u64_to_f64 calls [Shl64, Add64];
    /// `relok_i64_to_f64(a)`: to nearest, ties to even.
    I64ToF64 = i64_to_f64 calls [U64ToF64, Sub64];
    /// `relok_f32_to_f64(x: f32)`: exact.
    F32ToF64 = f32_to_f64 calls [];
    /// `relok_rsr64(m, sh)`: a right shift rounding to nearest even.
    Rsr64 = rsr64 calls [Shr64, Shl64, Sub64, LtU64, Add64];
    /// `relok_f64_to_f32(a) -> f32`: to nearest, ties to even.
    F64ToF32 = f64_to_f32 calls [Rsr64];
    /// `relok_pack64(s, e, m)`: a rounded f64 from sign, exponent, significand.
    Pack64 = pack64 calls [Rsr64, Add64];
    /// `relok_unpack64(a) -> vec3<u32>`: normalised significand and exponent.
    Unpack64 = unpack64 calls [Shl64];
    /// `relok_nan2_64(a, b)`: the first NaN operand, quieted.
    Nan2F64 = nan2_64 calls [IsNan64];
    /// `relok_fadd64(a, b)`: f64 `+`.
    FAdd64 = fadd64 calls [IsNan64, Nan2F64, LtU64, Shl64, Shr64, Sub64, Add64, Pack64];
    /// `relok_fsub64(a, b)`: f64 `-`.
    FSub64 = fsub64 calls [FAdd64, IsNan64];
    /// `relok_mul128(a, b) -> vec4<u32>`: the full product of two u64.
    Mul128 = mul128 calls [Mul32];
    /// `relok_fmul64(a, b)`: f64 `*`.
    FMul64 = fmul64 calls [IsNan64, Nan2F64, Unpack64, Mul128, Shl64, Pack64];
    /// `relok_fdiv64(a, b)`: f64 `/`.
    FDiv64 = fdiv64 calls [IsNan64, Nan2F64, Unpack64, LtU64, Shl64, Sub64, Pack64];
    /// `relok_fsqrt64(a)`: f64 square root.
    FSqrt64 = fsqrt64 calls [IsNan64, Unpack64, Shl64, LtU64, Sub64, Pack64];
    /// `relok_frem64(a, b)`: C's `fmod`, exactly.
    FRem64 = frem64 calls [IsNan64, Nan2F64, LtU64, Unpack64, Sub64, Shl64, Shr64];
    /// `relok_f64_mag(a)`: |x| toward zero as a saturated u64.
    F64Mag = f64_mag calls [IsNan64, Shl64, Shr64];
    /// `relok_f64_to_i32(a) -> i32`: toward zero, saturating, NaN to 0.
    F64ToI32 = f64_to_i32 calls [F64Mag];
    /// `relok_f64_to_u32(a) -> u32`: toward zero, saturating, NaN to 0.
    F64ToU32 = f64_to_u32 calls [F64Mag];
    /// `relok_f64_to_i64(a)`: toward zero, saturating, NaN to 0.
    F64ToI64 = f64_to_i64 calls [F64Mag, LtU64, Sub64];
    /// `relok_f64_to_u64(a)`: toward zero, saturating, NaN to 0.
    F64ToU64 = f64_to_u64 calls [F64Mag];
    /// `relok_fma32(a, b, c) -> f32`: `a * b + c` rounded once.
    Fma32 = fma32 calls [FMul64, F32ToF64, FAdd64, FSub64, IsNan64, Add64, Sub64, F64ToF32];
    /// `relok_fround64(a, mode: u32)`: f64 floor (0), ceil (1), trunc (2),
    /// round (3, halfway away from zero), exactly.
    FRound64 = fround64 calls [Shl64, Sub64, LtU64, Add64];
}

// `Used` keeps a bit per helper.
const _: () = assert!(Helper::ALL.len() <= 64);

/// The helpers a module uses (a bit per [`Helper`], closed under calls).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Used(u64);

impl Used {
    /// Adds `h` and what it calls.
    pub(super) fn insert(&mut self, h: Helper) {
        self.0 |= 1 << h as u64;
        for &d in h.deps() {
            self.insert(d);
        }
    }

    /// Adds every helper of `other`.
    pub(super) fn extend(&mut self, other: Used) {
        self.0 |= other.0;
    }

    /// Whether `h` is used.
    pub(super) fn contains(self, h: Helper) -> bool {
        self.0 & (1 << h as u64) != 0
    }

    /// The WGSL text of the helpers used, in [`Helper`] order, each
    /// followed by a blank line.
    pub(super) fn text(self) -> String {
        Helper::ALL.iter().filter(|&&h| self.contains(h)).flat_map(|h| [h.source(), "\n"]).collect()
    }
}

impl Helper {
    /// The WGSL loops a call goes through, its callees' included: what a
    /// call costs llvmpipe's loop counter before any loop goes round
    /// (`super::unroll`). A helper's loops are `loop`s, none nested, each
    /// adding 1 to `relok_iterations` on its back edge (`continuing`);
    /// each callee is called once (`helper_loops_count_their_back_edges`).
    pub(super) fn loops(self) -> usize {
        self.source().matches("loop {").count() + self.deps().iter().map(|d| d.loops()).sum::<usize>()
    }
}
