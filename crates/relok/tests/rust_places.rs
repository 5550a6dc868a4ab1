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

use common::{contexts, serial};
use relok::{Buffer, Grid, Strategy};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// Runs `launch` over `input` on every device and compares its output
/// with `want` (`what` names the kernel).
fn check<T, U>(what: &str, input: &[T], want: &[U], launch: impl Fn(&relok::Stream, &Buffer<T>, &mut Buffer<U>))
where
    T: relok::Element,
    U: relok::Element + PartialEq + std::fmt::Debug,
{
    let _g = serial();
    for ctx in contexts(Strategy::Table) {
        let x = ctx.upload(input).expect("upload");
        let mut out = ctx.zeros::<U>(want.len()).expect("zeros");
        let s = ctx.stream();
        launch(&s, &x, &mut out);
        s.synchronize().unwrap_or_else(|e| panic!("{what} on {}: {e}", ctx.device_name()));
        let got = out.download().expect("download");
        assert_eq!(got, want, "{what} on {}", ctx.device_name());
    }
}

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
