//! The example kernels of `examples/*.rk` and `examples/reloc/*.rk` (host
//! objects: symbols, a value table, a boxed constant, an exception), each
//! with its launch, its inputs
//! (in the `--arg` syntax) and a plain Rust computation of what it must
//! produce. `relok demo` runs them; the tests check every one.

use crate::args::ArgValue;

/// One example kernel.
#[derive(Debug)]
pub struct Example {
    /// Short name.
    pub name: &'static str,
    /// Path of its source in the repository.
    pub file: &'static str,
    /// The kernel text.
    pub source: &'static str,
    /// Kernel to launch.
    pub kernel: &'static str,
    /// Grid dimensions.
    pub grid: [u32; 3],
    /// Block dimensions.
    pub block: [u32; 3],
    /// Arguments, as `relok run --arg` takes them.
    pub args: &'static [&'static str],
    /// What the arguments must hold after the launch, from their values
    /// before it.
    pub reference: fn(&[ArgValue]) -> Vec<ArgValue>,
    /// Which argument is the result, for printing.
    pub output: usize,
    /// The launch must end with this exception message instead.
    pub exception: Option<&'static str>,
    /// How close the float results must be to the reference
    /// ([`Tolerance::EXACT`] but for the math-library examples).
    pub tolerance: Tolerance,
}

/// How far a float result may be from its reference: `ulps` units in the
/// last place of the reference (`f32`), plus `abs`; a reference below
/// `f32`'s smallest normal may also come back as a zero, and a zero with
/// either sign (WGSL lets a driver flush subnormals and ignore a zero's
/// sign; NVIDIA's Vulkan driver does both: docs/ir.md). Integers and every non-`f32` value compare exactly.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    /// Units in the last place of the reference.
    pub ulps: f32,
    /// An absolute allowance.
    pub abs: f32,
}

impl Tolerance {
    /// Bit-for-bit equality.
    pub const EXACT: Tolerance = Tolerance { ulps: 0.0, abs: 0.0 };

    /// Whether `got` is within this tolerance of `want` (the launch's
    /// arguments after it, against the reference's).
    pub fn accepts(&self, got: &[ArgValue], want: &[ArgValue]) -> bool {
        if *self == Tolerance::EXACT {
            return got == want;
        }
        got.len() == want.len()
            && got.iter().zip(want).all(|(g, w)| match (g, w) {
                (ArgValue::Buffer(relok_ir::Scalar::F32, gb), ArgValue::Buffer(relok_ir::Scalar::F32, wb)) => {
                    gb.len() == wb.len()
                        && gb
                            .iter()
                            .zip(wb)
                            .all(|(&g, &w)| self.close(f32::from_bits(g as u32), f32::from_bits(w as u32)))
                }
                _ => g == w,
            })
    }

    /// Whether one `f32` result `got` is within this tolerance of `want`.
    pub fn close(&self, got: f32, want: f32) -> bool {
        if got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()) {
            return true;
        }
        if got == 0.0 && want.is_subnormal() {
            return true;
        }
        let ulp = f32::from_bits((want.abs().to_bits() & 0x7f80_0000).max(0x0080_0000)) * f32::EPSILON;
        (got - want).abs() <= self.ulps * ulp + self.abs
    }
}

/// Every example, in the order the demo runs them.
pub const EXAMPLES: &[Example] = &[
    Example {
        name: "saxpy",
        file: "examples/saxpy.rk",
        source: include_str!("../../../examples/saxpy.rk"),
        kernel: "saxpy",
        grid: [16, 1, 1],
        block: [256, 1, 1],
        args: &["4000", "2.5", "rand:4000:1", "rand:4000:2"],
        reference: saxpy,
        output: 3,
        exception: None,
        tolerance: Tolerance::EXACT,
    },
    Example {
        name: "reduce",
        file: "examples/reduce.rk",
        source: include_str!("../../../examples/reduce.rk"),
        kernel: "reduce",
        grid: [4, 1, 1],
        block: [256, 1, 1],
        args: &["1000", "iota:1000", "zeros:4"],
        reference: reduce,
        output: 2,
        exception: None,
        tolerance: Tolerance::EXACT,
    },
    Example {
        name: "histogram",
        file: "examples/histogram.rk",
        source: include_str!("../../../examples/histogram.rk"),
        kernel: "histogram",
        grid: [40, 1, 1],
        block: [256, 1, 1],
        args: &["10000", "16", "rand:10000:3", "zeros:16"],
        reference: histogram,
        output: 3,
        exception: None,
        tolerance: Tolerance::EXACT,
    },
    Example {
        name: "matmul",
        file: "examples/matmul.rk",
        source: include_str!("../../../examples/matmul.rk"),
        kernel: "matmul",
        grid: [2, 3, 1],
        block: [16, 16, 1],
        args: &["40", "24", "36", "rand:1440:4", "rand:864:5", "zeros:960"],
        reference: matmul,
        output: 5,
        exception: None,
        tolerance: Tolerance::EXACT,
    },
    Example {
        name: "scan",
        file: "examples/scan.rk",
        source: include_str!("../../../examples/scan.rk"),
        kernel: "scan",
        grid: [4, 1, 1],
        block: [256, 1, 1],
        args: &["1000", "rand:1000:6", "zeros:1000"],
        reference: scan,
        output: 2,
        exception: None,
        tolerance: Tolerance::EXACT,
    },
    Example {
        name: "softmax",
        file: "examples/softmax.rk",
        source: include_str!("../../../examples/softmax.rk"),
        kernel: "softmax",
        grid: [4, 1, 1],
        block: [256, 1, 1],
        // Rows of 0..1023: exp(x) alone would overflow from x = 89.
        args: &["256", "iota:1024", "zeros:1024"],
        reference: softmax,
        output: 2,
        exception: None,
        // docs/ir.md's bound for f32 `exp` is 1.5 ulp; the tree sum of 256
        // positive terms rounds at 8 levels (at most 8 * 0.5 ulp relative,
        // and the reference sums in another order, exactly); the division
        // 0.5 ulp, the reference's own rounding 0.5 ulp: 1.5 + 4 + 0.5 + 0.5.
        tolerance: Tolerance { ulps: 6.5, abs: 0.0 },
    },
    Example {
        name: "gelu",
        file: "examples/gelu.rk",
        source: include_str!("../../../examples/gelu.rk"),
        kernel: "gelu",
        grid: [1, 1, 1],
        block: [128, 1, 1],
        args: &[
            "97",
            "[-6.0, -5.875, -5.75, -5.625, -5.5, -5.375, -5.25, -5.125, -5.0, -4.875, -4.75, -4.625, -4.5, -4.375, -4.25, -4.125, -4.0, -3.875, -3.75, -3.625, -3.5, -3.375, -3.25, -3.125, -3.0, -2.875, -2.75, -2.625, -2.5, -2.375, -2.25, -2.125, -2.0, -1.875, -1.75, -1.625, -1.5, -1.375, -1.25, -1.125, -1.0, -0.875, -0.75, -0.625, -0.5, -0.375, -0.25, -0.125, 0.0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1.0, 1.125, 1.25, 1.375, 1.5, 1.625, 1.75, 1.875, 2.0, 2.125, 2.25, 2.375, 2.5, 2.625, 2.75, 2.875, 3.0, 3.125, 3.25, 3.375, 3.5, 3.625, 3.75, 3.875, 4.0, 4.125, 4.25, 4.375, 4.5, 4.625, 4.75, 4.875, 5.0, 5.125, 5.25, 5.375, 5.5, 5.625, 5.75, 5.875, 6.0]",
            "zeros:97",
        ],
        reference: gelu,
        output: 2,
        exception: None,
        // f32 `tanh` is within 2.5 ulp (docs/ir.md), at most 2.5 * 2^-24
        // absolute below 1, and its argument carries 4 roundings (at most
        // 2 * 2^-24 relative of a value whose tanh has slope <= 1): times
        // 0.5 |x| <= 3, 3 * 4.5 * 2^-24 < 1e-6 absolute; the other 3
        // roundings and the reference's, 2 ulp.
        tolerance: Tolerance { ulps: 2.0, abs: 1e-6 },
    },
    Example {
        name: "symbols",
        file: "examples/reloc/symbols.rk",
        source: include_str!("../../../examples/reloc/symbols.rk"),
        kernel: "classify",
        grid: [1, 1, 1],
        block: [1, 1, 1],
        args: &["sym:bar", "zeros:1"],
        reference: classify,
        output: 1,
        exception: None,
        tolerance: Tolerance::EXACT,
    },
    Example {
        name: "lookup",
        file: "examples/reloc/lookup.rk",
        source: include_str!("../../../examples/reloc/lookup.rk"),
        kernel: "lookup",
        grid: [4, 1, 1],
        block: [256, 1, 1],
        args: &["1000", "rand:1000:7", "zeros:1000"],
        reference: lookup,
        output: 2,
        exception: None,
        tolerance: Tolerance::EXACT,
    },
    Example {
        name: "boxed",
        file: "examples/reloc/boxed.rk",
        source: include_str!("../../../examples/reloc/boxed.rk"),
        kernel: "unbox",
        grid: [1, 1, 1],
        block: [1, 1, 1],
        args: &["sym:circle", "zeros:1"],
        reference: unbox,
        output: 1,
        exception: None,
        tolerance: Tolerance::EXACT,
    },
    Example {
        name: "throw",
        file: "examples/reloc/throw.rk",
        source: include_str!("../../../examples/reloc/throw.rk"),
        kernel: "check",
        grid: [4, 1, 1],
        block: [32, 1, 1],
        args: &[
            "40",
            "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, -38, 39, 40]",
        ],
        reference: unchanged,
        output: 1,
        exception: Some("negative input"),
        tolerance: Tolerance::EXACT,
    },
];

fn symbol(a: &ArgValue) -> &str {
    match a {
        ArgValue::Symbol(name) => name,
        _ => "",
    }
}

fn classify(args: &[ArgValue]) -> Vec<ArgValue> {
    let v = match symbol(&args[0]) {
        "foo" => 1i32,
        "bar" => 2,
        _ => -1,
    };
    with_buffer(args, 1, vec![u64::from(v as u32)])
}

/// The contents of `examples/reloc/lookup.rk`'s `@table`.
fn lookup_table(i: u64) -> u64 {
    (i * i * 7 + 3) % 1000
}

fn lookup(args: &[ArgValue]) -> Vec<ArgValue> {
    let n = scalar(&args[0]) as usize;
    let out = buffer(&args[1])[..n].iter().map(|&x| lookup_table(x % 256)).collect();
    with_buffer(args, 2, out)
}

fn unbox(args: &[ArgValue]) -> Vec<ArgValue> {
    with_buffer(args, 1, vec![if symbol(&args[0]) == "circle" { 42 } else { 0 }])
}

fn unchanged(args: &[ArgValue]) -> Vec<ArgValue> {
    args.to_vec()
}

fn scalar(a: &ArgValue) -> u64 {
    match a {
        ArgValue::Scalar(_, bits) => *bits,
        ArgValue::Buffer(..) | ArgValue::Symbol(_) => 0,
    }
}

fn buffer(a: &ArgValue) -> &[u64] {
    match a {
        ArgValue::Buffer(_, bits) => bits,
        ArgValue::Scalar(..) | ArgValue::Symbol(_) => &[],
    }
}

fn f32s(a: &ArgValue) -> Vec<f32> {
    buffer(a).iter().map(|&b| f32::from_bits(b as u32)).collect()
}

fn with_buffer(args: &[ArgValue], i: usize, bits: Vec<u64>) -> Vec<ArgValue> {
    let mut out = args.to_vec();
    if let ArgValue::Buffer(elem, _) = out[i] {
        out[i] = ArgValue::Buffer(elem, bits);
    }
    out
}

fn f32_bits(v: impl IntoIterator<Item = f32>) -> Vec<u64> {
    v.into_iter().map(|x| u64::from(x.to_bits())).collect()
}

fn saxpy(args: &[ArgValue]) -> Vec<ArgValue> {
    let n = scalar(&args[0]) as usize;
    let a = f32::from_bits(scalar(&args[1]) as u32);
    let (x, mut y) = (f32s(&args[2]), f32s(&args[3]));
    let n = n.min(x.len()).min(y.len());
    reference::saxpy(a, &x[..n], &mut y[..n]);
    with_buffer(args, 3, f32_bits(y))
}

fn softmax(args: &[ArgValue]) -> Vec<ArgValue> {
    let cols = scalar(&args[0]) as usize;
    let x = f32s(&args[1]);
    let mut y = vec![0.0; x.len()];
    for (row, out) in x.chunks(cols).zip(y.chunks_mut(cols)) {
        reference::softmax_row(row, out);
    }
    with_buffer(args, 2, f32_bits(y))
}

fn gelu(args: &[ArgValue]) -> Vec<ArgValue> {
    let n = scalar(&args[0]) as usize;
    let x = f32s(&args[1]);
    with_buffer(args, 2, f32_bits(x[..n].iter().map(|&v| reference::gelu(v))))
}

fn reduce(args: &[ArgValue]) -> Vec<ArgValue> {
    let n = scalar(&args[0]) as usize;
    let x = f32s(&args[1]);
    let blocks = buffer(&args[2]).len();
    let sums = (0..blocks).map(|b| reference::block_sum(&x[(b * 256).min(n)..((b + 1) * 256).min(n)]));
    with_buffer(args, 2, f32_bits(sums))
}

fn histogram(args: &[ArgValue]) -> Vec<ArgValue> {
    let n = scalar(&args[0]) as usize;
    let bins = scalar(&args[1]) as u32;
    let data: Vec<u32> = buffer(&args[2])[..n].iter().map(|&d| d as u32).collect();
    let mut hist: Vec<u32> = buffer(&args[3]).iter().map(|&h| h as u32).collect();
    reference::histogram(&data, bins, &mut hist);
    with_buffer(args, 3, hist.into_iter().map(u64::from).collect())
}

fn matmul(args: &[ArgValue]) -> Vec<ArgValue> {
    let (m, n, k) = (scalar(&args[0]) as usize, scalar(&args[1]) as usize, scalar(&args[2]) as usize);
    let (a, b) = (f32s(&args[3]), f32s(&args[4]));
    let mut c = f32s(&args[5]);
    for row in 0..m {
        for col in 0..n {
            c[row * n + col] = reference::matmul_at(&a, &b, n, k, row, col);
        }
    }
    with_buffer(args, 5, f32_bits(c))
}

fn scan(args: &[ArgValue]) -> Vec<ArgValue> {
    let n = scalar(&args[0]) as usize;
    let x: Vec<u32> = buffer(&args[1])[..n].iter().map(|&v| v as u32).collect();
    let mut out: Vec<u32> = buffer(&args[2]).iter().map(|&v| v as u32).collect();
    for (block, sums) in x.chunks(256).zip(out.chunks_mut(256)) {
        reference::scan_block(block, sums);
    }
    with_buffer(args, 2, out.into_iter().map(u64::from).collect())
}

/// What the example kernels of `examples/*.rk` compute, in plain Rust on
/// typed slices: the references above apply them to `--arg` values, and
/// `relok bench kernels` checks each kernel against them at sizes where
/// the cpu device would take minutes.
pub mod reference {
    /// saxpy: `y[i] = a * x[i] + y[i]` (a multiply, then an add).
    pub fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
        for (y, &x) in y.iter_mut().zip(x) {
            *y += a * x;
        }
    }

    /// GELU (the tanh form) of one element, in `f64`, rounded once.
    pub fn gelu(x: f32) -> f32 {
        let c = (2.0 / std::f64::consts::PI).sqrt();
        let v = f64::from(x);
        (0.5 * v * (1.0 + (c * (v + 0.044715 * v * v * v)).tanh())) as f32
    }

    /// The sum of one block's elements. The kernel adds in a tree; with
    /// integer-valued inputs whose sum stays below 2^24 every partial sum
    /// is exact, so the order does not matter.
    pub fn block_sum(x: &[f32]) -> f32 {
        x.iter().sum()
    }

    /// The softmax of one row into `out`, in `f64`, each element rounded
    /// once: the exact softmax to `f32` precision.
    pub fn softmax_row(row: &[f32], out: &mut [f32]) {
        let m = row.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
        let e: Vec<f64> = row.iter().map(|&v| f64::from(v - m).exp()).collect();
        let s: f64 = e.iter().sum();
        for (o, v) in out.iter_mut().zip(e) {
            *o = (v / s) as f32;
        }
    }

    /// The inclusive prefix sum of one block into `out`, wrapping as
    /// `u32` addition does.
    pub fn scan_block(x: &[u32], out: &mut [u32]) {
        let mut acc = 0u32;
        for (o, &v) in out.iter_mut().zip(x) {
            acc = acc.wrapping_add(v);
            *o = acc;
        }
    }

    /// Adds one count per element to `hist[data[i] % bins]`.
    pub fn histogram(data: &[u32], bins: u32, hist: &mut [u32]) {
        for &d in data {
            hist[(d % bins) as usize] += 1;
        }
    }

    /// Entry (`row`, `col`) of `a * b` (`a`: rows of `k`, `b`: `k` rows of
    /// `n`, row-major) in the kernel's order: `k` ascending, a multiply
    /// then an add.
    pub fn matmul_at(a: &[f32], b: &[f32], n: usize, k: usize, row: usize, col: usize) -> f32 {
        let mut acc = 0.0f32;
        for kk in 0..k {
            acc += a[row * k + kk] * b[kk * n + col];
        }
        acc
    }
}
