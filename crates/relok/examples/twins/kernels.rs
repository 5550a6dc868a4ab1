//! Rust twins of the example kernels in `examples/*.rk` and
//! `examples/reloc/*.rk`: the same computation written as Rust kernels
//! (`#[relok::kernel]`). `rust_twins` runs each next to its `.rk` version
//! and compares the results; the tests do it on every device.

use relok::{device, kernel};

/// Threads per block along each axis of a matmul tile.
pub const TILE: usize = 16;

/// `y[i] = a * x[i] + y[i]` for `i < n` (examples/saxpy.rk).
#[kernel]
pub fn saxpy(n: u32, a: f32, x: &[f32], y: &mut [f32]) {
    let i = global_id_x();
    if i < n as usize {
        y[i] = a * x[i] + y[i];
    }
}

/// `out[b]` = the sum of block `b`'s elements, a tree reduction in shared
/// memory (examples/reduce.rk).
#[kernel]
pub fn reduce(n: u32, x: &[f32], out: &mut [f32]) {
    let buf = shared::<f32, 256>();
    let (t, i) = (thread_id_x(), global_id_x());
    buf[t] = if i < n as usize { x[i] } else { 0.0 };
    sync_threads();
    for stride in halving(block_dim_x() >> 1) {
        if t < stride {
            buf[t] += buf[t + stride];
        }
        sync_threads();
    }
    if t == 0 {
        out[block_id_x()] = buf[0];
    }
}

/// `hist[data[i] % bins] += 1`: a block histogram in shared memory with
/// shared atomics, added to the global one with global atomics
/// (examples/histogram.rk).
#[kernel]
pub fn histogram(n: u32, bins: u32, data: &[u32], hist: &mut [u32]) {
    let local = shared::<u32, 256>();
    let (t, dim, i) = (thread_id_x(), block_dim_x(), global_id_x());
    for b in (t..bins as usize).step_by(dim) {
        local[b] = 0;
    }
    sync_threads();
    if i < n as usize {
        atomic_add(&mut local[(data[i] % bins) as usize], 1);
    }
    sync_threads();
    for b in (t..bins as usize).step_by(dim) {
        if local[b] != 0 {
            atomic_add(&mut hist[b], local[b]);
        }
    }
}

/// Tiled `c = a * b` (`m x k` by `k x n`, row-major), 16 x 16 tiles
/// staged through shared memory (examples/matmul.rk), in blocks of 16 x 16
/// threads only.
#[kernel(block = (16, 16))]
pub fn matmul(m: usize, n: usize, k: usize, a: &[f32], b: &[f32], c: &mut [f32]) {
    let (tile_a, tile_b) = (shared::<f32, { TILE * TILE }>(), shared::<f32, { TILE * TILE }>());
    let (tx, ty) = (thread_id_x(), thread_id_y());
    let (row, col) = (block_id_y() * TILE + ty, block_id_x() * TILE + tx);
    let mut acc = 0.0f32;
    for t in (0..k).step_by(TILE) {
        tile_a[ty * TILE + tx] = if row < m && t + tx < k { a[row * k + t + tx] } else { 0.0 };
        tile_b[ty * TILE + tx] = if t + ty < k && col < n { b[(t + ty) * n + col] } else { 0.0 };
        sync_threads();
        for kk in 0..TILE {
            acc += tile_a[ty * TILE + kk] * tile_b[kk * TILE + tx];
        }
        sync_threads();
    }
    if row < m && col < n {
        c[row * n + col] = acc;
    }
}

/// Inclusive prefix sum within each block, Hillis-Steele
/// (examples/scan.rk).
#[kernel]
pub fn scan(n: u32, x: &[u32], out: &mut [u32]) {
    let buf = shared::<u32, 1024>();
    let (t, i) = (thread_id_x(), global_id_x());
    let inside = i < n as usize;
    buf[t] = if inside { x[i] } else { 0 };
    sync_threads();
    for offset in doubling(1, block_dim_x()) {
        let add = if t >= offset { buf[t - offset] } else { 0 };
        sync_threads();
        buf[t] += add;
        sync_threads();
    }
    if inside {
        out[i] = buf[t];
    }
}

const fn lookup_table() -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = ((i * i * 7 + 3) % 1000) as u32;
        i += 1;
    }
    t
}

/// The table of examples/reloc/lookup.rk, as a host static: the kernel
/// reads it by identity (this path), its bytes delivered at load.
#[relok::host]
pub static TABLE: [u32; 256] = lookup_table();

/// `out[i] = TABLE[x[i] % 256]` (examples/reloc/lookup.rk).
#[kernel]
pub fn lookup(n: u32, x: &[u32], out: &mut [u32]) {
    let i = global_id_x();
    if i < n as usize {
        out[i] = TABLE[(x[i] % 256) as usize];
    }
}

/// Throws "negative input" for a negative element
/// (examples/reloc/throw.rk).
#[kernel]
pub fn check(n: u32, x: &[i32]) {
    let i = global_id_x();
    if i < n as usize && x[i] < 0 {
        throw!("negative input");
    }
}

/// `out[0]` = 1 for the symbol `foo`, 2 for `bar`, -1 otherwise
/// (examples/reloc/symbols.rk): symbols compare by their words.
#[kernel]
pub fn classify(s: relok::Symbol, out: &mut [i32]) {
    out[0] = if s == sym!("foo") {
        1
    } else if s == sym!("bar") {
        2
    } else {
        -1
    };
}

/// The runtime global of examples/reloc/counter.rk (its `relok_count`).
pub static RELOK_COUNTER: relok::Global<u64> = relok::Global::new("relok_counter");

/// Every thread adds 1 to the per-device counter and writes the old value
/// (examples/reloc/counter.rk).
#[kernel]
pub fn count(out: &mut [u64]) {
    let i = global_id_x();
    out[i] = atomic_add(&RELOK_COUNTER, 1);
}

/// Row-wise softmax, one block per row of `cols <= block_dim` columns:
/// the row's maximum and the sum of `exp(x - max)` by tree reductions in
/// shared memory (examples/softmax.rk).
#[kernel]
pub fn softmax(cols: u32, x: &[f32], y: &mut [f32]) {
    let buf = shared::<f32, 256>();
    let (t, cols) = (thread_id_x(), cols as usize);
    let (i, inside) = (block_id_x() * cols + t, t < cols);
    buf[t] = if inside { x[i] } else { f32::NEG_INFINITY };
    sync_threads();
    for stride in halving(block_dim_x() >> 1) {
        if t < stride {
            buf[t] = buf[t].max(buf[t + stride]);
        }
        sync_threads();
    }
    let m = buf[0];
    sync_threads();
    let e = if inside { (x[i] - m).exp() } else { 0.0 };
    buf[t] = e;
    sync_threads();
    for stride in halving(block_dim_x() >> 1) {
        if t < stride {
            buf[t] += buf[t + stride];
        }
        sync_threads();
    }
    if inside {
        y[i] = e / buf[0];
    }
}

/// GELU, the tanh form: `0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715
/// x^3)))` (examples/gelu.rk).
#[kernel]
pub fn gelu(n: u32, x: &[f32], y: &mut [f32]) {
    let i = global_id_x();
    if i < n as usize {
        let v = x[i];
        y[i] = 0.5 * v * (1.0 + (0.797_884_6 * (v + 0.044_715 * (v * v * v))).tanh());
    }
}

/// RGBA pixels (bytes) to grey: the luma (77 R + 150 G + 29 B) / 256,
/// alpha kept (examples/grey.rk).
#[kernel]
pub fn grey(n: u32, px: &[u8], out: &mut [u8]) {
    let i = global_id_x();
    if i < n as usize {
        let p = 4 * i;
        let y = ((77 * px[p] as u32 + 150 * px[p + 1] as u32 + 29 * px[p + 2] as u32) >> 8) as u8;
        out[p..p + 3].fill(y);
        out[p + 3] = px[p + 3];
    }
}

/// A byte's class for [`tokens`]: 0 white space, 1 digit, 2 letter or
/// `_`, 3 operator, 4 anything else.
#[device]
fn class(c: u8) -> u32 {
    match c {
        b' ' | b'\t' | b'\n' => 0,
        b'0'..=b'9' => 1,
        b'a'..=b'z' | b'A'..=b'Z' | b'_' => 2,
        b'+' | b'-' | b'*' | b'/' | b'=' => 3,
        _ => 4,
    }
}

/// A tokenizer's first pass: `2 * class + 1` where a token starts (the
/// class differs from the previous byte's), `2 * class` elsewhere
/// (examples/tokens.rk).
#[kernel]
pub fn tokens(n: u32, text: &[u8], out: &mut [u32]) {
    let i = global_id_x();
    if i < n as usize {
        let c = class(text[i]);
        out[i] = 2 * c + (i == 0 || class(text[i - 1]) != c) as u32;
    }
}

/// A body of [`nbody`]: its position and mass.
#[derive(Clone, Copy, Debug, PartialEq, relok::Struct)]
#[repr(C)]
pub struct Body {
    /// Position.
    pub x: f32,
    /// Position.
    pub y: f32,
    /// Position.
    pub z: f32,
    /// Mass.
    pub m: f32,
}

/// Gravity on each body from all of them, softened (a body's own term is
/// zero): its acceleration, its mass kept (examples/nbody.rk).
#[kernel]
pub fn nbody(n: u32, p: &[Body], acc: &mut [Body]) {
    let i = global_id_x();
    if i < n as usize {
        let b = p[i];
        let (mut ax, mut ay, mut az) = (0.0f32, 0.0f32, 0.0f32);
        for j in 0..n as usize {
            let q = p[j];
            let (dx, dy, dz) = (q.x - b.x, q.y - b.y, q.z - b.z);
            let d2 = dx * dx + dy * dy + dz * dz + 0.01;
            let s = q.m / (d2 * d2.sqrt());
            ax += dx * s;
            ay += dy * s;
            az += dz * s;
        }
        acc[i] = Body { x: ax, y: ay, z: az, m: b.m };
    }
}
