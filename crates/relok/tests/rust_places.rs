//! Rust kernels' places and closures compute what the same Rust computes
//! on the host, on every device (the cpu device always; wgpu on lavapipe
//! here; cuda when a GPU is present): each kernel below has its
//! plain-Rust twin, the same text, run over the same inputs, and the
//! results are compared exactly — the panics too (the device's exception
//! message ends with the message the host's Rust panicked with).
//!
//! - 2-D arrays: per-thread (`[[0.0f32; 3]; 3]`, `[[1, 2], [3, 4]]`,
//!   typed, mixed rows), shared (`shared::<[f32; 17], 16>()`), `m[r][c]`
//!   read and written, `m.len()`, `m[r].len()`, rows (`m.iter()`,
//!   `iter_mut()`, `&m[r]`), each index checked against its dimension;
//! - sub-slices (`&a[lo..hi]`, `&a[lo..]`, `&a[..hi]`, `&mut y[..]`),
//!   their `len`, `iter`, indexing, and passing them to device functions,
//!   with Rust's checks of the ends;
//! - closures bound by `let` (by reference and `move`, `FnMut`, calling
//!   each other, capturing slices);
//! - `T::default()`, `T::ZERO`, `T::ONE`, `abs` and the float methods of a
//!   generic `T: relok::Float`.

mod common;

use common::{check, contexts, serial};
use relok::{Buffer, Grid, Strategy};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// What `f` panics with on the host (`None`: it returns).
fn host_panic(f: impl FnOnce()) -> Option<String> {
    let r = catch_unwind(AssertUnwindSafe(f)).err()?;
    r.downcast_ref::<String>().cloned().or_else(|| r.downcast_ref::<&str>().map(|s| (*s).to_owned()))
}

/// `rust_places.rs:line:col` of `needle` (the `nth` on its line) in the
/// line holding `line`.
fn at(line: &str, needle: &str) -> String {
    let src = include_str!("rust_places.rs");
    let (n, l) = src.lines().enumerate().find(|(_, l)| l.contains(line)).expect("in this file");
    format!("rust_places.rs:{}:{}", n + 1, l.find(needle).expect("on the line") + 1)
}

/// Launches `launch` (one thread) with `x` on every device: it throws
/// `want` (the host's panic message, at `loc`), or runs and leaves `x`
/// as `want_x`.
fn check_throw(
    what: &str,
    x: &[u32],
    want: Option<(String, String)>,
    want_x: &[u32],
    launch: impl Fn(&relok::Stream, &mut Buffer<u32>),
) {
    let _g = serial();
    for ctx in contexts(Strategy::Table) {
        let mut buf = ctx.upload(x).expect("upload");
        let s = ctx.stream();
        launch(&s, &mut buf);
        match (&want, s.synchronize()) {
            (Some((message, loc)), Err(e)) => {
                let want = format!("{loc}: {message}");
                assert!(e.to_string().ends_with(&want), "{what} on {}: {e}\nwant …{want}", ctx.device_name());
            }
            (None, Ok(())) => {
                assert_eq!(buf.download().expect("download"), want_x, "{what} on {}", ctx.device_name());
            }
            (want, got) => panic!("{what} on {}: got {got:?}, want {want:?}", ctx.device_name()),
        }
    }
}

// 1. 2-D arrays.
//
// Each device function below has its twin in plain Rust, the same text.

#[relok::device]
fn matrices_dev(x: &[f32], base: usize) -> f32 {
    let mut m = [[0.0f32; 3]; 3];
    for r in 0..3 {
        for c in 0..3 {
            m[r][c] = x[base + r * 3 + c];
        }
    }
    let w = [[1.0f32, 2.0, 0.5], [0.0, -1.0, 3.0], [2.5, 1.0, 1.0]];
    let mut p = [[0.0f32; 3]; 3];
    for r in 0..m.len() {
        for c in 0..m[r].len() {
            for k in 0..3 {
                p[r][c] += m[r][k] * w[k][c];
            }
        }
    }
    let mut s = 0.0f32;
    for row in p.iter() {
        for v in row.iter() {
            s = s * 0.5 + *v;
        }
    }
    let z: [[i32; 2]; 2] = [[1, 2], [3, 4]];
    let mut q = [[7u32; 4], [1, 2, 3, 4], [5; 4]];
    q[1][3] += 10;
    q[2][1] -= 1;
    for row in q.iter_mut() {
        row[0] = row[1] * 2 + row.len() as u32;
    }
    let last = &m[2];
    let tail = &q[1][1..];
    s + (z[1][0] * z[0][1]) as f32
        + (q[0][0] + q[1][3] + q[2][0] + q[1][0]) as f32
        + last.iter().sum::<f32>()
        + tail.iter().sum::<u32>() as f32
        + m[1].iter().copied().sum::<f32>()
}

fn matrices_host(x: &[f32], base: usize) -> f32 {
    let mut m = [[0.0f32; 3]; 3];
    for r in 0..3 {
        for c in 0..3 {
            m[r][c] = x[base + r * 3 + c];
        }
    }
    let w = [[1.0f32, 2.0, 0.5], [0.0, -1.0, 3.0], [2.5, 1.0, 1.0]];
    let mut p = [[0.0f32; 3]; 3];
    for r in 0..m.len() {
        for c in 0..m[r].len() {
            for k in 0..3 {
                p[r][c] += m[r][k] * w[k][c];
            }
        }
    }
    let mut s = 0.0f32;
    for row in p.iter() {
        for v in row.iter() {
            s = s * 0.5 + *v;
        }
    }
    let z: [[i32; 2]; 2] = [[1, 2], [3, 4]];
    let mut q = [[7u32; 4], [1, 2, 3, 4], [5; 4]];
    q[1][3] += 10;
    q[2][1] -= 1;
    for row in q.iter_mut() {
        row[0] = row[1] * 2 + row.len() as u32;
    }
    let last = &m[2];
    let tail = &q[1][1..];
    s + (z[1][0] * z[0][1]) as f32
        + (q[0][0] + q[1][3] + q[2][0] + q[1][0]) as f32
        + last.iter().sum::<f32>()
        + tail.iter().sum::<u32>() as f32
        + m[1].iter().copied().sum::<f32>()
}

#[relok::kernel]
fn matrices(x: &[f32], out: &mut [f32]) {
    let i = global_id_x();
    if i < out.len() {
        out[i] = matrices_dev(x, i * 9);
    }
}

#[test]
fn two_dimensional_arrays_match_plain_rust() {
    let x: Vec<f32> = (0..9 * 40).map(|k| (k as f32 * 0.37).sin() * 10.0).collect();
    let want: Vec<f32> = (0..40).map(|i| matrices_host(&x, i * 9)).collect();
    check("matrices", &x, &want, |s, x, out| matrices::launch(s, Grid::cover(40, 32), x, out).expect("launch"));
}

// Each index is checked against its own dimension, at its own span: an
// index past the row but inside the whole array throws, as in Rust.

#[relok::kernel]
fn grid_oob(x: &mut [u32], r: usize, c: usize) {
    let mut m = [[1u32; 3]; 4];
    m[r][c] = 7; // grid_oob's write
    x[0] = m[1][c] + m[r][0]; // grid_oob's read
}

fn grid_oob_host(x: &mut [u32], r: usize, c: usize) {
    let mut m = [[1u32; 3]; 4];
    m[r][c] = 7; // grid_oob's write
    x[0] = m[1][c] + m[r][0]; // grid_oob's read
}

#[test]
fn each_index_of_a_two_dimensional_array_is_checked_against_its_dimension() {
    for (r, c, loc) in [
        (1, 2, String::new()),
        (3, 0, String::new()),
        (1, 3, at("grid_oob's write", "c] = 7")),
        (4, 0, at("grid_oob's write", "r][c] = 7")),
        (0, 5, at("grid_oob's write", "c] = 7")),
    ] {
        let mut host = vec![0u32];
        let want = host_panic(|| grid_oob_host(&mut host, r, c)).map(|m| (m, loc));
        check_throw(&format!("grid_oob({r}, {c})"), &[0], want, &host, |s, x| {
            grid_oob::launch(s, Grid::new(1, 1), x, r, c).expect("launch")
        });
    }
}

// A shared 2-D tile: `shared::<[T; C], R>()` is `R` rows of `[T; C]`.

const TILE: usize = 16;

#[relok::kernel]
fn transpose(a: &[f32], out: &mut [f32], n: usize) {
    let tile = shared::<[f32; TILE + 1], TILE>();
    let (tx, ty) = (thread_id_x(), thread_id_y());
    let (bx, by) = (block_id_x() * TILE, block_id_y() * TILE);
    if by + ty < n && bx + tx < n {
        tile[ty][tx] = a[(by + ty) * n + bx + tx];
    }
    sync_threads();
    if bx + ty < n && by + tx < n {
        out[(bx + ty) * n + by + tx] = tile[tx][ty] + tile.len() as f32 + tile[0].len() as f32;
    }
}

#[test]
fn a_shared_two_dimensional_tile_transposes_as_plain_rust() {
    let n = 37;
    let a: Vec<f32> = (0..n * n).map(|k| k as f32 * 0.5 - 3.0).collect();
    let want: Vec<f32> = (0..n * n).map(|k| a[(k % n) * n + k / n] + 16.0 + 17.0).collect();
    let blocks = n.div_ceil(TILE) as u32;
    check("transpose", &a, &want, |s, a, out| {
        transpose::launch(s, Grid::new((blocks, blocks), (16, 16)), a, out, n).expect("launch")
    });
}

// 2. Sub-slices.

#[relok::device]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut s = 0.0f32;
    for k in 0..a.len() {
        s += a[k] * b[k];
    }
    s
}

#[relok::device]
fn scale(v: &mut [f32], f: f32) {
    for x in v.iter_mut() {
        *x *= f;
    }
}

#[relok::device]
fn rows_dev(a: &[f32], v: &[f32], n: usize, i: usize, y: &mut [f32]) -> f32 {
    let row = &a[i * n..(i + 1) * n];
    let d = dot(row, &v[..n]);
    let head = &row[..2];
    let rest = &row[2..];
    let all = &a[..];
    let yr = &mut y[i * n..(i + 1) * n];
    for k in 0..yr.len() {
        yr[k] = row[k] * 2.0 + rest.len() as f32;
    }
    scale(yr, 0.5);
    scale(&mut y[i * n + 1..i * n + 3], 3.0);
    let mut t = 0.0f32;
    for (k, x) in a[i * n..].iter().enumerate() {
        if k < 3 {
            t += *x;
        }
    }
    y[i * n] += 1.0;
    let last = &mut y[i * n..];
    last[1] -= 0.25;
    let w = &y[i * n..(i + 1) * n];
    y[i * n + 4] = w[0] + w[1];
    d + head.iter().sum::<f32>() * 10.0 + rest[0] + all.len() as f32 + t + a[i * n..][1] + v[1..3].len() as f32
}

#[expect(clippy::redundant_slicing, reason = "the same text as the kernel's")]
fn rows_host(a: &[f32], v: &[f32], n: usize, i: usize, y: &mut [f32]) -> f32 {
    let row = &a[i * n..(i + 1) * n];
    let d = dot_host(row, &v[..n]);
    let head = &row[..2];
    let rest = &row[2..];
    let all = &a[..];
    let yr = &mut y[i * n..(i + 1) * n];
    for k in 0..yr.len() {
        yr[k] = row[k] * 2.0 + rest.len() as f32;
    }
    scale_host(yr, 0.5);
    scale_host(&mut y[i * n + 1..i * n + 3], 3.0);
    let mut t = 0.0f32;
    for (k, x) in a[i * n..].iter().enumerate() {
        if k < 3 {
            t += *x;
        }
    }
    y[i * n] += 1.0;
    let last = &mut y[i * n..];
    last[1] -= 0.25;
    let w = &y[i * n..(i + 1) * n];
    y[i * n + 4] = w[0] + w[1];
    d + head.iter().sum::<f32>() * 10.0 + rest[0] + all.len() as f32 + t + a[i * n..][1] + v[1..3].len() as f32
}

fn dot_host(a: &[f32], b: &[f32]) -> f32 {
    let mut s = 0.0f32;
    for k in 0..a.len() {
        s += a[k] * b[k];
    }
    s
}

fn scale_host(v: &mut [f32], f: f32) {
    for x in v.iter_mut() {
        *x *= f;
    }
}

#[relok::kernel]
fn rows(a: &[f32], v: &[f32], n: usize, out: &mut [f32], y: &mut [f32]) {
    let i = global_id_x();
    if i < out.len() {
        out[i] = rows_dev(a, v, n, i, y);
    }
}

#[test]
fn sub_slices_match_plain_rust_and_pass_to_device_functions() {
    let (m, n) = (24, 5);
    let a: Vec<f32> = (0..m * n).map(|k| (k as f32 * 0.73).cos() * 4.0).collect();
    let v: Vec<f32> = (0..n).map(|k| k as f32 - 1.5).collect();
    let mut y_host = vec![0.0f32; m * n];
    let want: Vec<f32> = (0..m).map(|i| rows_host(&a, &v, n, i, &mut y_host)).collect();
    let _g = serial();
    for ctx in contexts(Strategy::Table) {
        let (a_d, v_d) = (ctx.upload(&a).expect("upload"), ctx.upload(&v).expect("upload"));
        let mut out = ctx.zeros::<f32>(m).expect("zeros");
        let mut y = ctx.zeros::<f32>(m * n).expect("zeros");
        let s = ctx.stream();
        rows::launch(&s, Grid::cover(m, 8), &a_d, &v_d, n, &mut out, &mut y).expect("launch");
        s.synchronize().unwrap_or_else(|e| panic!("rows on {}: {e}", ctx.device_name()));
        assert_eq!(out.download().expect("download"), want, "rows on {}", ctx.device_name());
        assert_eq!(y.download().expect("download"), y_host, "rows' y on {}", ctx.device_name());
    }
}

// Rust's checks of a sub-slice's ends, in Rust's order, with its messages.

#[relok::kernel]
fn cut(x: &mut [u32], lo: usize, hi: usize, mode: u32) {
    let n = if mode == 0 {
        let s = &x[lo..hi]; // cut's range
        s.len() + s.iter().sum::<u32>() as usize
    } else if mode == 1 {
        x[lo..].len() // cut's start
    } else if mode == 2 {
        let s = &mut x[..hi]; // cut's end
        s[0] = 9;
        s.len()
    } else if mode == 3 {
        let s = &x[lo..=hi]; // cut's inclusive range
        s.len() * 10 + s.iter().sum::<u32>() as usize
    } else if mode == 4 {
        x[..=hi].len() // cut's inclusive end
    } else {
        x[..].len()
    };
    x[0] += n as u32;
}

fn cut_host(x: &mut [u32], lo: usize, hi: usize, mode: u32) {
    let n = if mode == 0 {
        let s = &x[lo..hi]; // cut's range
        s.len() + s.iter().sum::<u32>() as usize
    } else if mode == 1 {
        x[lo..].len() // cut's start
    } else if mode == 2 {
        let s = &mut x[..hi]; // cut's end
        s[0] = 9;
        s.len()
    } else if mode == 3 {
        let s = &x[lo..=hi]; // cut's inclusive range
        s.len() * 10 + s.iter().sum::<u32>() as usize
    } else if mode == 4 {
        x[..=hi].len() // cut's inclusive end
    } else {
        x[..].len()
    };
    x[0] += n as u32;
}

#[test]
fn a_sub_slice_out_of_range_throws_rusts_message() {
    let range = at("cut's range", "lo..hi]");
    let start = at("cut's start", "lo..]");
    let end = at("cut's end", "..hi]");
    let incl = at("cut's inclusive range", "lo..=hi]");
    let incl_end = at("cut's inclusive end", "..=hi]");
    for (lo, hi, mode, loc) in [
        (1, 3, 0, &range),
        (0, 4, 0, &range),
        (4, 4, 0, &range),
        (5, 2, 0, &range),
        (2, 5, 0, &range),
        (5, 9, 0, &range),
        (3, 1, 0, &range),
        (2, 0, 1, &start),
        (4, 0, 1, &start),
        (5, 0, 1, &start),
        (0, 4, 2, &end),
        (0, 5, 2, &end),
        (0, 0, 5, &end),
        (1, 2, 3, &incl),
        (0, 3, 3, &incl),
        (3, 2, 3, &incl),
        (4, 3, 3, &incl),
        (2, 0, 3, &incl),
        (0, 4, 3, &incl),
        (5, 9, 3, &incl),
        (0, u32::MAX as usize, 3, &incl),
        (0, 3, 4, &incl_end),
        (0, 4, 4, &incl_end),
        (0, u32::MAX as usize, 4, &incl_end),
    ] {
        let mut host = vec![1u32, 2, 3, 4];
        let want = host_panic(|| cut_host(&mut host, lo, hi, mode)).map(|m| (m, loc.clone()));
        check_throw(&format!("cut({lo}, {hi}, {mode})"), &[1, 2, 3, 4], want, &host, |s, x| {
            cut::launch(s, Grid::new(1, 1), x, lo, hi, mode).expect("launch")
        });
    }
}

// 3. Closures bound by `let`, inlined at each call.

#[relok::device]
fn closures_dev(x: &[f32], y: &mut [f32], i: usize, a: f32, b: f32) -> f32 {
    let f = |v: f32| v * a + b;
    let mut total = 0.0f32;
    let mut add = |v: f32| total += v;
    add(f(x[i]));
    add(1.0);
    let g = |v| f(v) * 2.0;
    let sq = |v: f32| -> f32 {
        let t = v * v;
        t + 1.0
    };
    let mut count = 0u32;
    let mut tick = move || {
        count += 1;
        count
    };
    let t1 = tick();
    let t2 = tick();
    let at = |k: usize| x[k % x.len()];
    let mut put = |k: usize, v: f32| y[k] = v;
    put(i, at(i + 1) + at(i + 2));
    let snapshot = y[i];
    let mut steps = 0u32;
    let mut collatz = |mut n: u32| {
        while n != 1 {
            n = if n % 2 == 0 { n / 2 } else { 3 * n + 1 };
            steps += 1;
        }
    };
    collatz(i as u32 + 1);
    collatz(7);
    let pick = |c: bool, p: f32, q: f32| if c { p } else { q };
    total
        + g(x[i])
        + sq(x[i])
        + (t1 * 10 + t2) as f32
        + count as f32
        + snapshot
        + steps as f32
        + pick(i % 2 == 0, 0.5, 0.25)
}

#[expect(clippy::manual_is_multiple_of, reason = "the same text as the kernel's")]
fn closures_host(x: &[f32], y: &mut [f32], i: usize, a: f32, b: f32) -> f32 {
    let f = |v: f32| v * a + b;
    let mut total = 0.0f32;
    let mut add = |v: f32| total += v;
    add(f(x[i]));
    add(1.0);
    let g = |v| f(v) * 2.0;
    let sq = |v: f32| -> f32 {
        let t = v * v;
        t + 1.0
    };
    let mut count = 0u32;
    let mut tick = move || {
        count += 1;
        count
    };
    let t1 = tick();
    let t2 = tick();
    let at = |k: usize| x[k % x.len()];
    let mut put = |k: usize, v: f32| y[k] = v;
    put(i, at(i + 1) + at(i + 2));
    let snapshot = y[i];
    let mut steps = 0u32;
    let mut collatz = |mut n: u32| {
        while n != 1 {
            n = if n % 2 == 0 { n / 2 } else { 3 * n + 1 };
            steps += 1;
        }
    };
    collatz(i as u32 + 1);
    collatz(7);
    let pick = |c: bool, p: f32, q: f32| if c { p } else { q };
    total
        + g(x[i])
        + sq(x[i])
        + (t1 * 10 + t2) as f32
        + count as f32
        + snapshot
        + steps as f32
        + pick(i % 2 == 0, 0.5, 0.25)
}

#[relok::kernel]
fn closures(x: &[f32], y: &mut [f32], out: &mut [f32], a: f32, b: f32) {
    let i = global_id_x();
    if i < out.len() {
        out[i] = closures_dev(x, y, i, a, b);
    }
}

#[test]
fn let_bound_closures_match_plain_rust() {
    let n = 50;
    let x: Vec<f32> = (0..n).map(|k| k as f32 * 0.25 - 4.0).collect();
    let mut y_host = vec![0.0f32; n];
    let want: Vec<f32> = (0..n).map(|i| closures_host(&x, &mut y_host, i, 1.5, -0.5)).collect();
    let _g = serial();
    for ctx in contexts(Strategy::Table) {
        let x_d = ctx.upload(&x).expect("upload");
        let mut y = ctx.zeros::<f32>(n).expect("zeros");
        let mut out = ctx.zeros::<f32>(n).expect("zeros");
        let s = ctx.stream();
        closures::launch(&s, Grid::cover(n, 16), &x_d, &mut y, &mut out, 1.5, -0.5).expect("launch");
        s.synchronize().unwrap_or_else(|e| panic!("closures on {}: {e}", ctx.device_name()));
        assert_eq!(out.download().expect("download"), want, "closures on {}", ctx.device_name());
        assert_eq!(y.download().expect("download"), y_host, "closures' y on {}", ctx.device_name());
    }
}

// A bounds check in a closure is reported where the closure indexes.

#[relok::kernel]
fn closure_oob(x: &mut [u32], k: usize) {
    let get = |j: usize| x[j]; // closure_oob's index
    let v = get(k) + get(0);
    x[0] = v;
}

#[test]
fn a_bounds_check_in_a_closure_throws_at_the_closures_index() {
    let want = host_panic(|| {
        let x = [1u32, 2, 3];
        let get = |j: usize| x[j];
        let _ = get(std::hint::black_box(5));
    })
    .map(|m| (m, at("closure_oob's index", "j]")));
    check_throw("closure_oob", &[1, 2, 3], want, &[], |s, x| {
        closure_oob::launch(s, Grid::new(1, 1), x, 5).expect("launch")
    });
    check_throw("closure_oob", &[1, 2, 3], None, &[4, 2, 3], |s, x| {
        closure_oob::launch(s, Grid::new(1, 1), x, 2).expect("launch")
    });
}

// 4. A generic `T`'s constants and float methods.

#[relok::device]
fn consts_dev<T: relok::Float>(v: T) -> T {
    let z = T::default();
    let d = (v - T::ONE).abs() + z + T::ZERO;
    d.max(T::ZERO) + (-v).abs().sqrt() + v.floor() + v.signum() + v.clamp(-T::ONE, T::ONE) + (v * v).min(T::ONE)
}

macro_rules! consts_host {
    ($name:ident, $t:ty) => {
        fn $name(v: $t) -> $t {
            let (zero, one) = (0.0, 1.0);
            let z = <$t>::default();
            let d = (v - one).abs() + z + zero;
            d.max(zero) + (-v).abs().sqrt() + v.floor() + v.signum() + v.clamp(-one, one) + (v * v).min(one)
        }
    };
}
consts_host!(consts_host_f32, f32);
consts_host!(consts_host_f64, f64);

#[relok::kernel]
fn consts<T: relok::Float>(x: &[T], out: &mut [T]) {
    let i = global_id_x();
    if i < x.len() {
        out[i] = consts_dev(x[i]);
    }
}

#[relok::device]
fn count_dev<T: relok::Number>(v: T, k: T) -> T {
    let mut n = T::default();
    let mut t = T::ZERO;
    while t < v {
        t = t + k + T::ONE;
        n = n + T::ONE;
    }
    n
}

#[relok::kernel]
fn counts<T: relok::Number>(x: &[T], out: &mut [T]) {
    let i = global_id_x();
    if i < x.len() {
        out[i] = count_dev(x[i], x[0]);
    }
}

#[test]
fn a_generic_types_constants_and_float_methods_match_plain_rust() {
    let v32: Vec<f32> = vec![-3.5, -1.0, -0.25, 0.0, -0.0, 0.5, 1.0, 2.75, 100.0, f32::INFINITY, f32::MIN_POSITIVE];
    let want: Vec<f32> = v32.iter().map(|&v| consts_host_f32(v)).collect();
    check("consts::<f32>", &v32, &want, |s, x, out| {
        consts::launch(s, Grid::cover(v32.len(), 32), x, out).expect("launch")
    });
    let v64: Vec<f64> = v32.iter().map(|&v| f64::from(v) * 1.25).collect();
    let want: Vec<f64> = v64.iter().map(|&v| consts_host_f64(v)).collect();
    check("consts::<f64>", &v64, &want, |s, x, out| {
        consts::launch(s, Grid::cover(v64.len(), 32), x, out).expect("launch")
    });
    let u: Vec<u32> = vec![2, 0, 1, 7, 30, 31];
    let count = |v: u32, k: u32| {
        let (mut n, mut t) = (0, 0);
        while t < v {
            t = t + k + 1;
            n += 1;
        }
        n
    };
    let want: Vec<u32> = u.iter().map(|&v| count(v, u[0])).collect();
    check("counts::<u32>", &u, &want, |s, x, out| counts::launch(s, Grid::cover(u.len(), 32), x, out).expect("launch"));
    let w: Vec<i64> = vec![3, -4, 0, 12, 100];
    let count = |v: i64, k: i64| {
        let (mut n, mut t) = (0, 0);
        while t < v {
            t = t + k + 1;
            n += 1;
        }
        n
    };
    let want: Vec<i64> = w.iter().map(|&v| count(v, w[0])).collect();
    check("counts::<i64>", &w, &want, |s, x, out| counts::launch(s, Grid::cover(w.len(), 32), x, out).expect("launch"));
}

// 5. What the constructs cost: the PTX of each against the hand-written
// index loop's (optimised, without checked mode: what a fast context runs).

const MT: usize = 16;

#[relok::kernel]
fn mm_flat(m: usize, n: usize, k: usize, a: &[f32], b: &[f32], c: &mut [f32]) {
    let tile_a = shared::<f32, { MT * MT }>();
    let tile_b = shared::<f32, { MT * MT }>();
    let (tx, ty) = (thread_id_x(), thread_id_y());
    let row = block_id_y() * MT + ty;
    let col = block_id_x() * MT + tx;
    let mut acc = 0.0f32;
    for t in (0..k).step_by(MT) {
        tile_a[ty * MT + tx] = if row < m && t + tx < k { a[row * k + t + tx] } else { 0.0 };
        tile_b[ty * MT + tx] = if t + ty < k && col < n { b[(t + ty) * n + col] } else { 0.0 };
        sync_threads();
        for kk in 0..MT {
            acc += tile_a[ty * MT + kk] * tile_b[kk * MT + tx];
        }
        sync_threads();
    }
    if row < m && col < n {
        c[row * n + col] = acc;
    }
}

#[relok::kernel]
fn mm_2d(m: usize, n: usize, k: usize, a: &[f32], b: &[f32], c: &mut [f32]) {
    let tile_a = shared::<[f32; MT], MT>();
    let tile_b = shared::<[f32; MT], MT>();
    let (tx, ty) = (thread_id_x(), thread_id_y());
    let row = block_id_y() * MT + ty;
    let col = block_id_x() * MT + tx;
    let mut acc = 0.0f32;
    for t in (0..k).step_by(MT) {
        tile_a[ty][tx] = if row < m && t + tx < k { a[row * k + t + tx] } else { 0.0 };
        tile_b[ty][tx] = if t + ty < k && col < n { b[(t + ty) * n + col] } else { 0.0 };
        sync_threads();
        for kk in 0..MT {
            acc += tile_a[ty][kk] * tile_b[kk][tx];
        }
        sync_threads();
    }
    if row < m && col < n {
        c[row * n + col] = acc;
    }
}

fn code(p: &relok::Program, name: &str, target: relok_compiler::target::CodeTarget) -> String {
    let s = relok_compiler::stencil::Stencil::new(p.verified_module(), name).expect("stencil");
    let o = relok_compiler::target::CompileOptions { optimize: true, checked: false };
    let a = relok_compiler::artifact::compile(&s, target, Strategy::Table, o, None).expect("compiles");
    String::from_utf8(a.code).expect("text")
}

#[relok::kernel]
fn rows_flat(a: &[f32], n: usize, out: &mut [f32]) {
    let i = global_id_x();
    if i < out.len() {
        let mut s = 0.0f32;
        for k in 0..n {
            s += a[i * n + k];
        }
        out[i] = s;
    }
}

#[relok::kernel]
fn rows_sub(a: &[f32], n: usize, out: &mut [f32]) {
    let i = global_id_x();
    if i < out.len() {
        let row = &a[i * n..(i + 1) * n];
        let mut s = 0.0f32;
        for k in 0..row.len() {
            s += row[k];
        }
        out[i] = s;
    }
}

#[relok::kernel]
fn rows_iter(a: &[f32], n: usize, out: &mut [f32]) {
    let i = global_id_x();
    if i < out.len() {
        let mut s = 0.0f32;
        for v in a[i * n..(i + 1) * n].iter() {
            s += *v;
        }
        out[i] = s;
    }
}

#[relok::kernel]
fn saxpy_plain(x: &[f32], y: &mut [f32], a: f32, b: f32) {
    let i = global_id_x();
    if i < x.len() {
        y[i] = x[i] * a + b + y[i];
    }
}

#[relok::kernel]
fn saxpy_closure(x: &[f32], y: &mut [f32], a: f32, b: f32) {
    let f = |v: f32| v * a + b;
    let i = global_id_x();
    if i < x.len() {
        y[i] = f(x[i]) + y[i];
    }
}

/// The instructions of `ptx` on the path that runs: before the kernel's
/// first `ret` (the reports of failed checks are after it), registers,
/// labels, the kernel's name and source locations left out.
fn hot_path(ptx: &str, name: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in ptx.lines().map(str::trim) {
        if line == "ret;" {
            break;
        }
        if !line.ends_with(';') || line.starts_with('.') {
            continue;
        }
        let words: Vec<String> = line
            .replace(name, "K")
            .split([' ', ',', '[', ']'])
            .filter(|w| !w.is_empty())
            .map(|w| if w.starts_with('%') || w.starts_with("$L") { "_".to_owned() } else { w.to_owned() })
            .collect();
        out.push(words.join(" "));
    }
    out
}

/// The instructions of the first loop of `ptx` (from a label to the
/// `bra.uni` back to it).
fn loop_body(ptx: &str) -> usize {
    let lines: Vec<&str> = ptx.lines().map(str::trim).collect();
    for (k, l) in lines.iter().enumerate() {
        if let Some(label) = l.strip_suffix(':')
            && let Some(end) = lines[k..].iter().position(|m| *m == format!("bra.uni {label};"))
        {
            return lines[k + 1..k + end].iter().filter(|m| m.ends_with(';')).count();
        }
    }
    0
}

#[test]
fn two_dimensional_arrays_sub_slices_and_closures_cost_nothing_over_hand_written_indexing() {
    let ptx = relok_compiler::target::CodeTarget::Ptx { sm: 90 };
    // A closure is its body written out at the call.
    let plain = code(saxpy_plain::program().expect("builds"), "saxpy_plain", ptx);
    let closure = code(saxpy_closure::program().expect("builds"), "saxpy_closure", ptx);
    assert_eq!(
        plain.replace("saxpy_plain", "K").lines().filter(|l| !l.contains("rust_places.rs")).collect::<Vec<_>>(),
        closure.replace("saxpy_closure", "K").lines().filter(|l| !l.contains("rust_places.rs")).collect::<Vec<_>>()
    );
    // A 2-D shared tile: no more instructions on the path that runs than
    // the flat tile's `ty * MT + tx`, and no more compares.
    let (m, n, k) = (20, 24, 18);
    let a: Vec<f32> = (0..m * k).map(|v| (v % 7) as f32 - 3.0).collect();
    let b: Vec<f32> = (0..k * n).map(|v| (v % 5) as f32 * 0.5).collect();
    let want: Vec<f32> =
        (0..m * n).map(|v| (0..k).fold(0.0, |acc, kk| acc + a[v / n * k + kk] * b[kk * n + v % n])).collect();
    let _g = serial();
    for ctx in contexts(Strategy::Table) {
        let (a, b) = (ctx.upload(&a).expect("upload"), ctx.upload(&b).expect("upload"));
        let (mut c1, mut c2) = (ctx.zeros::<f32>(m * n).expect("zeros"), ctx.zeros::<f32>(m * n).expect("zeros"));
        let s = ctx.stream();
        let g = Grid::new((n.div_ceil(MT) as u32, m.div_ceil(MT) as u32), (MT as u32, MT as u32));
        mm_flat::launch(&s, g, m, n, k, &a, &b, &mut c1).expect("launch");
        mm_2d::launch(&s, g, m, n, k, &a, &b, &mut c2).expect("launch");
        s.synchronize().unwrap_or_else(|e| panic!("matmul on {}: {e}", ctx.device_name()));
        assert_eq!(c1.download().expect("download"), want, "mm_flat on {}", ctx.device_name());
        assert_eq!(c2.download().expect("download"), want, "mm_2d on {}", ctx.device_name());
    }
    let flat = hot_path(&code(mm_flat::program().expect("builds"), "mm_flat", ptx), "mm_flat");
    let two = hot_path(&code(mm_2d::program().expect("builds"), "mm_2d", ptx), "mm_2d");
    let compares = |v: &[String]| v.iter().filter(|l| l.starts_with("setp")).count();
    assert!(two.len() <= flat.len(), "2-D {} instructions, flat {}", two.len(), flat.len());
    assert!(compares(&two) <= compares(&flat), "2-D {} compares, flat {}", compares(&two), compares(&flat));
    // A sub-slice: its ends are checked once, before the loop (two
    // compares on the way through, as Rust's `lo <= hi && hi <= len`; a
    // third, inline, only when one failed, to pick the message); each
    // iteration costs no more than the flat `a[i * n + k]`'s.
    let flat = code(rows_flat::program().expect("builds"), "rows_flat", ptx);
    let sub = code(rows_sub::program().expect("builds"), "rows_sub", ptx);
    let iter = code(rows_iter::program().expect("builds"), "rows_iter", ptx);
    assert!(loop_body(&sub) <= loop_body(&flat), "sub-slice loop {}, flat {}", loop_body(&sub), loop_body(&flat));
    assert!(loop_body(&iter) < loop_body(&flat), "sub-slice iter {}, flat {}", loop_body(&iter), loop_body(&flat));
    let (flat, sub) = (hot_path(&flat, "rows_flat"), hot_path(&sub, "rows_sub"));
    assert!(compares(&sub) <= compares(&flat) + 3, "sub-slice {} compares, flat {}", compares(&sub), compares(&flat));
}

// 6. Kernels made by `macro_rules!`, the element type a `$t:ty`.

macro_rules! axpy_kernel {
    ($name:ident, $t:ty) => {
        #[relok::kernel]
        fn $name(x: &[$t], y: &mut [$t], a: $t) {
            let i = global_id_x();
            if i < x.len() {
                let v: $t = x[i] * a;
                let mut acc = v;
                acc += y[i];
                y[i] = acc;
            }
        }
    };
}

axpy_kernel!(axpy_f32, f32);
axpy_kernel!(axpy_i64, i64);

macro_rules! scale_kernel {
    ($name:ident, $t:ty, $x:ident, $k:expr) => {
        #[relok::kernel]
        fn $name($x: &mut [$t], n: u32) {
            let i = global_id_x();
            if i < $x.len() {
                let mut m = [[<$t>::default(); 2]; 2];
                m[1][0] = $x[i] * $k;
                let f = |v: $t| v + $k;
                let mut s = 0 as $t;
                for j in 0..n {
                    s += j as $t;
                }
                let row = &$x[i..];
                $x[i] = f(m[1][0]) + s + row[0] + <$t>::default() + ($x[i] as $t).max($k);
            }
        }
    };
}

scale_kernel!(scale_f32, f32, data, 3.0);
scale_kernel!(scale_u32, u32, data, 2);

/// `scale_kernel!`'s kernel on the host.
fn scale_kernel_host<T>(data: &mut [T], n: u32, k: T)
where
    T: Copy
        + Default
        + PartialOrd
        + std::ops::Add<Output = T>
        + std::ops::Mul<Output = T>
        + std::ops::AddAssign
        + FromU32,
{
    for i in 0..data.len() {
        let mut m = [[T::default(); 2]; 2];
        m[1][0] = data[i] * k;
        let f = |v: T| v + k;
        let mut s = T::from_u32(0);
        for j in 0..n {
            s += T::from_u32(j);
        }
        let row = &data[i..];
        let x = data[i];
        data[i] = f(m[1][0]) + s + row[0] + T::default() + if x > k { x } else { k };
    }
}

/// `j as T` on the host.
trait FromU32 {
    fn from_u32(j: u32) -> Self;
}
impl FromU32 for f32 {
    fn from_u32(j: u32) -> f32 {
        j as f32
    }
}
impl FromU32 for u32 {
    fn from_u32(j: u32) -> u32 {
        j
    }
}

/// A device function and its host twin from one text: the parameters and
/// the body are the caller's tokens, the names `macro_rules!` adds its own.
macro_rules! twins {
    ($dev:ident, $host:ident, ($($p:ident: $t:ty),*) -> $r:ty $body:block) => {
        #[relok::device]
        fn $dev($($p: $t),*) -> $r $body
        fn $host($($p: $t),*) -> $r $body
    };
}

twins!(mix_dev, mix_host, (v: i32, k: i32) -> i32 {
    let w = [[v, k], [k, v]];
    let f = |a: i32| a * w[1][0] + k;
    let mut s = 0;
    for j in 0..4 {
        s += f(j) + w[(j % 2) as usize][1];
    }
    s
});

/// The kernel whole as the caller's tokens, the attribute the macro's.
macro_rules! kernel_of {
    ($f:item) => {
        #[relok::kernel]
        $f
    };
}

kernel_of! {
    fn mix(x: &[i32], out: &mut [i32]) {
        let i = global_id_x();
        if i < x.len() {
            let f = |v: i32| mix_dev(v, i as i32);
            out[i] = f(x[i]);
        }
    }
}

#[test]
fn kernels_made_by_macro_rules_match_plain_rust() {
    let x: Vec<f32> = (0..40).map(|k| k as f32 * 0.75 - 9.0).collect();
    let mut want = x.clone();
    scale_kernel_host(&mut want, 5, 3.0f32);
    {
        let _g = serial();
        for ctx in contexts(Strategy::Table) {
            let mut d = ctx.upload(&x).expect("upload");
            let s = ctx.stream();
            scale_f32::launch(&s, Grid::cover(x.len(), 16), &mut d, 5).expect("launch");
            s.synchronize().unwrap_or_else(|e| panic!("scale_f32 on {}: {e}", ctx.device_name()));
            assert_eq!(d.download().expect("download"), want, "scale_f32 on {}", ctx.device_name());
        }
    }
    let u: Vec<u32> = (0..40).collect();
    let mut want = u.clone();
    scale_kernel_host(&mut want, 7, 2u32);
    {
        let _g = serial();
        for ctx in contexts(Strategy::Table) {
            let mut d = ctx.upload(&u).expect("upload");
            let s = ctx.stream();
            scale_u32::launch(&s, Grid::cover(u.len(), 16), &mut d, 7).expect("launch");
            s.synchronize().unwrap_or_else(|e| panic!("scale_u32 on {}: {e}", ctx.device_name()));
            assert_eq!(d.download().expect("download"), want, "scale_u32 on {}", ctx.device_name());
        }
    }
    let x: Vec<f32> = (0..30).map(|k| k as f32 - 7.5).collect();
    let mut y = vec![1.0f32; 30];
    let want: Vec<f32> = x.iter().zip(&y).map(|(x, y)| x * 1.5 + y).collect();
    {
        let _g = serial();
        for ctx in contexts(Strategy::Table) {
            let (xd, mut yd) = (ctx.upload(&x).expect("upload"), ctx.upload(&y).expect("upload"));
            let s = ctx.stream();
            axpy_f32::launch(&s, Grid::cover(x.len(), 16), &xd, &mut yd, 1.5).expect("launch");
            s.synchronize().unwrap_or_else(|e| panic!("axpy_f32 on {}: {e}", ctx.device_name()));
            assert_eq!(yd.download().expect("download"), want, "axpy_f32 on {}", ctx.device_name());
        }
    }
    y.iter_mut().for_each(|v| *v = 2.0);
    let xi: Vec<i64> = (0..30).map(|k| k * 1_000_000_007 - 5).collect();
    let want: Vec<i64> = xi.iter().map(|x| x.wrapping_mul(-3) + 9).collect();
    let m: Vec<i32> = (-20..20).collect();
    let want_mix: Vec<i32> = m.iter().enumerate().map(|(i, &v)| mix_host(v, i as i32)).collect();
    check("mix", &m, &want_mix, |s, x, out| mix::launch(s, Grid::cover(m.len(), 16), x, out).expect("launch"));
    {
        let _g = serial();
        for ctx in contexts(Strategy::Table) {
            let (xd, mut yd) = (ctx.upload(&xi).expect("upload"), ctx.upload(&[9i64; 30]).expect("upload"));
            let s = ctx.stream();
            axpy_i64::launch(&s, Grid::cover(xi.len(), 16), &xd, &mut yd, -3).expect("launch");
            s.synchronize().unwrap_or_else(|e| panic!("axpy_i64 on {}: {e}", ctx.device_name()));
            assert_eq!(yd.download().expect("download"), want, "axpy_i64 on {}", ctx.device_name());
        }
    }
}
