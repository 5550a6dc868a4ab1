//! Rust kernels' control flow and methods compute what the same Rust
//! computes on the host, on every device (the cpu device always; wgpu on
//! lavapipe here; cuda when a GPU is present): each kernel below has its
//! plain-Rust twin, run over the same inputs (edge values included), and
//! the results are compared exactly.
//!
//! - `match` on integers and `bool`s: literals, ranges, `|`, `_`,
//!   bindings, `@`, guards, `const`s; as a statement and as a value;
//! - ranges (`a..=b`, `rev`, `step_by`, in both orders, at the ends of
//!   the types), labelled `break` / `continue`, `break value`;
//! - the strides of a tree, `halving(n)` and `doubling(from, below)` (at
//!   the ends of the types), with `enumerate`, `zip` and `sum`; a slice's
//!   `fill`, and shared arrays declared by one tuple `let`;
//! - `for` over slices and arrays (`iter`, `iter_mut`, `enumerate`, `zip`,
//!   `rev`, `copied`, patterns `&x`, `(i, x)`), `sum`, `product`;
//! - the integer and float methods composed from the IR's operations
//!   (bit counts, rotations, `pow`, `powi`, `wrapping_*`, `saturating_*`,
//!   `checked_*().unwrap_or()`, `clamp`, `signum`, classification,
//!   `to_bits` / `from_bits`) and path forms (`f32::max(a, b)`), over
//!   each type's edge values.

mod common;

use common::{check, contexts, serial};
use relok::{Buffer, Context, DeviceKind, Grid, Strategy};

fn grid(n: usize) -> Grid {
    Grid::cover(n, 64)
}

#[expect(dead_code, reason = "the contexts are made by `check`")]
fn cpu() -> Context {
    Context::builder().device("cpu").no_cache().build().expect("cpu")
}

// 1. `match`.

const SEVEN: i32 = 7;
const LOW: i32 = -20;

mod limits {
    pub const HIGH: i32 = 1000;
}

// Each device function below has its twin in plain Rust, the same text
// (a `macro_rules!` can make both, as tests/rust_places.rs's `twins!`
// does; these stay written out, to read).

#[relok::device]
fn match_dev(v: i32, flag: bool) -> i32 {
    let a = match v {
        0 => 100,
        1 | 3 | 8 => 200,
        -5..=-1 => 300,
        SEVEN => 400,
        LOW..-10 => 500,
        limits::HIGH.. => 600,
        n @ 10..=19 => n * 2,
        n if n % 2 == 0 => n + 1,
        ..=-1000 => 700,
        _ => -1,
    };
    let mut b = -7;
    match v & 3 {
        0 => b += 8,
        1 => {
            b = 2;
            b += 1;
        }
        mut k => {
            k += 10;
            b = k;
        }
    }
    let c = match flag {
        true => 1,
        false => 2,
    };
    let d = match (v as u32) % 5 {
        0 => 9u32,
        x => x,
    };
    (a << 12) ^ (b << 6) ^ (c << 3) ^ d as i32
}

fn match_host(v: i32, flag: bool) -> i32 {
    let a = match v {
        0 => 100,
        1 | 3 | 8 => 200,
        -5..=-1 => 300,
        SEVEN => 400,
        LOW..-10 => 500,
        limits::HIGH.. => 600,
        n @ 10..=19 => n * 2,
        n if n % 2 == 0 => n + 1,
        ..=-1000 => 700,
        _ => -1,
    };
    let mut b = -7;
    match v & 3 {
        0 => b += 8,
        1 => {
            b = 2;
            b += 1;
        }
        mut k => {
            k += 10;
            b = k;
        }
    }
    let c = match flag {
        true => 1,
        false => 2,
    };
    let d = match (v as u32) % 5 {
        0 => 9u32,
        x => x,
    };
    (a << 12) ^ (b << 6) ^ (c << 3) ^ d as i32
}

#[relok::kernel]
fn matches(x: &[i32], out: &mut [i32]) {
    let i = relok::global_id_x();
    if i < x.len() {
        out[i] = match_dev(x[i], i % 3 == 0);
    }
}

#[relok::device]
fn classify(v: i32) -> i32 {
    match v {
        0 => return 5,
        1..=9 => 6,
        _ => 7,
    }
}

#[relok::kernel]
fn matches_divergence(x: &[i32], out: &mut [i32]) {
    let i = relok::global_id_x();
    if i >= x.len() {
        return;
    }
    let r = match x[i] {
        v if v < -100 => {
            out[i] = -1;
            return;
        }
        v => v,
    };
    out[i] = r + classify(x[i]);
}

fn inputs() -> Vec<i32> {
    let mut v: Vec<i32> = (-40..40).collect();
    v.extend([-1000, -1001, i32::MIN, i32::MAX, 999, 1000, 1001, 123_456]);
    v
}

#[test]
fn match_on_integers_and_bools_matches_plain_rust() {
    let xs = inputs();
    let want: Vec<i32> = xs.iter().enumerate().map(|(i, &v)| match_host(v, i % 3 == 0)).collect();
    check("matches", &xs, &want, |s, x, out| matches::launch(s, grid(xs.len()), x, out).expect("launch"));
    let classify = |v: i32| match v {
        0 => 5,
        1..=9 => 6,
        _ => 7,
    };
    let want: Vec<i32> = xs.iter().map(|&v| if v < -100 { -1 } else { v.wrapping_add(classify(v)) }).collect();
    check("matches_divergence", &xs, &want, |s, x, out| {
        matches_divergence::launch(s, grid(xs.len()), x, out).expect("launch")
    });
}

// 2. Ranges, labels, `break value`.

#[relok::device]
fn ranges_dev(v: i32, n: u32) -> i64 {
    let mut h: i64 = 0;
    for j in 0..=n {
        h = (h << 4) ^ (h >> 40) ^ j as i64;
    }
    for j in (0..n).rev() {
        h = (h << 1) ^ (h >> 40) ^ j as i64;
    }
    for j in (v..=v + 3).rev() {
        h = (h << 6) ^ (h >> 40) ^ j as i64;
    }
    for j in (v..v + 11).step_by(n as usize + 1) {
        h = (h << 4) ^ (h >> 40) ^ j as i64;
    }
    for j in (v..v + 11).rev().step_by(3) {
        h = (h << 4) ^ (h >> 40) ^ j as i64;
    }
    for j in (v..v + 11).step_by(3).rev() {
        h = (h << 5) ^ (h >> 40) ^ j as i64;
    }
    for j in (u64::MAX - 10..=u64::MAX).rev().step_by(4) {
        h ^= j as i64;
    }
    for j in (u64::MAX - 10..=u64::MAX).step_by(3) {
        h = (h << 2) ^ j as i64;
    }
    for j in (i32::MAX - 5..=i32::MAX).step_by(2) {
        h = (h << 7) ^ (h >> 40) ^ j as i64;
    }
    for j in (i32::MIN..=i32::MAX).step_by(1 << 31) {
        h = (h << 4) ^ (h >> 40) ^ j as i64;
    }
    for j in (i64::MIN..i64::MIN + 3).rev() {
        h ^= j;
    }
    let mut found = -1i64;
    'outer: for a in 0..8i64 {
        let mut b = 0i64;
        while b < 8 {
            b += 1;
            if (a * b) as i32 % 5 == v % 5 {
                continue 'outer;
            }
            for c in 0..4i64 {
                if a + b + c == v as i64 && c > 1 {
                    found = (a << 8) | (b << 4) | c;
                    break 'outer;
                }
                if c == b {
                    continue;
                }
            }
        }
        h += a;
    }
    let mut k = 0u32;
    let first = loop {
        k += 1;
        if k * k > n {
            break k;
        }
    };
    let mut t = 0u32;
    let second = 'l: loop {
        t += 1;
        for j in 0..10u32 {
            if j * 3 > n + t * 4 {
                break 'l j * 100 + t;
            }
        }
        if t > 2 {
            break 7;
        }
    };
    h = (h << 6) ^ (h >> 40) ^ found;
    (h << 20) ^ ((first as i64) << 10) ^ second as i64
}

fn ranges_host(v: i32, n: u32) -> i64 {
    let mut h: i64 = 0;
    for j in 0..=n {
        h = (h << 4) ^ (h >> 40) ^ j as i64;
    }
    for j in (0..n).rev() {
        h = (h << 1) ^ (h >> 40) ^ j as i64;
    }
    for j in (v..=v + 3).rev() {
        h = (h << 6) ^ (h >> 40) ^ j as i64;
    }
    for j in (v..v + 11).step_by(n as usize + 1) {
        h = (h << 4) ^ (h >> 40) ^ j as i64;
    }
    for j in (v..v + 11).rev().step_by(3) {
        h = (h << 4) ^ (h >> 40) ^ j as i64;
    }
    for j in (v..v + 11).step_by(3).rev() {
        h = (h << 5) ^ (h >> 40) ^ j as i64;
    }
    for j in (u64::MAX - 10..=u64::MAX).rev().step_by(4) {
        h ^= j as i64;
    }
    for j in (u64::MAX - 10..=u64::MAX).step_by(3) {
        h = (h << 2) ^ j as i64;
    }
    for j in (i32::MAX - 5..=i32::MAX).step_by(2) {
        h = (h << 7) ^ (h >> 40) ^ j as i64;
    }
    for j in (i32::MIN..=i32::MAX).step_by(1 << 31) {
        h = (h << 4) ^ (h >> 40) ^ j as i64;
    }
    for j in (i64::MIN..i64::MIN + 3).rev() {
        h ^= j;
    }
    let mut found = -1i64;
    'outer: for a in 0..8i64 {
        let mut b = 0i64;
        while b < 8 {
            b += 1;
            if (a * b) as i32 % 5 == v % 5 {
                continue 'outer;
            }
            for c in 0..4i64 {
                if a + b + c == v as i64 && c > 1 {
                    found = (a << 8) | (b << 4) | c;
                    break 'outer;
                }
                if c == b {
                    continue;
                }
            }
        }
        h += a;
    }
    let mut k = 0u32;
    let first = loop {
        k += 1;
        if k * k > n {
            break k;
        }
    };
    let mut t = 0u32;
    let second = 'l: loop {
        t += 1;
        for j in 0..10u32 {
            if j * 3 > n + t * 4 {
                break 'l j * 100 + t;
            }
        }
        if t > 2 {
            break 7;
        }
    };
    h = (h << 6) ^ (h >> 40) ^ found;
    (h << 20) ^ ((first as i64) << 10) ^ second as i64
}

#[relok::kernel]
fn ranges(x: &[i32], out: &mut [i64]) {
    let i = relok::global_id_x();
    if i < x.len() {
        out[i] = ranges_dev(x[i], (i % 9) as u32);
    }
}

#[test]
fn ranges_labels_and_loop_values_match_plain_rust() {
    let xs: Vec<i32> = (-12..24).collect();
    let want: Vec<i64> = xs.iter().enumerate().map(|(i, &v)| ranges_host(v, (i % 9) as u32)).collect();
    check("ranges", &xs, &want, |s, x, out| ranges::launch(s, grid(xs.len()), x, out).expect("launch"));
}

// 2b. `halving`, `doubling`, `fill`, shared arrays in a tuple `let`.

/// What `halving(n)` gives in a kernel, in plain Rust.
fn halving_host<T: Copy + PartialEq + From<u8> + std::ops::Shr<u32, Output = T>>(n: T) -> impl Iterator<Item = T> {
    std::iter::successors(Some(n), |&s| Some(s >> 1)).take_while(move |&s| s != T::from(0))
}

/// What `doubling(from, below)` gives in a kernel, in plain Rust (never
/// past the type's end: `checked_mul`).
fn doubling_host(from: u64, below: u64, max: u64) -> impl Iterator<Item = u64> {
    assert!(from != 0);
    std::iter::successors(Some(from), move |&s| s.checked_mul(2).filter(|&d| d <= max)).take_while(move |&s| s < below)
}

#[relok::device]
fn strides_dev(v: u32, n: u64) -> u64 {
    let mut h = 0u64;
    for s in halving(v) {
        h = (h << 3) ^ (h >> 50) ^ s as u64;
    }
    for s in halving(n) {
        h = (h << 1) ^ (h >> 50) ^ s;
    }
    for s in doubling(1, v) {
        h = (h << 2) ^ (h >> 50) ^ s as u64;
    }
    for s in doubling(v / 7 + 1, u32::MAX) {
        h = (h << 2) ^ (h >> 50) ^ s as u64;
    }
    for (i, s) in doubling(3u8, v as u8).enumerate() {
        h = (h << 4) ^ (h >> 50) ^ (s as u64 * i as u64);
    }
    for s in doubling(1u16, u16::MAX) {
        h ^= s as u64;
    }
    for s in doubling(n / 3 + 1, n) {
        h = (h << 1) ^ (h >> 50) ^ s;
    }
    for (a, b) in halving(v as usize).zip(doubling(1, 1000)) {
        h = (h << 5) ^ (h >> 50) ^ (a * b) as u64;
    }
    let s: u32 = halving(v).sum();
    (h << 8) ^ s as u64
}

fn strides_host(v: u32, n: u64) -> u64 {
    let mut h = 0u64;
    for s in halving_host(v) {
        h = (h << 3) ^ (h >> 50) ^ s as u64;
    }
    for s in halving_host(n) {
        h = (h << 1) ^ (h >> 50) ^ s;
    }
    for s in doubling_host(1, v.into(), u32::MAX.into()) {
        h = (h << 2) ^ (h >> 50) ^ s;
    }
    for s in doubling_host((v / 7 + 1).into(), u32::MAX.into(), u32::MAX.into()) {
        h = (h << 2) ^ (h >> 50) ^ s;
    }
    for (i, s) in doubling_host(3, (v as u8).into(), u8::MAX.into()).enumerate() {
        h = (h << 4) ^ (h >> 50) ^ (s * i as u64);
    }
    for s in doubling_host(1, u16::MAX.into(), u16::MAX.into()) {
        h ^= s;
    }
    for s in doubling_host(n / 3 + 1, n, u64::MAX) {
        h = (h << 1) ^ (h >> 50) ^ s;
    }
    for (a, b) in halving_host(v as usize).zip(doubling_host(1, 1000, u32::MAX.into())) {
        h = (h << 5) ^ (h >> 50) ^ (a as u64 * b);
    }
    let s: u32 = halving_host(v).sum();
    (h << 8) ^ s as u64
}

#[relok::kernel]
fn strides(x: &[u32], out: &mut [u64]) {
    let i = relok::global_id_x();
    if i < x.len() {
        let n = (x[i] as u64) << (i % 40);
        out[i] = strides_dev(x[i], n ^ (u64::MAX * (i % 3 == 0) as u64));
    }
}

#[test]
fn halving_and_doubling_match_plain_rust_at_the_ends_of_the_types() {
    let mut xs: Vec<u32> = (0..40).map(|k| k * k * 37 + k).collect();
    xs.extend([u32::MAX, u32::MAX - 1, 1 << 31, (1 << 31) + 1, 255, 256, 129, 128, 127, 1, 2]);
    let want: Vec<u64> = xs
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let n = u64::from(v) << (i % 40);
            strides_host(v, n ^ (u64::MAX * u64::from(i % 3 == 0)))
        })
        .collect();
    check("strides", &xs, &want, |s, x, out| strides::launch(s, grid(xs.len()), x, out).expect("launch"));
}

/// A block's tree reduction and scan as the examples write them: shared
/// arrays declared by one `let`, strides by `halving` and `doubling`, the
/// rest of a row by `fill`.
#[relok::kernel]
fn block_sums(x: &[u32], out: &mut [u32]) {
    let (sum, scan) = (shared::<u32, 64>(), shared::<u32, 64>());
    let (t, i) = (relok::thread_id_x(), relok::global_id_x());
    sum[t] = x[i];
    scan[t] = x[i];
    sync_threads();
    for stride in halving(relok::block_dim_x() >> 1) {
        if t < stride {
            sum[t] += sum[t + stride];
        }
        sync_threads();
    }
    for offset in doubling(1, relok::block_dim_x()) {
        let add = if t >= offset { scan[t - offset] } else { 0 };
        sync_threads();
        scan[t] += add;
        sync_threads();
    }
    let row = 4 * i;
    out[row..row + 3].fill(scan[t]);
    out[row + 3] = sum[0];
}

#[test]
fn tree_strides_fill_and_tuple_shared_arrays_match_plain_rust() {
    let xs: Vec<u32> = (0..192u32).map(|k| k * 2654435761 % 1000).collect();
    let mut want = vec![0u32; 4 * xs.len()];
    for (b, block) in xs.chunks(64).enumerate() {
        let total: u32 = block.iter().sum();
        let mut run = 0;
        for (t, &v) in block.iter().enumerate() {
            run += v;
            want[4 * (64 * b + t)..][..3].fill(run);
            want[4 * (64 * b + t) + 3] = total;
        }
    }
    let _g = serial();
    for ctx in contexts(Strategy::Table) {
        let x = ctx.upload(&xs).expect("upload");
        let mut out = ctx.zeros::<u32>(want.len()).expect("zeros");
        let s = ctx.stream();
        block_sums::launch(&s, Grid::new(3, 64), &x, &mut out).expect("launch");
        s.synchronize().unwrap_or_else(|e| panic!("block_sums on {}: {e}", ctx.device_name()));
        assert_eq!(out.download().expect("download"), want, "{}", ctx.device_name());
    }
}

// 3. Slices and arrays as iterators; `sum`, `product`.

#[relok::device]
fn slices_dev(a: &[f32], b: &[u32], out: &mut [f32]) -> f32 {
    let mut h = 0.0f32;
    for x in a.iter() {
        h = h * 0.5 + *x;
    }
    for (i, x) in a.iter().enumerate() {
        h += x * i as f32;
    }
    for (x, y) in a.iter().zip(b.iter()) {
        h -= *x * *y as f32;
    }
    for (&x, j) in a.iter().rev().zip(3..7u64) {
        h += x + j as f32;
    }
    for (i, (x, &y)) in a.iter().zip(b).enumerate() {
        if y % 3 == 0 {
            continue;
        }
        h += (i as f32) * x;
    }
    for x in b.iter().copied().rev() {
        h = h * 0.25 + x as f32;
    }
    let mut w = [1.5f32, -2.0, 0.25];
    for v in w.iter_mut() {
        *v *= h;
        *v += 1.0;
    }
    for &mut v in w.iter_mut() {
        h += v;
    }
    for v in w {
        h -= v * 0.5;
    }
    for (o, x) in out.iter_mut().zip(a) {
        *o = x.abs() + h;
    }
    let s: f32 = a.iter().sum();
    let p = b.iter().product::<u32>();
    h + s + w.iter().sum::<f32>() + p as f32 + b.iter().sum::<u32>() as f32
}

fn slices_host(a: &[f32], b: &[u32], out: &mut [f32]) -> f32 {
    let mut h = 0.0f32;
    for x in a.iter() {
        h = h * 0.5 + *x;
    }
    for (i, x) in a.iter().enumerate() {
        h += x * i as f32;
    }
    for (x, y) in a.iter().zip(b.iter()) {
        h -= *x * *y as f32;
    }
    for (&x, j) in a.iter().rev().zip(3..7u64) {
        h += x + j as f32;
    }
    for (i, (x, &y)) in a.iter().zip(b).enumerate() {
        if y % 3 == 0 {
            continue;
        }
        h += (i as f32) * x;
    }
    for x in b.iter().copied().rev() {
        h = h * 0.25 + x as f32;
    }
    let mut w = [1.5f32, -2.0, 0.25];
    for v in w.iter_mut() {
        *v *= h;
        *v += 1.0;
    }
    for &mut v in w.iter_mut() {
        h += v;
    }
    for v in w {
        h -= v * 0.5;
    }
    for (o, x) in out.iter_mut().zip(a) {
        *o = x.abs() + h;
    }
    let s: f32 = a.iter().sum();
    let p = b.iter().product::<u32>();
    h + s + w.iter().sum::<f32>() + p as f32 + b.iter().sum::<u32>() as f32
}

#[relok::kernel]
fn slices(a: &[f32], b: &[u32], e: &[f32], out: &mut [f32], r: &mut [f32]) {
    if relok::global_id_x() == 0 {
        r[0] = slices_dev(a, b, out);
        r[1] = e.iter().sum();
    }
}

#[test]
fn slices_and_arrays_iterate_as_plain_rust() {
    let _g = serial();
    let cases = [
        (vec![1.5f32, -2.0, 3.25, 0.125, 7.0], vec![3u32, 1, 4, 1, 5, 9, 2]),
        (vec![0.5f32], vec![2u32, 6]),
        (vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], vec![7u32, 8]),
    ];
    let empty = [0.0f32; 0].iter().sum::<f32>();
    for ctx in contexts(Strategy::Table) {
        for (a, b) in &cases {
            let mut out_want = vec![0.0f32; 6];
            let want = slices_host(a, b, &mut out_want);
            let ab = ctx.upload(a).expect("upload");
            let bb = ctx.upload(b).expect("upload");
            let mut out = ctx.zeros::<f32>(6).expect("zeros");
            let mut r = ctx.zeros::<f32>(2).expect("zeros");
            let e = ctx.zeros::<f32>(0).expect("zeros");
            let s = ctx.stream();
            let t = std::time::Instant::now();
            slices::launch(&s, Grid::new(1, 1), &ab, &bb, &e, &mut out, &mut r).expect("launch");
            s.synchronize().unwrap_or_else(|e| panic!("{}: {e}", ctx.device_name()));
            common::note(&format!("{}: {:?}", ctx.device_name(), t.elapsed()));
            let r = r.download().expect("download");
            assert_eq!(r[0].to_bits(), want.to_bits(), "{}: {} vs {want}", ctx.device_name(), r[0]);
            assert_eq!(r[1].to_bits(), empty.to_bits(), "{}: the empty sum is Rust's ({empty:?})", ctx.device_name());
            let out = out.download().expect("download");
            assert_eq!(out, out_want, "{}", ctx.device_name());
        }
    }
}

// 4. Integer and float methods (and their path forms).

#[relok::kernel]
fn int_methods_i32(x: &[i32], y: &[i32], out: &mut [i32]) {
    let i = relok::global_id_x();
    if i < x.len() && i < y.len() {
        let (a, b) = (x[i], y[i]);
        let n = (b as u32) % 70;
        let r = [
            a.count_ones() as i32,
            a.count_zeros() as i32,
            a.leading_zeros() as i32,
            a.trailing_zeros() as i32,
            a.leading_ones() as i32,
            a.trailing_ones() as i32,
            a.rotate_left(n),
            a.rotate_right(n),
            a.swap_bytes(),
            a.reverse_bits(),
            a.wrapping_pow(n % 40),
            (a % 7).pow(n % 5),
            a.wrapping_add(b),
            a.wrapping_sub(b),
            a.wrapping_mul(b),
            a.wrapping_neg(),
            a.wrapping_abs(),
            a.wrapping_shl(n),
            a.wrapping_shr(n),
            a.saturating_add(b),
            a.saturating_sub(b),
            a.saturating_mul(b),
            a.checked_add(b).unwrap_or(-7),
            a.checked_sub(b).unwrap_or(-7),
            a.checked_mul(b).unwrap_or(-7),
            a.checked_div(b).unwrap_or(-7),
            a.checked_rem(b).unwrap_or(-7),
            a.checked_neg().unwrap_or(-7),
            a.checked_shl(n).unwrap_or(-7),
            a.checked_shr(n).unwrap_or(-7),
            a.signum(),
            a.is_positive() as i32,
            a.is_negative() as i32,
            a.clamp(-100, 100),
            i32::min(a, b),
            i32::max(a, b),
            i32::count_ones(a) as i32,
            i32::checked_add(a, b).unwrap_or(0),
            i32::rotate_left(a, 3),
        ];
        for (k, v) in r.iter().enumerate() {
            out[i * r.len() + k] = *v;
        }
    }
}

fn int_methods_i32_host(_: usize, a: i32, b: i32) -> Vec<i32> {
    {
        let n = (b as u32) % 70;
        let r = [
            a.count_ones() as i32,
            a.count_zeros() as i32,
            a.leading_zeros() as i32,
            a.trailing_zeros() as i32,
            a.leading_ones() as i32,
            a.trailing_ones() as i32,
            a.rotate_left(n),
            a.rotate_right(n),
            a.swap_bytes(),
            a.reverse_bits(),
            a.wrapping_pow(n % 40),
            (a % 7).pow(n % 5),
            a.wrapping_add(b),
            a.wrapping_sub(b),
            a.wrapping_mul(b),
            a.wrapping_neg(),
            a.wrapping_abs(),
            a.wrapping_shl(n),
            a.wrapping_shr(n),
            a.saturating_add(b),
            a.saturating_sub(b),
            a.saturating_mul(b),
            a.checked_add(b).unwrap_or(-7),
            a.checked_sub(b).unwrap_or(-7),
            a.checked_mul(b).unwrap_or(-7),
            a.checked_div(b).unwrap_or(-7),
            a.checked_rem(b).unwrap_or(-7),
            a.checked_neg().unwrap_or(-7),
            a.checked_shl(n).unwrap_or(-7),
            a.checked_shr(n).unwrap_or(-7),
            a.signum(),
            a.is_positive() as i32,
            a.is_negative() as i32,
            a.clamp(-100, 100),
            i32::min(a, b),
            i32::max(a, b),
            i32::count_ones(a) as i32,
            i32::checked_add(a, b).unwrap_or(0),
            i32::rotate_left(a, 3),
        ];
        r.to_vec()
    }
}

#[relok::kernel]
fn int_methods_u64(x: &[u64], y: &[u64], out: &mut [u64]) {
    let i = relok::global_id_x();
    if i < x.len() && i < y.len() {
        let (a, b) = (x[i], y[i]);
        let n = (b as u32) % 140;
        let r = [
            a.count_ones() as u64,
            a.count_zeros() as u64,
            a.leading_zeros() as u64,
            a.trailing_zeros() as u64,
            a.leading_ones() as u64,
            a.trailing_ones() as u64,
            a.rotate_left(n),
            a.rotate_right(n),
            a.swap_bytes(),
            a.reverse_bits(),
            a.wrapping_pow(n % 70),
            (a % 9).pow(n % 6),
            a.wrapping_add(b),
            a.wrapping_sub(b),
            a.wrapping_mul(b),
            a.wrapping_neg(),
            a.wrapping_shl(n),
            a.wrapping_shr(n),
            a.saturating_add(b),
            a.saturating_sub(b),
            a.saturating_mul(b),
            a.checked_add(b).unwrap_or(7),
            a.checked_sub(b).unwrap_or(7),
            a.checked_mul(b).unwrap_or(7),
            a.checked_div(b).unwrap_or(7),
            a.checked_rem(b).unwrap_or(7),
            a.checked_neg().unwrap_or(7),
            a.checked_shl(n).unwrap_or(7),
            a.checked_shr(n).unwrap_or(7),
            a.clamp(100, 1 << 40),
            u64::min(a, b),
            u64::max(a, b),
            u64::leading_zeros(a) as u64,
            u64::saturating_sub(a, 5),
        ];
        for (k, v) in r.iter().enumerate() {
            out[i * r.len() + k] = *v;
        }
    }
}

fn int_methods_u64_host(_: usize, a: u64, b: u64) -> Vec<u64> {
    {
        let n = (b as u32) % 140;
        let r = [
            a.count_ones() as u64,
            a.count_zeros() as u64,
            a.leading_zeros() as u64,
            a.trailing_zeros() as u64,
            a.leading_ones() as u64,
            a.trailing_ones() as u64,
            a.rotate_left(n),
            a.rotate_right(n),
            a.swap_bytes(),
            a.reverse_bits(),
            a.wrapping_pow(n % 70),
            (a % 9).pow(n % 6),
            a.wrapping_add(b),
            a.wrapping_sub(b),
            a.wrapping_mul(b),
            a.wrapping_neg(),
            a.wrapping_shl(n),
            a.wrapping_shr(n),
            a.saturating_add(b),
            a.saturating_sub(b),
            a.saturating_mul(b),
            a.checked_add(b).unwrap_or(7),
            a.checked_sub(b).unwrap_or(7),
            a.checked_mul(b).unwrap_or(7),
            a.checked_div(b).unwrap_or(7),
            a.checked_rem(b).unwrap_or(7),
            a.checked_neg().unwrap_or(7),
            a.checked_shl(n).unwrap_or(7),
            a.checked_shr(n).unwrap_or(7),
            a.clamp(100, 1 << 40),
            u64::min(a, b),
            u64::max(a, b),
            u64::leading_zeros(a) as u64,
            u64::saturating_sub(a, 5),
        ];
        r.to_vec()
    }
}

#[relok::kernel]
fn float_methods_f32(x: &[f32], y: &[f32], out: &mut [u32]) {
    let i = relok::global_id_x();
    if i < x.len() && i < y.len() {
        let (a, b) = (x[i], y[i]);
        let n = (i % 23) as i32 - 11;
        let r = [
            a.is_finite() as u32,
            a.is_infinite() as u32,
            a.is_nan() as u32,
            a.is_sign_negative() as u32,
            a.is_sign_positive() as u32,
            a.signum().to_bits(),
            a.powi(n).to_bits(),
            a.powi(2).to_bits(),
            f32::powi(a, 3).to_bits(),
            a.clamp(-1.5, 2.0).to_bits(),
            // Either zero may be the max (min) of +0.0 and -0.0, in Rust.
            (f32::max(a, b) + 0.0).to_bits(),
            (f32::min(a, b) + 0.0).to_bits(),
            f32::abs(a).to_bits(),
            f32::sqrt(a).to_bits(),
            f32::from_bits(a.to_bits() ^ 1).to_bits(),
            f32::from_bits(0x7f80_0000 | b.to_bits()).is_nan() as u32,
        ];
        for (k, v) in r.iter().enumerate() {
            out[i * r.len() + k] = *v;
        }
    }
}

fn float_methods_f32_host(i: usize, a: f32, b: f32) -> Vec<u32> {
    {
        let n = (i % 23) as i32 - 11;
        let r = [
            a.is_finite() as u32,
            a.is_infinite() as u32,
            a.is_nan() as u32,
            a.is_sign_negative() as u32,
            a.is_sign_positive() as u32,
            a.signum().to_bits(),
            a.powi(n).to_bits(),
            a.powi(2).to_bits(),
            f32::powi(a, 3).to_bits(),
            a.clamp(-1.5, 2.0).to_bits(),
            // Either zero may be the max (min) of +0.0 and -0.0, in Rust.
            (f32::max(a, b) + 0.0).to_bits(),
            (f32::min(a, b) + 0.0).to_bits(),
            f32::abs(a).to_bits(),
            f32::sqrt(a).to_bits(),
            f32::from_bits(a.to_bits() ^ 1).to_bits(),
            f32::from_bits(0x7f80_0000 | b.to_bits()).is_nan() as u32,
        ];
        r.to_vec()
    }
}

#[relok::kernel]
fn int_methods_i64(x: &[i64], y: &[i64], out: &mut [i64]) {
    let i = relok::global_id_x();
    if i < x.len() && i < y.len() {
        let (a, b) = (x[i], y[i]);
        let n = (b as u32) % 140;
        let r = [
            a.count_ones() as i64,
            a.count_zeros() as i64,
            a.leading_zeros() as i64,
            a.trailing_zeros() as i64,
            a.leading_ones() as i64,
            a.trailing_ones() as i64,
            a.rotate_left(n),
            a.rotate_right(n),
            a.swap_bytes(),
            a.reverse_bits(),
            a.wrapping_pow(n % 70),
            (a % 7).pow(n % 5),
            a.wrapping_add(b),
            a.wrapping_sub(b),
            a.wrapping_mul(b),
            a.wrapping_neg(),
            a.wrapping_abs(),
            a.wrapping_shl(n),
            a.wrapping_shr(n),
            a.saturating_add(b),
            a.saturating_sub(b),
            a.saturating_mul(b),
            a.checked_add(b).unwrap_or(-7),
            a.checked_sub(b).unwrap_or(-7),
            a.checked_mul(b).unwrap_or(-7),
            a.checked_div(b).unwrap_or(-7),
            a.checked_rem(b).unwrap_or(-7),
            a.checked_neg().unwrap_or(-7),
            a.checked_shl(n).unwrap_or(-7),
            a.checked_shr(n).unwrap_or(-7),
            a.signum(),
            a.is_positive() as i64,
            a.is_negative() as i64,
            a.clamp(-100, 100),
            i64::min(a, b),
            i64::max(a, b),
            i64::count_ones(a) as i64,
            i64::checked_add(a, b).unwrap_or(0),
            i64::rotate_left(a, 3),
        ];
        for (k, v) in r.iter().enumerate() {
            out[i * r.len() + k] = *v;
        }
    }
}

fn int_methods_i64_host(_: usize, a: i64, b: i64) -> Vec<i64> {
    {
        let n = (b as u32) % 140;
        let r = [
            a.count_ones() as i64,
            a.count_zeros() as i64,
            a.leading_zeros() as i64,
            a.trailing_zeros() as i64,
            a.leading_ones() as i64,
            a.trailing_ones() as i64,
            a.rotate_left(n),
            a.rotate_right(n),
            a.swap_bytes(),
            a.reverse_bits(),
            a.wrapping_pow(n % 70),
            (a % 7).pow(n % 5),
            a.wrapping_add(b),
            a.wrapping_sub(b),
            a.wrapping_mul(b),
            a.wrapping_neg(),
            a.wrapping_abs(),
            a.wrapping_shl(n),
            a.wrapping_shr(n),
            a.saturating_add(b),
            a.saturating_sub(b),
            a.saturating_mul(b),
            a.checked_add(b).unwrap_or(-7),
            a.checked_sub(b).unwrap_or(-7),
            a.checked_mul(b).unwrap_or(-7),
            a.checked_div(b).unwrap_or(-7),
            a.checked_rem(b).unwrap_or(-7),
            a.checked_neg().unwrap_or(-7),
            a.checked_shl(n).unwrap_or(-7),
            a.checked_shr(n).unwrap_or(-7),
            a.signum(),
            a.is_positive() as i64,
            a.is_negative() as i64,
            a.clamp(-100, 100),
            i64::min(a, b),
            i64::max(a, b),
            i64::count_ones(a) as i64,
            i64::checked_add(a, b).unwrap_or(0),
            i64::rotate_left(a, 3),
        ];
        r.to_vec()
    }
}

#[relok::kernel]
fn float_methods_f64(x: &[f64], y: &[f64], out: &mut [u64]) {
    let i = relok::global_id_x();
    if i < x.len() && i < y.len() {
        let (a, b) = (x[i], y[i]);
        let n = (i % 23) as i32 - 11;
        let r = [
            a.is_finite() as u64,
            a.is_infinite() as u64,
            a.is_nan() as u64,
            a.is_sign_negative() as u64,
            a.is_sign_positive() as u64,
            a.signum().to_bits(),
            a.powi(n).to_bits(),
            a.powi(2).to_bits(),
            f64::powi(a, 3).to_bits(),
            a.clamp(-1.5, 2.0).to_bits(),
            // Either zero may be the max (min) of +0.0 and -0.0, in Rust.
            (f64::max(a, b) + 0.0).to_bits(),
            (f64::min(a, b) + 0.0).to_bits(),
            f64::abs(a).to_bits(),
            f64::sqrt(a).to_bits(),
            f64::from_bits(a.to_bits() ^ 1).to_bits(),
            f64::from_bits(0x7ff0_0000_0000_0000 | b.to_bits()).is_nan() as u64,
        ];
        for (k, v) in r.iter().enumerate() {
            out[i * r.len() + k] = *v;
        }
    }
}

fn float_methods_f64_host(i: usize, a: f64, b: f64) -> Vec<u64> {
    {
        let n = (i % 23) as i32 - 11;
        let r = [
            a.is_finite() as u64,
            a.is_infinite() as u64,
            a.is_nan() as u64,
            a.is_sign_negative() as u64,
            a.is_sign_positive() as u64,
            a.signum().to_bits(),
            a.powi(n).to_bits(),
            a.powi(2).to_bits(),
            f64::powi(a, 3).to_bits(),
            a.clamp(-1.5, 2.0).to_bits(),
            // Either zero may be the max (min) of +0.0 and -0.0, in Rust.
            (f64::max(a, b) + 0.0).to_bits(),
            (f64::min(a, b) + 0.0).to_bits(),
            f64::abs(a).to_bits(),
            f64::sqrt(a).to_bits(),
            f64::from_bits(a.to_bits() ^ 1).to_bits(),
            f64::from_bits(0x7ff0_0000_0000_0000 | b.to_bits()).is_nan() as u64,
        ];
        r.to_vec()
    }
}

/// Runs a methods kernel over every pair of `values` and compares each
/// output with `host`'s (`same`: whether two outputs agree).
fn methods<T, U>(
    what: &str,
    values: &[T],
    same: fn(&U, &U, DeviceKind) -> bool,
    host: impl Fn(usize, T, T) -> Vec<U>,
    launch: impl Fn(&relok::Stream, Grid, &Buffer<T>, &Buffer<T>, &mut Buffer<U>),
) where
    T: relok::Element + Copy + std::fmt::Debug,
    U: relok::Element + PartialEq + std::fmt::Debug,
{
    methods_on_wgpu(what, values, same, host, (|x| x, |_, _, _| false), launch);
}

/// What wgpu may also give: the results of inputs flushed by the first,
/// a result `j` that the second accepts ([`methods_on_wgpu`]).
type WgpuLeeway<T, U> = (fn(T) -> T, fn(usize, &U, &U) -> bool);

/// [`methods`], where wgpu may also give what `host` gives for the
/// inputs flushed (`wgpu.0`; docs/wgpu.md: a driver may read a subnormal
/// `f32` operand as zero), or a result `j` that `wgpu.1(j, got, want)`
/// accepts (an `f32` division there is the driver's, within 2.5 ulp).
fn methods_on_wgpu<T, U>(
    what: &str,
    values: &[T],
    same: fn(&U, &U, DeviceKind) -> bool,
    host: impl Fn(usize, T, T) -> Vec<U>,
    wgpu: WgpuLeeway<T, U>,
    launch: impl Fn(&relok::Stream, Grid, &Buffer<T>, &Buffer<T>, &mut Buffer<U>),
) where
    T: relok::Element + Copy + std::fmt::Debug,
    U: relok::Element + PartialEq + std::fmt::Debug,
{
    let _g = serial();
    let pairs: Vec<(T, T)> = values.iter().flat_map(|&a| values.iter().map(move |&b| (a, b))).collect();
    let want: Vec<Vec<U>> = pairs.iter().enumerate().map(|(i, &(a, b))| host(i, a, b)).collect();
    let (flush, close) = wgpu;
    let flushed: Vec<Vec<U>> = pairs.iter().enumerate().map(|(i, &(a, b))| host(i, flush(a), flush(b))).collect();
    let k = want[0].len();
    let xs: Vec<T> = pairs.iter().map(|p| p.0).collect();
    let ys: Vec<T> = pairs.iter().map(|p| p.1).collect();
    for ctx in contexts(Strategy::Table) {
        let x = ctx.upload(&xs).expect("upload");
        let y = ctx.upload(&ys).expect("upload");
        let mut out = ctx.zeros::<U>(pairs.len() * k).expect("zeros");
        let s = ctx.stream();
        launch(&s, grid(pairs.len()), &x, &y, &mut out);
        s.synchronize().unwrap_or_else(|e| panic!("{what} on {}: {e}", ctx.device_name()));
        let got = out.download().expect("download");
        let kind = ctx.device_kind();
        for (i, w) in want.iter().enumerate() {
            for (j, w) in w.iter().enumerate() {
                let g = &got[i * k + j];
                assert!(
                    same(g, w, kind) || (kind == DeviceKind::Wgpu && (same(g, &flushed[i][j], kind) || close(j, g, w))),
                    "{what} on {}: result {j} of ({:?}, {:?}): {g:?}, Rust: {w:?}",
                    ctx.device_name(),
                    pairs[i].0,
                    pairs[i].1
                );
            }
        }
    }
}

#[test]
fn integer_methods_match_plain_rust_at_the_edges() {
    let v32 =
        [0, 1, -1, 2, 3, -3, 7, 100, -100, 12345, -98765, 1 << 20, i32::MAX, i32::MIN, i32::MAX - 1, i32::MIN + 1];
    methods(
        "int_methods_i32",
        &v32,
        |a, b, _| a == b,
        int_methods_i32_host,
        |s, g, x, y, out| int_methods_i32::launch(s, g, x, y, out).expect("launch"),
    );
    let v64 =
        [0, 1, 2, 3, 5, 64, 65, 1000, 1 << 32, (1 << 32) + 7, 0x0123_4567_89ab_cdef, u64::MAX, u64::MAX - 1, 1 << 63];
    methods(
        "int_methods_u64",
        &v64,
        |a, b, _| a == b,
        int_methods_u64_host,
        |s, g, x, y, out| int_methods_u64::launch(s, g, x, y, out).expect("launch"),
    );
    let v64 =
        [0, 1, -1, 3, -3, 100, -100, 1 << 40, -(1 << 40), 0x0123_4567_89ab_cdef, i64::MAX, i64::MIN, i64::MIN + 1];
    methods(
        "int_methods_i64",
        &v64,
        |a, b, _| a == b,
        int_methods_i64_host,
        |s, g, x, y, out| int_methods_i64::launch(s, g, x, y, out).expect("launch"),
    );
}

#[test]
fn float_methods_match_plain_rust_at_the_edges() {
    let v = [
        0.0f32,
        -0.0,
        1.0,
        -1.0,
        1.5,
        -2.25,
        0.5,
        3.0,
        1e-40,
        -1e-40,
        f32::MAX,
        f32::MIN_POSITIVE,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
    ];
    // A NaN's sign and payload are not Rust's to say (nor the IR's): any
    // NaN is the same NaN here. On wgpu the sign of a zero is not promised
    // either (docs/wgpu.md: NVIDIA's Vulkan driver folds `x + 0.0` into
    // `x`, so `-0.0 + 0.0` comes back `-0.0`).
    // On wgpu a subnormal result may also be written as a zero, and a
    // subnormal operand read as one (docs/wgpu.md; NVIDIA's Vulkan driver
    // gave -0.0 for `f32::max(0.0, 1e-40) + 0.0`). Results 0 to 4 and 15
    // are `bool`s, whose 1 is a subnormal's bits: only the others flush.
    let same = |a: &u32, b: &u32, kind: DeviceKind| {
        let (a, b) = (f32::from_bits(*a), f32::from_bits(*b));
        let wgpu = kind == DeviceKind::Wgpu;
        a.to_bits() == b.to_bits()
            || (a.is_nan() && b.is_nan())
            || (wgpu && a == 0.0 && b == 0.0)
            || (wgpu && a == 0.0 && b.is_subnormal() && b.to_bits() & 0x7fff_ffff > 1)
    };
    let ftz = |x: f32| if x.is_subnormal() { 0.0f32.copysign(x) } else { x };
    // Result 6, `a.powi(n)`, divides when `n < 0` (`1 / r`, as Rust):
    // within 3 ulp on wgpu (NVIDIA's Vulkan gave 1.5^-10 one ulp low).
    let division = |j: usize, g: &u32, w: &u32| {
        let (gf, wf) = (f32::from_bits(*g), f32::from_bits(*w));
        j == 6
            && gf.is_finite()
            && wf.is_finite()
            && gf.is_sign_positive() == wf.is_sign_positive()
            && g.abs_diff(*w) <= 3
    };
    methods_on_wgpu("float_methods_f32", &v, same, float_methods_f32_host, (ftz, division), |s, g, x, y, out| {
        float_methods_f32::launch(s, g, x, y, out).expect("launch")
    });
    let v: Vec<f64> = v.iter().map(|&x| f64::from(x)).chain([f64::MAX, 1e-310, f64::MIN_POSITIVE]).collect();
    let same = |a: &u64, b: &u64, kind: DeviceKind| {
        let (a, b) = (f64::from_bits(*a), f64::from_bits(*b));
        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()) || (kind == DeviceKind::Wgpu && a == 0.0 && b == 0.0)
    };
    methods("float_methods_f64", &v, same, float_methods_f64_host, |s, g, x, y, out| {
        float_methods_f64::launch(s, g, x, y, out).expect("launch")
    });
}

// 5. Where Rust panics, the device throws Rust's message.

#[relok::kernel]
fn panics(x: &mut [i32], mode: u32) {
    if relok::global_id_x() == 0 {
        if mode == 0 {
            x[0] = x[1].clamp(5, 1);
        } else if mode == 1 {
            x[0] = (x[0] as f32).clamp(1.0, f32::NAN) as i32;
        } else if mode == 2 {
            for i in (0..4).step_by(mode as usize - 2) {
                x[i] = 1;
            }
        } else if mode == 3 {
            x.swap(1, 7);
        } else if mode == 5 {
            for s in doubling(mode as usize - 5, 8) {
                x[0] = s as i32;
            }
        } else {
            x.swap(0, 2);
        }
    }
}

#[test]
fn clamp_step_by_doubling_and_swap_throw_rusts_messages() {
    let _g = serial();
    let source = include_str!("rust_control.rs");
    // `file:line:col` of `method` in the line holding `needle`.
    let at = |needle: &str, method: &str| {
        let (n, l) = source.lines().enumerate().find(|(_, l)| l.contains(needle)).expect("in this file");
        format!("rust_control.rs:{}:{}", n + 1, l.find(method).expect("on the line") + 1)
    };
    let cases = [
        (0, format!("{}: assertion failed: min <= max", at("x[1].clamp(5, 1)", "clamp"))),
        (1, format!("{}: min > max, or either was NaN", at("clamp(1.0, f32::NAN)", "clamp"))),
        (2, format!("{}: assertion failed: step != 0", at("step_by(mode as usize - 2)", "step_by"))),
        (3, format!("{}: index out of bounds: the len is 3 but the index is 7", at("x.swap(1, 7)", "swap"))),
        (5, format!("{}: assertion failed: from != 0", at("doubling(mode as usize - 5, 8)", "doubling"))),
    ];
    for ctx in contexts(Strategy::Table) {
        for (mode, want) in &cases {
            let mut x = ctx.upload(&[1i32, 2, 3]).expect("upload");
            let s = ctx.stream();
            panics::launch(&s, Grid::new(1, 1), &mut x, *mode).expect("launch");
            let err = s.synchronize().expect_err("throws");
            assert!(err.to_string().ends_with(want.as_str()), "{} mode {mode}: {err}\nwant …{want}", ctx.device_name());
        }
        let mut x = ctx.upload(&[1i32, 2, 3]).expect("upload");
        let s = ctx.stream();
        panics::launch(&s, Grid::new(1, 1), &mut x, 4).expect("launch");
        s.synchronize().expect("runs");
        assert_eq!(x.download().expect("download"), [3, 2, 1], "{}", ctx.device_name());
    }
}

// 6. `let y;` assigned later; `mut` parameters.

#[relok::device]
fn deferred_dev(mut v: i32, flag: bool) -> i32 {
    let y;
    if flag {
        y = v * 2;
    } else if v > 3 {
        y = v - 1;
    } else {
        y = 7;
    }
    let z: i32;
    match v {
        0 => z = 10,
        n if n < 0 => {
            v = -n;
            z = 20;
        }
        _ => z = v,
    }
    let mut w;
    w = 1;
    w += y;
    v += 100;
    y * 1000 + z * 10 + w + v
}

fn deferred_host(mut v: i32, flag: bool) -> i32 {
    let y;
    if flag {
        y = v * 2;
    } else if v > 3 {
        y = v - 1;
    } else {
        y = 7;
    }
    let z: i32;
    match v {
        0 => z = 10,
        n if n < 0 => {
            v = -n;
            z = 20;
        }
        _ => z = v,
    }
    let mut w;
    w = 1;
    w += y;
    v += 100;
    y * 1000 + z * 10 + w + v
}

#[relok::kernel]
fn deferred(x: &[i32], out: &mut [i32], mut k: u32) {
    let i = relok::global_id_x();
    k += 1;
    if i < x.len() {
        out[i] = deferred_dev(x[i], i % 2 == 0) + k as i32;
    }
}

#[test]
fn deferred_initialisation_and_mut_parameters_match_plain_rust() {
    let xs: Vec<i32> = (-10..12).collect();
    let want: Vec<i32> = xs.iter().enumerate().map(|(i, &v)| deferred_host(v, i % 2 == 0) + 5).collect();
    check("deferred", &xs, &want, |s, x, out| deferred::launch(s, grid(xs.len()), x, out, 4).expect("launch"));
}
