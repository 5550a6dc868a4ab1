//! `Option` in Rust kernels computes what the same Rust computes on the
//! host, on every device (the cpu device always; wgpu on lavapipe here;
//! cuda when a GPU is present): device functions returning `Option`
//! (of scalars and of tuples), `Some`/`None` values, `let mut` options,
//! `if let`, `while let`, `let … else`, a `match` of `Some`/`None`,
//! `checked_*` as an `Option`, `unwrap_or`, `unwrap_or_default`,
//! `is_some`/`is_none`, and `unwrap`/`expect` throwing Rust's message with
//! the Rust location. Each kernel has its plain-Rust twin (the same text
//! where it can be), compared element for element.

use crate::common::{check, contexts, serial};
use relok::{Grid, Strategy};

/// The first of `x[lo..hi]` above `t`, by its index.
#[relok::device]
fn first_above(x: &[u32], lo: usize, hi: usize, t: u32) -> Option<u32> {
    let mut found: Option<u32> = None;
    for j in lo..hi {
        if found.is_none() && x[j] > t {
            found = Some(j as u32);
        }
    }
    found
}

/// The next Collatz number, none after 1.
#[relok::device]
fn collatz(n: u32) -> Option<u32> {
    if n <= 1 {
        None
    } else if n % 2 == 0 {
        Some(n / 2)
    } else {
        Some(3 * n + 1)
    }
}

/// The quotient and remainder, none by zero.
#[relok::device]
fn div_rem(a: u32, b: u32) -> Option<(u32, u32)> {
    match b {
        0 => None,
        _ => Some((a / b, a % b)),
    }
}

const OUTS: usize = 8;

#[relok::kernel]
fn options(x: &[u32], out: &mut [u32]) {
    let i = relok::global_id_x();
    let n = x.len();
    if i >= n {
        return;
    }
    let a = x[i];
    let b = x[(i + 1) % n] % 7;
    // if let, with an else.
    if let Some(j) = first_above(x, i, n, a + 40) {
        out[i] = j;
    } else {
        out[i] = 1_000_000;
    }
    // while let: the length of a Collatz chain (bounded).
    let mut steps = 0u32;
    let mut k = a % 50 + 1;
    while let Some(next) = collatz(k) {
        k = next;
        steps += 1;
        if steps == 200 {
            break;
        }
    }
    out[n + i] = steps;
    // A match of Some and None, as a value; a tuple inside.
    out[2 * n + i] = match div_rem(a, b) {
        Some((q, r)) => q * 10 + r,
        None => 7,
    };
    // let … else.
    let Some(q) = a.checked_sub(b * 100) else {
        out[3 * n + i] = 5;
        return;
    };
    out[3 * n + i] = q;
    // checked_* as options; unwrap_or, unwrap_or_default, is_some.
    let m = a.checked_mul(a);
    out[4 * n + i] = m.unwrap_or(3) + m.is_some() as u32;
    out[5 * n + i] = (a * 40_000_000).checked_add(a).unwrap_or_default();
    // An `if` of options, then taken apart with `if let` as a value.
    let o = if a % 3 == 0 { Some(a) } else { None };
    out[6 * n + i] = if let Some(v) = o { v + 1 } else { 0 };
    let mut best: Option<u32> = None;
    for j in 0..4 {
        let c = x[(i + j) % n];
        best = match best {
            Some(v) if v >= c => Some(v),
            _ => Some(c),
        };
    }
    out[7 * n + i] = best.unwrap();
}

fn first_above_host(x: &[u32], lo: usize, hi: usize, t: u32) -> Option<u32> {
    (lo..hi).find(|&j| x[j] > t).map(|j| j as u32)
}

fn collatz_host(n: u32) -> Option<u32> {
    if n <= 1 {
        None
    } else if n.is_multiple_of(2) {
        Some(n / 2)
    } else {
        Some(3 * n + 1)
    }
}

fn options_host(x: &[u32], out: &mut [u32]) {
    let n = x.len();
    for i in 0..n {
        let a = x[i];
        let b = x[(i + 1) % n] % 7;
        out[i] = first_above_host(x, i, n, a + 40).unwrap_or(1_000_000);
        let mut steps = 0u32;
        let mut k = a % 50 + 1;
        while let Some(next) = collatz_host(k) {
            k = next;
            steps += 1;
            if steps == 200 {
                break;
            }
        }
        out[n + i] = steps;
        out[2 * n + i] = a.checked_div(b).map_or(7, |q| q * 10 + a % b);
        let Some(q) = a.checked_sub(b * 100) else {
            out[3 * n + i] = 5;
            continue;
        };
        out[3 * n + i] = q;
        let m = a.checked_mul(a);
        out[4 * n + i] = m.unwrap_or(3) + m.is_some() as u32;
        out[5 * n + i] = a.wrapping_mul(40_000_000).checked_add(a).unwrap_or_default();
        out[6 * n + i] = if a.is_multiple_of(3) { a + 1 } else { 0 };
        out[7 * n + i] = (0..4).map(|j| x[(i + j) % n]).max().unwrap_or(0);
    }
}

#[test]
fn options_are_values_results_and_patterns_as_in_rust() {
    let mut x: Vec<u32> = (0..150u32).map(|k| k.wrapping_mul(2_654_435_761) % 1000).collect();
    x.extend([0, 1, 100, 65_535, 65_536, 70_000, u32::MAX / 40_000_000, u32::MAX]);
    let mut want = vec![0u32; x.len() * OUTS];
    options_host(&x, &mut want);
    check("options", &x, &want, |s, x, out| options::launch(s, Grid::cover(x.len(), 64), x, out).expect("launch"));
}

#[relok::kernel]
fn unwraps(x: &[u32], out: &mut [u32]) {
    let i = relok::global_id_x();
    if i < x.len() {
        let o = collatz(x[i]);
        out[i] = if x[i] == 2 { o.expect("two has a successor") } else { o.unwrap() };
    }
}

#[test]
fn unwrap_and_expect_of_none_throw_rusts_message_at_the_call() {
    let _g = serial();
    for ctx in contexts(Strategy::Table) {
        let s = ctx.stream();
        // Every value has a successor: the unwraps pass.
        let x = ctx.upload(&[2u32, 3, 4, 5]).expect("upload");
        let mut out = ctx.zeros::<u32>(4).expect("zeros");
        unwraps::launch(&s, Grid::cover(4, 64), &x, &mut out).expect("launch");
        s.synchronize().unwrap_or_else(|e| panic!("on {}: {e}", ctx.device_name()));
        assert_eq!(out.download().expect("download"), [1, 10, 2, 16], "on {}", ctx.device_name());
        // 1 has none: `unwrap` throws Rust's message with the location.
        let x = ctx.upload(&[3u32, 1]).expect("upload");
        unwraps::launch(&s, Grid::cover(2, 64), &x, &mut out).expect("launch");
        let e = s.synchronize().expect_err("unwrap of None").to_string();
        assert!(
            e.contains("called `Option::unwrap()` on a `None` value") && e.contains("rust_data/option.rs:"),
            "on {}: {e}",
            ctx.device_name()
        );
    }
}
