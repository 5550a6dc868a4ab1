//! Rust kernels over `u8`, `i8`, `u16` and `i16` (and `&[bool]` masks)
//! compute what the same Rust computes on the host, on every device (the
//! cpu device always; wgpu on lavapipe here; cuda when a GPU is present).
//! The device keeps a small integer in a 32-bit value wrapped to its
//! width after each operation and stores it in its own width, so each
//! kernel below is compared, element for element, with its plain-Rust
//! twin (written with `wrapping_*` where the kernel's `+` wraps, as a
//! release build's does):
//!
//! - an RGBA image filter over `&[u8]` (neighbouring bytes of one word
//!   written by different threads), and the same over a struct of four
//!   `u8` fields;
//! - wrapping arithmetic, shifts (by amounts past the width), `!`,
//!   division and `abs` at the types' edges;
//! - the integer methods whose result depends on the width;
//! - `as` between every small type and the others, floats saturated;
//! - small integers in shared and local arrays, host statics, kernel
//!   parameters and `let mut`s; a `&[bool]` mask;
//! - ranges of them, `step_by` a step the type cannot hold.

use crate::common::{check, contexts, serial};
use relok::{Grid, Strategy};

fn grid(n: usize) -> Grid {
    Grid::cover(n, 64)
}

/// Every value of `i8`, as the input the signed tests run over.
fn all_i8() -> Vec<i8> {
    (i8::MIN..=i8::MAX).collect()
}

// 1. An RGBA image: gain on the colour channels (saturating at 255), alpha
// kept; one thread per byte, so four threads write each 32-bit word.

#[relok::kernel]
fn gain(src: &[u8], dst: &mut [u8], num: u32) {
    let i = relok::global_id_x();
    if i < src.len() {
        let c = src[i];
        dst[i] = if i % 4 == 3 { c } else { ((c as u32 * num) >> 8).min(255) as u8 };
    }
}

fn gain_host(src: &[u8], dst: &mut [u8], num: u32) {
    for i in 0..src.len() {
        let c = src[i];
        dst[i] = if i % 4 == 3 { c } else { ((c as u32 * num) >> 8).min(255) as u8 };
    }
}

fn image(pixels: usize) -> Vec<u8> {
    (0..pixels * 4).map(|i| (i * 37 % 256) as u8).collect()
}

#[test]
fn an_rgba_filter_over_bytes_matches_rust() {
    let src = image(61);
    let mut want = vec![0u8; src.len()];
    gain_host(&src, &mut want, 300);
    check("gain", &src, &want, |s, x, out| gain::launch(s, grid(x.len()), x, out, 300).expect("launch"));
}

#[derive(Clone, Copy, Debug, PartialEq, relok::Struct)]
#[repr(C)]
struct Rgba {
    r: u8,
    g: u8,
    b: u8,
    a: u8,
}

/// Grey by the integer weights (77, 150, 29) / 256, alpha halved.
#[relok::kernel]
fn grey(px: &[Rgba], out: &mut [Rgba]) {
    let i = relok::global_id_x();
    if i < px.len() {
        let p = px[i];
        let y = ((p.r as u32 * 77 + p.g as u32 * 150 + p.b as u32 * 29) >> 8) as u8;
        out[i] = Rgba { r: y, g: y, b: y, a: p.a / 2 };
    }
}

fn grey_host(px: &[Rgba], out: &mut [Rgba]) {
    for i in 0..px.len() {
        let p = px[i];
        let y = ((p.r as u32 * 77 + p.g as u32 * 150 + p.b as u32 * 29) >> 8) as u8;
        out[i] = Rgba { r: y, g: y, b: y, a: p.a / 2 };
    }
}

#[test]
fn a_struct_of_bytes_is_a_pixel() {
    let bytes = image(77);
    let px: Vec<Rgba> = bytes.chunks(4).map(|c| Rgba { r: c[0], g: c[1], b: c[2], a: c[3] }).collect();
    let mut want = vec![Rgba { r: 0, g: 0, b: 0, a: 0 }; px.len()];
    grey_host(&px, &mut want);
    check("grey", &px, &want, |s, x, out| grey::launch(s, grid(x.len()), x, out).expect("launch"));
}

// 2. Wrapping arithmetic at every i8, against a neighbour.

const I8_OPS: usize = 15;

#[relok::kernel]
fn i8_ops(x: &[i8], out: &mut [i8]) {
    let i = relok::global_id_x();
    let n = x.len();
    if i < n {
        let a = x[i];
        let b = x[(i * 7 + 3) % n];
        let s = (i % 11) as u32;
        out[i] = a + b;
        out[n + i] = a - b;
        out[2 * n + i] = a * b;
        out[3 * n + i] = -a;
        out[4 * n + i] = !a;
        out[5 * n + i] = a << s;
        out[6 * n + i] = a >> s;
        out[7 * n + i] = if b != 0 { a / b } else { 0 };
        out[8 * n + i] = if b != 0 { a % b } else { 0 };
        out[9 * n + i] = a.abs();
        out[10 * n + i] = a ^ b | (a & 0x0f);
        let mut acc: i8 = a;
        for _ in 0..3 {
            acc = acc * 3 + 1;
        }
        out[11 * n + i] = acc;
        // The wrapped value read again: halved, divided, compared.
        out[12 * n + i] = (a + b) >> 1;
        out[13 * n + i] = (a * b) / 7;
        out[14 * n + i] = if a - b < 0 { 1 } else { 0 };
    }
}

fn i8_ops_host(x: &[i8], out: &mut [i8]) {
    let n = x.len();
    for i in 0..n {
        let a = x[i];
        let b = x[(i * 7 + 3) % n];
        let s = (i % 11) as u32;
        out[i] = a.wrapping_add(b);
        out[n + i] = a.wrapping_sub(b);
        out[2 * n + i] = a.wrapping_mul(b);
        out[3 * n + i] = a.wrapping_neg();
        out[4 * n + i] = !a;
        out[5 * n + i] = a.wrapping_shl(s);
        out[6 * n + i] = a.wrapping_shr(s);
        out[7 * n + i] = if b != 0 { a.wrapping_div(b) } else { 0 };
        out[8 * n + i] = if b != 0 { a.wrapping_rem(b) } else { 0 };
        out[9 * n + i] = a.wrapping_abs();
        out[10 * n + i] = a ^ b | (a & 0x0f);
        let mut acc: i8 = a;
        for _ in 0..3 {
            acc = acc.wrapping_mul(3).wrapping_add(1);
        }
        out[11 * n + i] = acc;
        out[12 * n + i] = a.wrapping_add(b) >> 1;
        out[13 * n + i] = a.wrapping_mul(b) / 7;
        out[14 * n + i] = if a.wrapping_sub(b) < 0 { 1 } else { 0 };
    }
}

#[test]
fn i8_arithmetic_wraps_as_rust_does() {
    let x = all_i8();
    let mut want = vec![0i8; x.len() * I8_OPS];
    i8_ops_host(&x, &mut want);
    check("i8_ops", &x, &want, |s, x, out| i8_ops::launch(s, grid(x.len()), x, out).expect("launch"));
}

#[relok::kernel]
fn u16_ops(x: &[u16], out: &mut [u16]) {
    let i = relok::global_id_x();
    let n = x.len();
    if i < n {
        let a = x[i];
        let b = x[(i * 5 + 1) % n];
        out[i] = a + b;
        out[n + i] = a - b;
        out[2 * n + i] = a * b;
        out[3 * n + i] = !a;
        out[4 * n + i] = a << (i % 19);
        out[5 * n + i] = a.rotate_left(i as u32);
        out[6 * n + i] = a.swap_bytes();
        out[7 * n + i] = a.saturating_add(b);
        out[8 * n + i] = a.saturating_sub(b);
        out[9 * n + i] = a.checked_mul(b).unwrap_or(7);
        out[10 * n + i] = a.pow(3);
        out[11 * n + i] = a.reverse_bits();
    }
}

fn u16_ops_host(x: &[u16], out: &mut [u16]) {
    let n = x.len();
    for i in 0..n {
        let a = x[i];
        let b = x[(i * 5 + 1) % n];
        out[i] = a.wrapping_add(b);
        out[n + i] = a.wrapping_sub(b);
        out[2 * n + i] = a.wrapping_mul(b);
        out[3 * n + i] = !a;
        out[4 * n + i] = a.wrapping_shl((i % 19) as u32);
        out[5 * n + i] = a.rotate_left(i as u32);
        out[6 * n + i] = a.swap_bytes();
        out[7 * n + i] = a.saturating_add(b);
        out[8 * n + i] = a.saturating_sub(b);
        out[9 * n + i] = a.checked_mul(b).unwrap_or(7);
        out[10 * n + i] = a.wrapping_pow(3);
        out[11 * n + i] = a.reverse_bits();
    }
}

fn edge_u16() -> Vec<u16> {
    let mut v: Vec<u16> = vec![0, 1, 2, 3, 255, 256, 0x7fff, 0x8000, 0xfffe, 0xffff, 1000, 12345];
    v.extend((0..100u32).map(|k| (k.wrapping_mul(2_654_435_761) >> 16) as u16));
    v
}

#[test]
fn u16_arithmetic_and_methods_match_rust() {
    let x = edge_u16();
    let mut want = vec![0u16; x.len() * 12];
    u16_ops_host(&x, &mut want);
    check("u16_ops", &x, &want, |s, x, out| u16_ops::launch(s, grid(x.len()), x, out).expect("launch"));
}

/// The width-dependent bit methods, counted in a `u32`.
#[relok::kernel]
fn counts(x: &[i8], out: &mut [u32]) {
    let i = relok::global_id_x();
    let n = x.len();
    if i < n {
        let a = x[i];
        let u = a as u8;
        out[i] = a.count_ones();
        out[n + i] = a.leading_zeros();
        out[2 * n + i] = a.trailing_zeros();
        out[3 * n + i] = u.leading_zeros();
        out[4 * n + i] = u.trailing_ones();
        out[5 * n + i] = a.rotate_right(3) as u8 as u32;
        out[6 * n + i] = a.saturating_mul(a) as u32;
        out[7 * n + i] = a.checked_add(100).unwrap_or(i8::MIN) as u32;
        out[8 * n + i] = (a as i16).checked_neg().unwrap_or(0) as u16 as u32;
        out[9 * n + i] = a.signum() as u32;
    }
}

fn counts_host(x: &[i8], out: &mut [u32]) {
    let n = x.len();
    for i in 0..n {
        let a = x[i];
        let u = a as u8;
        out[i] = a.count_ones();
        out[n + i] = a.leading_zeros();
        out[2 * n + i] = a.trailing_zeros();
        out[3 * n + i] = u.leading_zeros();
        out[4 * n + i] = u.trailing_ones();
        out[5 * n + i] = a.rotate_right(3) as u8 as u32;
        out[6 * n + i] = a.saturating_mul(a) as u32;
        out[7 * n + i] = a.checked_add(100).unwrap_or(i8::MIN) as u32;
        out[8 * n + i] = (a as i16).checked_neg().unwrap_or(0) as u16 as u32;
        out[9 * n + i] = a.signum() as u32;
    }
}

#[test]
fn width_dependent_methods_count_the_types_own_bits() {
    let x = all_i8();
    let mut want = vec![0u32; x.len() * 10];
    counts_host(&x, &mut want);
    check("counts", &x, &want, |s, x, out| counts::launch(s, grid(x.len()), x, out).expect("launch"));
}

// 3. Casts, to and from every small type.

#[relok::kernel]
fn casts(x: &[f32], out: &mut [i32]) {
    let i = relok::global_id_x();
    let n = x.len();
    if i < n {
        let f = x[i];
        let w = (f * 1000.0) as i32;
        out[i] = f as u8 as i32;
        out[n + i] = f as i8 as i32;
        out[2 * n + i] = f as u16 as i32;
        out[3 * n + i] = f as i16 as i32;
        out[4 * n + i] = w as u8 as i32;
        out[5 * n + i] = w as i8 as i32;
        out[6 * n + i] = (w as u8 as i8) as i32;
        out[7 * n + i] = (w as i8 as u16) as i32;
        out[8 * n + i] = (w as i16 as u8 as u16) as i32;
        out[9 * n + i] = (w as i8 as i64 >> 3) as i32;
        out[10 * n + i] = (w as i8 as u32 >> 1) as i32;
        out[11 * n + i] = ((w as u16 as f32) * 0.5) as i32;
        out[12 * n + i] = (f < 0.0) as u8 as i32 + (w as u64 as u8) as i32;
    }
}

fn casts_host(x: &[f32], out: &mut [i32]) {
    let n = x.len();
    for i in 0..n {
        let f = x[i];
        let w = (f * 1000.0) as i32;
        out[i] = f as u8 as i32;
        out[n + i] = f as i8 as i32;
        out[2 * n + i] = f as u16 as i32;
        out[3 * n + i] = f as i16 as i32;
        out[4 * n + i] = w as u8 as i32;
        out[5 * n + i] = w as i8 as i32;
        out[6 * n + i] = (w as u8 as i8) as i32;
        out[7 * n + i] = (w as i8 as u16) as i32;
        out[8 * n + i] = (w as i16 as u8 as u16) as i32;
        out[9 * n + i] = (w as i8 as i64 >> 3) as i32;
        out[10 * n + i] = (w as i8 as u32 >> 1) as i32;
        out[11 * n + i] = ((w as u16 as f32) * 0.5) as i32;
        out[12 * n + i] = (f < 0.0) as u8 as i32 + (w as u64 as u8) as i32;
    }
}

#[test]
fn casts_wrap_integers_and_saturate_floats_as_rust_does() {
    let mut x = vec![
        0.0f32,
        -0.0,
        0.5,
        -0.5,
        1.0,
        -1.0,
        127.0,
        127.9,
        128.0,
        -128.0,
        -129.0,
        255.0,
        255.5,
        256.0,
        32767.0,
        32768.0,
        -32768.0,
        -32769.0,
        65535.0,
        65536.0,
        1e10,
        -1e10,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
    ];
    x.extend((0..64).map(|k| (k as f32 - 32.0) * 9.77));
    let mut want = vec![0i32; x.len() * 13];
    casts_host(&x, &mut want);
    check("casts", &x, &want, |s, x, out| casts::launch(s, grid(x.len()), x, out).expect("launch"));
}

// 4. Small integers in shared and local arrays, host statics, parameters,
// `let mut`s; a `&[bool]` mask.

#[relok::host]
static WEIGHTS: [u8; 4] = [1, 2, 200, 3];

/// A block's bytes reversed through a shared `[u8; 64]`, weighted by a
/// host table, offset by a `u8` parameter, through a local `[i16; 4]`,
/// kept where the mask says.
#[relok::kernel]
fn mixed(x: &[u8], keep: &[bool], out: &mut [u16], bias: u8) {
    let tile = relok::shared::<u8, 64>();
    let t = relok::thread_id_x();
    let i = relok::global_id_x();
    tile[t] = if i < x.len() { x[i] } else { 0 };
    relok::sync_threads();
    let mut v: u8 = tile[63 - t];
    v += bias;
    let mut parts = [0i16; 4];
    for k in 0..4 {
        parts[k] = (v as i16 - 128) * WEIGHTS[k] as i16;
    }
    if i < x.len() && keep[i] {
        out[i] = (parts[0] + parts[1] + parts[2] + parts[3]) as u16;
    }
}

fn mixed_host(x: &[u8], keep: &[bool], out: &mut [u16], bias: u8) {
    for i in 0..x.len() {
        let (block, t) = (i / 64, i % 64);
        let j = block * 64 + (63 - t);
        let v = x.get(j).copied().unwrap_or(0).wrapping_add(bias);
        let mut parts = [0i16; 4];
        for k in 0..4 {
            parts[k] = (v as i16 - 128).wrapping_mul(WEIGHTS[k] as i16);
        }
        if keep[i] {
            out[i] = parts[0].wrapping_add(parts[1]).wrapping_add(parts[2]).wrapping_add(parts[3]) as u16;
        }
    }
}

#[test]
fn small_integers_in_shared_local_and_host_arrays_parameters_and_bool_masks() {
    let _g = serial();
    let n = 150;
    let x: Vec<u8> = (0..n).map(|i| (i * 91 % 256) as u8).collect();
    let keep: Vec<bool> = (0..n).map(|i| i % 3 != 1).collect();
    let mut want = vec![0u16; n];
    mixed_host(&x, &keep, &mut want, 200);
    for ctx in contexts(Strategy::Table) {
        let (xb, kb) = (ctx.upload(&x).expect("upload"), ctx.upload(&keep).expect("upload"));
        let mut out = ctx.zeros::<u16>(n).expect("zeros");
        let s = ctx.stream();
        mixed::launch(&s, Grid::cover(n, 64), &xb, &kb, &mut out, 200).expect("launch");
        s.synchronize().unwrap_or_else(|e| panic!("mixed on {}: {e}", ctx.device_name()));
        assert_eq!(out.download().expect("download"), want, "on {}", ctx.device_name());
    }
}

// 5. Ranges of small integers, stepped by more than the type holds.

#[relok::kernel]
fn ranges(steps: &[u32], out: &mut [u32]) {
    let i = relok::global_id_x();
    if i < steps.len() {
        let k = steps[i] as usize;
        let mut a = 0u32;
        for v in (3u8..200).step_by(k) {
            a = a * 31 + v as u32;
        }
        let mut b = 0u32;
        for v in (-100i8..=120).step_by(k).rev() {
            b = b * 31 + v as u32;
        }
        let mut c = 0u32;
        for v in (0u16..=65535).rev().step_by(k * 97) {
            c = c * 31 + v as u32;
        }
        let mut d = 0u32;
        for v in (0u8..=255).step_by(k) {
            d = d * 31 + v as u32;
        }
        for v in (5u8..250).step_by(k).rev() {
            d = d * 31 + v as u32;
        }
        for v in (-30000i16..30000).step_by(k * 131) {
            d = d * 31 + v as u32;
        }
        out[4 * i] = a;
        out[4 * i + 1] = b;
        out[4 * i + 2] = c;
        out[4 * i + 3] = d;
    }
}

fn ranges_host(steps: &[u32], out: &mut [u32]) {
    for (i, &k) in steps.iter().enumerate() {
        let k = k as usize;
        let a = (3u8..200).step_by(k).fold(0u32, |a, v| a.wrapping_mul(31).wrapping_add(v as u32));
        let b = (-100i8..=120).step_by(k).rev().fold(0u32, |b, v| b.wrapping_mul(31).wrapping_add(v as u32));
        let c = (0u16..=65535).rev().step_by(k * 97).fold(0u32, |c, v| c.wrapping_mul(31).wrapping_add(v as u32));
        let mix = |d: u32, v: u32| d.wrapping_mul(31).wrapping_add(v);
        let d = (0u8..=255).step_by(k).fold(0u32, |d, v| mix(d, v as u32));
        let d = (5u8..250).step_by(k).rev().fold(d, |d, v| mix(d, v as u32));
        let d = (-30000i16..30000).step_by(k * 131).fold(d, |d, v| mix(d, v as u32));
        out[4 * i] = a;
        out[4 * i + 1] = b;
        out[4 * i + 2] = c;
        out[4 * i + 3] = d;
    }
}

#[test]
fn small_integer_ranges_step_as_rust_does_past_the_types_width() {
    let steps = [1u32, 2, 3, 7, 100, 196, 197, 220, 221, 255, 256, 257, 300, 1000, 70_000];
    let mut want = vec![0u32; steps.len() * 4];
    ranges_host(&steps, &mut want);
    check("ranges", &steps, &want, |s, x, out| ranges::launch(s, grid(x.len()), x, out).expect("launch"));
}
