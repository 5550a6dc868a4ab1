//! The helpers' Rust transcriptions (`mirror.rs`) against Rust's native
//! operations — the IR semantics of `relok_ir::eval` — on edge-biased
//! random operands and every pair of special values; and the table against
//! the `.wgsl` files.

use super::mirror::*;
use super::{Helper, Used};
use proptest::prelude::*;

/// f64 bit patterns biased towards the edges: zeros, subnormals,
/// MIN_POSITIVE, MAX, infinities, NaNs with payloads, values near
/// powers of two, the integer limits' neighbourhoods.
fn any_f64() -> impl Strategy<Value = u64> {
    let sign = |s: bool| if s { 1u64 << 63 } else { 0 };
    prop_oneof![
        any::<u64>(),
        (0u64..(1 << 52), any::<bool>()).prop_map(move |(m, s)| m | sign(s)),
        (0u64..16, any::<bool>()).prop_map(move |(m, s)| m | sign(s)),
        (0u64..2047, -3i64..=3, any::<bool>())
            .prop_map(move |(e, d, s)| ((e << 52) as i64 + d) as u64 & !(1 << 63) | sign(s)),
        (1000u64..1100, any::<u64>(), any::<bool>())
            .prop_map(move |(e, m, s)| (e << 52) | (m & 0xf_ffff_ffff_ffff) | sign(s)),
        (1u64..(1 << 52), any::<bool>()).prop_map(move |(m, s)| 0x7ff0_0000_0000_0000 | m | sign(s)),
        prop::sample::select(vec![
            0u64,
            1 << 63,
            f64::INFINITY.to_bits(),
            f64::NEG_INFINITY.to_bits(),
            f64::NAN.to_bits(),
            (-f64::NAN).to_bits(),
            f64::MIN_POSITIVE.to_bits(),
            f64::MAX.to_bits(),
            f64::MIN.to_bits(),
            1,
            1.0f64.to_bits(),
            (-1.0f64).to_bits(),
            0.5f64.to_bits(),
            2.0f64.to_bits(),
        ]),
    ]
}

/// A pair of f64 with close exponents (add/sub cancellation, ties).
fn close_f64() -> impl Strategy<Value = (u64, u64)> {
    (any_f64(), -3i64..=3, any::<u32>(), any::<bool>(), 0u32..64).prop_map(|(a, d, m, s, k)| {
        let b = (a as i64).wrapping_add(d << 52).wrapping_add(i64::from(m.checked_shr(k).unwrap_or(0))) as u64;
        (a, if s { b ^ (1 << 63) } else { b })
    })
}

fn check_bin(a: u64, b: u64) -> Result<(), TestCaseError> {
    let (x, y) = (f64::from_bits(a), f64::from_bits(b));
    let (va, vb) = (of(a), of(b));
    prop_assert_eq!(to(fadd64(va, vb)), (x + y).to_bits(), "{:#x} + {:#x}", a, b);
    prop_assert_eq!(to(fsub64(va, vb)), (x - y).to_bits(), "{:#x} - {:#x}", a, b);
    prop_assert_eq!(to(fmul64(va, vb)), (x * y).to_bits(), "{:#x} * {:#x}", a, b);
    prop_assert_eq!(to(fdiv64(va, vb)), (x / y).to_bits(), "{:#x} / {:#x}", a, b);
    prop_assert_eq!(to(frem64(va, vb)), (x % y).to_bits(), "{:#x} % {:#x}", a, b);
    prop_assert_eq!(to(min_f64(va, vb)), x.min(y).to_bits(), "{:#x} min {:#x}", a, b);
    prop_assert_eq!(to(max_f64(va, vb)), x.max(y).to_bits(), "{:#x} max {:#x}", a, b);
    prop_assert_eq!(eq_f64(va, vb), x == y);
    prop_assert_eq!(lt_f64(va, vb), x < y);
    prop_assert_eq!(lt_f64(vb, va), x > y);
    Ok(())
}

/// 64-bit values biased towards the edges: 0, 1, MIN, MAX, -1, powers
/// of two and their neighbours, small ones, equal halves.
fn any64() -> impl Strategy<Value = u64> {
    prop_oneof![
        any::<u64>(),
        (0u32..64, -2i64..=2).prop_map(|(k, d)| (1u64 << k).wrapping_add(d as u64)),
        (0u32..64, -2i64..=2).prop_map(|(k, d)| (1u64 << k).wrapping_add(d as u64).wrapping_neg()),
        any::<u32>().prop_map(u64::from),
        any::<u16>().prop_map(|x| u64::from(x) * 0x0001_0001_0001_0001),
        Just(i64::MIN as u64),
        Just(i64::MAX as u64),
        Just(u64::MAX),
    ]
}

/// f32 bit patterns biased towards the edges: zeros, subnormals,
/// infinities, NaNs, the integer limits and their neighbours.
fn any_f32() -> impl Strategy<Value = f32> {
    prop_oneof![
        any::<u32>().prop_map(f32::from_bits),
        (0u32..0x80_0000, any::<bool>()).prop_map(|(m, s)| f32::from_bits(m | if s { 0x8000_0000 } else { 0 })),
        (120u32..200, -2i32..=2, any::<bool>())
            .prop_map(|(e, d, s)| f32::from_bits(((e << 23) as i32 + d) as u32 | if s { 0x8000_0000 } else { 0 })),
        prop::sample::select(vec![
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            -f32::NAN,
            0.5,
            -0.5,
            1.0,
            -1.0
        ]),
    ]
}

fn same_f32(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20_000))]

    #[test]
    fn integer_ops_match_rust(a in any64(), b in any64()) {
        prop_assert_eq!(to(add64(of(a), of(b))), a.wrapping_add(b));
        prop_assert_eq!(to(sub64(of(a), of(b))), a.wrapping_sub(b));
        prop_assert_eq!(to(sub64(of(0), of(a))), a.wrapping_neg());
        prop_assert_eq!(to(mul32(a as u32, b as u32)), u64::from(a as u32) * u64::from(b as u32));
        prop_assert_eq!(to(mul64(of(a), of(b))), a.wrapping_mul(b));
        prop_assert_eq!(lt_u64(of(a), of(b)), a < b);
        prop_assert_eq!(lt_i64(of(a), of(b)), (a as i64) < (b as i64));
        let n = b as u32;
        prop_assert_eq!(to(shl64(of(a), n)), a.wrapping_shl(n % 64));
        prop_assert_eq!(to(shr64(of(a), n)), a.wrapping_shr(n % 64));
        prop_assert_eq!(to(sar64(of(a), n)), (a as i64).wrapping_shr(n % 64) as u64);
    }

    #[test]
    fn division_matches_the_ir(a in any64(), b in any64()) {
        use relok_ir::{BinaryOp, Scalar};
        let (q, r) = udivmod64(of(a), of(b));
        prop_assert_eq!(to(q), relok_ir::eval::binary(BinaryOp::Div, Scalar::U64, a, b));
        prop_assert_eq!(to(r), relok_ir::eval::binary(BinaryOp::Rem, Scalar::U64, a, b));
        let (q, r) = sdivmod64(of(a), of(b));
        prop_assert_eq!(to(q), relok_ir::eval::binary(BinaryOp::Div, Scalar::I64, a, b));
        prop_assert_eq!(to(r), relok_ir::eval::binary(BinaryOp::Rem, Scalar::I64, a, b));
    }

    #[test]
    fn conversions_match_rust_as(a in any64(), x in any_f32()) {
        prop_assert_eq!(u64_to_f32(of(a)).to_bits(), (a as f32).to_bits());
        prop_assert_eq!(i64_to_f32(of(a)).to_bits(), (a as i64 as f32).to_bits());
        prop_assert_eq!(u64_to_f32(v2(a as u32, 0)).to_bits(), (a as u32 as f32).to_bits());
        prop_assert_eq!(f32_to_i32(x), x as i32);
        prop_assert_eq!(f32_to_u32(x), x as u32);
        prop_assert_eq!(to(f32_to_u64(x)), x as u64);
        prop_assert_eq!(to(f32_to_i64(x)), x as i64 as u64);
        prop_assert_eq!(isnan(x), x.is_nan());
    }

    #[test]
    fn fdiv_matches_rust_div(x in any_f32(), y in any_f32()) {
        let r = fdiv32(x, y);
        prop_assert!(same_f32(r, x / y), "{:?} / {:?}: {:?} ({:#x}), Rust {:?} ({:#x})", x, y, r, r.to_bits(), x / y, (x / y).to_bits());
    }

    #[test]
    fn fmod_matches_rust_rem(x in any_f32(), y in any_f32()) {
        let r = fmod32(x, y);
        prop_assert!(same_f32(r, x % y), "{:?} % {:?}: {:?} ({:#x}), Rust {:?} ({:#x})", x, y, r, r.to_bits(), x % y, (x % y).to_bits());
    }

    #[test]
    fn f64_arithmetic_matches_rust(a in any_f64(), b in any_f64()) {
        check_bin(a, b)?;
    }

    #[test]
    fn f64_arithmetic_of_close_operands_matches_rust((a, b) in close_f64()) {
        check_bin(a, b)?;
    }

    #[test]
    fn f64_to_f32_ties_match_rust(a in any_f64(), e in 850u64..1160, k in 0u32..3) {
        // The bits below f32's last place made exactly half of it (or
        // just below or above), subnormal f32 results included.
        let sh = if e >= 897 { 29 } else { (926 - e).min(63) };
        let half = 1u64 << (sh - 1);
        let m = (a & 0x800f_ffff_ffff_ffff & !((half << 1) - 1)) | (half - 1 + u64::from(k)) & ((half << 1) - 1);
        let b = m | (e << 52);
        prop_assert_eq!(f64_to_f32(of(b)).to_bits(), (f64::from_bits(b) as f32).to_bits(), "{:#x} as f32", b);
    }

    #[test]
    fn f64_unary_and_conversions_match_rust(a in any_f64(), i in any64(), f in any_f32()) {
        let x = f64::from_bits(a);
        prop_assert_eq!(to(fsqrt64(of(a))), x.sqrt().to_bits(), "sqrt {:#x}", a);
        prop_assert_eq!(isnan64(of(a)), x.is_nan());
        prop_assert_eq!(f64_to_f32(of(a)).to_bits(), (x as f32).to_bits(), "{:#x} as f32", a);
        prop_assert_eq!(f64_to_i32(of(a)), x as i32);
        prop_assert_eq!(f64_to_u32(of(a)), x as u32);
        prop_assert_eq!(to(f64_to_i64(of(a))), x as i64 as u64);
        prop_assert_eq!(to(f64_to_u64(of(a))), x as u64);
        prop_assert_eq!(to(u64_to_f64(of(i))), (i as f64).to_bits(), "{} as f64", i);
        prop_assert_eq!(to(i64_to_f64(of(i))), (i as i64 as f64).to_bits(), "{} as f64", i as i64);
        prop_assert_eq!(to(f32_to_f64(f)), f64::from(f).to_bits(), "{:#x} as f64", f.to_bits());
        let p = mul128(of(a), of(i));
        let want = u128::from(a) * u128::from(i);
        prop_assert_eq!(p, [want as u32, (want >> 32) as u32, (want >> 64) as u32, (want >> 96) as u32]);
    }
}

#[test]
fn signed_division_edges() {
    let (min, m1) = (of(i64::MIN as u64), of(u64::MAX));
    assert_eq!(sdivmod64(min, m1), (min, v2(0, 0)));
    assert_eq!(sdivmod64(of(7), of(0)), (v2(0, 0), of(7)));
    assert_eq!(sdivmod64(of(-7i64 as u64), of(2)), (of(-3i64 as u64), of(-1i64 as u64)));
    assert_eq!(udivmod64(of(u64::MAX), of(u64::MAX - 1)), (of(1), of(1)));
}

#[test]
fn fdiv_of_specials_and_divisors_beyond_2_pow_126() {
    let big = f32::from_bits(0x7e80_0001);
    let cases = [
        (26.0f32, 3.159_002_5e38f32),
        (1.0, 0.0),
        (-1.0, 0.0),
        (1.0, -0.0),
        (0.0, 0.0),
        (f32::INFINITY, f32::INFINITY),
        (f32::INFINITY, 2.0),
        (2.0, f32::NEG_INFINITY),
        (f32::MAX, f32::MAX),
        (f32::MAX, big),
        (f32::MIN_POSITIVE, big),
        (f32::from_bits(1), big),
        (f32::NAN, 1.0),
        (1.0, f32::NAN),
        (-0.0, 5.0),
        (3.0, f32::from_bits(1)),
        (1.0, f32::from_bits(0x007f_ffff)),
        (-2.5, f32::from_bits(0x8000_0003)),
        (f32::MAX, f32::from_bits(1)),
        (f32::from_bits(1), f32::from_bits(1)),
        (f32::from_bits(5), -f32::from_bits(0x0040_0000)),
        (1e-30, f32::from_bits(2)),
    ];
    for (x, y) in cases {
        assert!(same_f32(fdiv32(x, y), x / y), "{x} / {y}: {} against {}", fdiv32(x, y), x / y);
    }
}

#[test]
fn fmod_of_close_and_subnormal_operands() {
    let cases = [
        (5.5f32, 2.0f32),
        (-5.5, 2.0),
        (1e30, 3.0),
        (f32::from_bits(7), f32::from_bits(3)),
        (1.0, f32::from_bits(1)),
        (-0.0, 1.0),
        (3.0, 3.0),
        (-3.0, 3.0),
        (f32::MAX, f32::MIN_POSITIVE),
    ];
    for (x, y) in cases {
        assert!(same_f32(fmod32(x, y), x % y), "{x} % {y}");
    }
}

/// Every pair of special f64 values, every operation: zeros of both
/// signs, subnormals, MIN_POSITIVE, MAX, infinities, quiet and
/// signalling NaNs with payloads of both signs.
#[test]
fn f64_specials_pairwise_match_rust() {
    let mut specials = vec![
        0u64,
        1,
        2,
        0x000f_ffff_ffff_ffff,
        0x0010_0000_0000_0000,
        0x7fef_ffff_ffff_ffff,
        0x7ff0_0000_0000_0000,
        0x7ff0_0000_0000_0001,
        0x7ff4_0000_0000_0000,
        0x7ff8_0000_0000_0000,
        0x7fff_ffff_ffff_ffff,
        0x7ff8_dead_beef_0001,
    ];
    for x in [0.1f64, 1.0, 1.5, 2.0, 3.0, 1e300, 1e-300, 4.503_599_627_370_496e15, 9.007_199_254_740_993e15] {
        specials.push(x.to_bits());
    }
    let negated: Vec<u64> = specials.iter().map(|b| b ^ (1 << 63)).collect();
    specials.extend(negated);
    for &a in &specials {
        for &b in &specials {
            check_bin(a, b).unwrap_or_else(|e| panic!("{a:#x}, {b:#x}: {e}"));
        }
        let x = f64::from_bits(a);
        assert_eq!(to(fsqrt64(of(a))), x.sqrt().to_bits(), "sqrt {a:#x}");
        assert_eq!(f64_to_f32(of(a)).to_bits(), (x as f32).to_bits(), "{a:#x} as f32");
        assert_eq!((f64_to_i32(of(a)), f64_to_u32(of(a))), (x as i32, x as u32), "{a:#x}");
        assert_eq!((to(f64_to_i64(of(a))), to(f64_to_u64(of(a)))), (x as i64 as u64, x as u64), "{a:#x}");
        let f = f32::from_bits((a >> 32) as u32);
        assert_eq!(to(f32_to_f64(f)), f64::from(f).to_bits(), "{:#x} as f64", f.to_bits());
    }
}

/// The `relok_` functions `source` calls (its own definition aside).
fn calls(h: Helper) -> Vec<&'static str> {
    let src = h.source();
    let mut out: Vec<&str> = src
        .match_indices("relok_")
        .map(|(i, _)| {
            let rest = &src[i..];
            &rest[..rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len())]
        })
        .filter(|&n| n != h.name() && src[..].contains(&format!("{n}(")))
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// Each file defines the function its row names, once, and ends with its
/// closing line; it calls exactly the helpers its row lists.
#[test]
fn the_table_matches_the_files() {
    for &h in Helper::ALL {
        let src = h.source();
        assert_eq!(src.matches(&format!("fn {}(", h.name())).count(), 1, "{h:?}");
        assert_eq!(src.matches("\nfn ").count() + usize::from(src.starts_with("fn ")), 1, "{h:?}: one function");
        assert!(src.ends_with("}\n") && !src.ends_with("\n\n"), "{h:?}");
        let mut deps: Vec<&str> = h.deps().iter().map(|d| d.name()).collect();
        deps.sort_unstable();
        assert_eq!(calls(h), deps, "{h:?}: the calls in its file and the row's list");
    }
}

/// The text of every helper used is what the table lists, in order, each
/// once, a blank line after each; a helper brings what it calls.
#[test]
fn used_text_is_in_table_order() {
    let mut all = Used::default();
    Helper::ALL.iter().for_each(|&h| all.insert(h));
    let expected: String = Helper::ALL.iter().map(|h| format!("{}\n", h.source())).collect();
    assert_eq!(all.text(), expected);
    let mut one = Used::default();
    one.insert(Helper::FMul64);
    let closure = [
        Helper::IsNan64,
        Helper::Nan2F64,
        Helper::Unpack64,
        Helper::Mul128,
        Helper::Mul32,
        Helper::Shl64,
        Helper::Pack64,
        Helper::Rsr64,
    ];
    for h in closure {
        assert!(one.contains(h), "{h:?}");
    }
    assert!(!one.contains(Helper::FDiv64));
}

/// A helper's loops are `loop`s, not nested, each counting its back
/// edges in `relok_iterations` ([`Helper::loops`]); no helper calls one
/// with loops twice.
#[test]
fn helper_loops_count_their_back_edges() {
    for &h in Helper::ALL {
        let src = h.source();
        assert!(!src.contains("for (") && !src.contains("while ("), "{h:?}: loops are `loop`s");
        let loops = src.matches("loop {").count();
        assert_eq!(src.matches("continuing { ").count(), loops, "{h:?}");
        assert_eq!(src.matches("relok_iterations += 1u; }").count(), loops, "{h:?}");
        // Not nested: between a `loop {` and the next, its `continuing`.
        for (k, part) in src.split("loop {").skip(1).enumerate() {
            assert!(part.contains("continuing {"), "{h:?}: loop {k} holds another");
        }
        for &d in h.deps().iter().filter(|d| d.loops() > 0) {
            assert_eq!(src.matches(&format!("{}(", d.name())).count(), 1, "{h:?} calls {d:?}");
        }
    }
    assert_eq!((Helper::Fmod32.loops(), Helper::FRem64.loops(), Helper::UDivMod64.loops()), (4, 2, 1));
}

/// Each helper, with what it calls, is a valid WGSL module on its own.
#[test]
fn each_helper_validates_alone() {
    for &h in Helper::ALL {
        let mut used = Used::default();
        used.insert(h);
        let text = format!("var<private> relok_iterations: u32;\n{}", used.text());
        let module =
            naga::front::wgsl::parse_str(&text).unwrap_or_else(|e| panic!("{h:?}: {}", e.emit_to_string(&text)));
        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::empty())
            .validate(&module)
            .unwrap_or_else(|e| panic!("{h:?}: {e:?}"));
    }
}

/// Significands (as f32 in [1, 4): the exponent's parity matters) whose
/// square root lies closest to a midpoint between two f32: 4N - (2y+1)^2
/// of -1 to 121 (found by searching every significand of both parities).
pub(super) const HARD_SQRT: [u32; 40] = [
    0x407f_ffff,
    0x3f80_0001,
    0x3ffc_114a,
    0x407f_fffd,
    0x3f80_0003,
    0x406e_9372,
    0x3f92_5859,
    0x4055_1dbf,
    0x3fb0_c6c3,
    0x405a_e03b,
    0x3fa9_7bef,
    0x407f_fffb,
    0x3f80_0005,
    0x402a_177f,
    0x3ff0_28ab,
    0x4041_bc4e,
    0x3fcb_41e9,
    0x3fcd_aeb2,
    0x3fb8_cc66,
    0x3ff0_d9ce,
    0x407f_fff9,
    0x3f80_0007,
    0x403b_8bcc,
    0x3fd4_6581,
    0x400f_e042,
    0x404d_142a,
    0x3fbb_61f7,
    0x403b_8e2a,
    0x3fd4_61f1,
    0x405f_5fa5,
    0x3fa3_f60b,
    0x401d_c3f5,
    0x3fc3_d4c6,
    0x407f_fff7,
    0x4051_5a77,
    0x4012_1e3f,
    0x4033_02be,
    0x4071_a284,
    0x4053_64e1,
    0x407f_fff5,
];

/// A driver's `sqrt` of `z` that is `k` ulp off.
fn off_by(k: i32) -> impl Fn(f32) -> f32 {
    move |z: f32| f32::from_bits((z.sqrt().to_bits() as i32 + k) as u32)
}

/// `fsqrt32` with a guess `k` ulp off against Rust's `sqrt` (x86's
/// `sqrtss`: correctly rounded), NaNs by their bits on x86-64.
fn check_sqrt(x: f32, k: i32) -> Result<(), String> {
    let (got, want) = (fsqrt32(x, off_by(k)), x.sqrt());
    let same = if cfg!(target_arch = "x86_64") { got.to_bits() == want.to_bits() } else { same_f32(got, want) };
    if same {
        Ok(())
    } else {
        Err(format!(
            "sqrt {:#x} with a guess {k} ulp off: {:#x}, Rust {:#x}",
            x.to_bits(),
            got.to_bits(),
            want.to_bits()
        ))
    }
}

#[test]
fn fsqrt32_is_correctly_rounded_on_hard_cases_specials_and_a_sweep() {
    let mut xs: Vec<u32> = vec![
        0,
        0x8000_0000,
        1,
        2,
        3,
        0x007f_ffff,
        0x0080_0000,
        0x7f7f_ffff,
        0x7f80_0000,
        0xff80_0000,
        0x7fc0_0000,
        0x7f80_0001,
        0xffc0_0001,
        0xbf80_0000,
        0x8000_0001,
        0x3f80_0000,
        0x4000_0000,
    ];
    // Each hard significand at exponents of its parity, subnormal included.
    for h in HARD_SQRT {
        for e in (2..254).step_by(2) {
            xs.push((h & 0x007f_ffff) | ((e + ((h >> 23) & 1)) << 23));
        }
        xs.extend([h & 0x007f_ffff, (h & 0x007f_ffff) >> 1]);
    }
    // Every 4099th bit pattern.
    xs.extend((0..u32::MAX / 4099).map(|i| i * 4099));
    for &x in &xs {
        for k in [-16, -3, -1, 0, 1, 2, 16] {
            check_sqrt(f32::from_bits(x), k).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

/// Every f32: run by hand (`cargo test --release -p relok-compiler
/// fsqrt32_every -- --ignored`), a few minutes.
#[test]
#[ignore = "every f32, minutes"]
fn fsqrt32_every_f32_with_guesses_off_by_up_to_16_ulp() {
    for x in 0..=u32::MAX {
        for k in [-16, -1, 0, 1, 16] {
            check_sqrt(f32::from_bits(x), k).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

fn ir_fma32(a: f32, b: f32, c: f32) -> f32 {
    let bits = [a, b, c].map(|x| u64::from(x.to_bits()));
    f32::from_bits(relok_ir::eval::math(relok_ir::MathFn::Fma, relok_ir::Scalar::F32, &bits).expect("fma folds") as u32)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20_000))]

    #[test]
    fn fma32_matches_the_ir(a in any_f32(), b in any_f32(), c in any_f32()) {
        prop_assert!(same_f32(fma32(a, b, c), ir_fma32(a, b, c)), "fma({a:e}, {b:e}, {c:e})");
    }

    #[test]
    fn fma32_of_cancelling_and_tiny_sums_matches_the_ir(a in any_f32(), b in any_f32(), d in -40i32..40, k in 0u32..4, tiny in any::<bool>()) {
        // c near -a*b (cancellation, ties of the low part), or products in
        // the subnormal range.
        let (a, b) = if tiny { (a * 1e-20, b * 1e-20) } else { (a, b) };
        let c = f32::from_bits(((-(a * b)).to_bits() as i32).wrapping_add(d) as u32) * (1.0 + k as f32 * f32::EPSILON);
        prop_assert!(same_f32(fma32(a, b, c), ir_fma32(a, b, c)), "fma({a:e}, {b:e}, {c:e})");
    }

    #[test]
    fn fsqrt32_matches_rust(x in any_f32(), k in -16i32..=16) {
        prop_assert!(check_sqrt(x, k).is_ok(), "{}", check_sqrt(x, k).unwrap_err());
    }

    #[test]
    fn fround64_matches_rust(a in any_f64()) {
        let x = f64::from_bits(a);
        let want = [x.floor(), x.ceil(), x.trunc(), x.round()];
        for (mode, w) in (0u32..).zip(want) {
            let got = f64::from_bits(to(fround64(of(a), mode)));
            prop_assert!(got.to_bits() == w.to_bits() || (got.is_nan() && w.is_nan()), "mode {mode} of {x:e}: {got:e}");
        }
    }
}
