//! The example kernels of `examples/*.rk`, each with its launch, its inputs
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
    },
];

fn scalar(a: &ArgValue) -> u64 {
    match a {
        ArgValue::Scalar(_, bits) => *bits,
        ArgValue::Buffer(..) => 0,
    }
}

fn buffer(a: &ArgValue) -> &[u64] {
    match a {
        ArgValue::Buffer(_, bits) => bits,
        ArgValue::Scalar(..) => &[],
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
    for i in 0..n.min(y.len()) {
        y[i] += a * x[i];
    }
    with_buffer(args, 3, f32_bits(y))
}

fn reduce(args: &[ArgValue]) -> Vec<ArgValue> {
    // The kernel adds in a tree; with integer-valued inputs below 2^24 every
    // partial sum is exact, so the order does not matter.
    let n = scalar(&args[0]) as usize;
    let x = f32s(&args[1]);
    let blocks = buffer(&args[2]).len();
    let sums = (0..blocks).map(|b| (b * 256..((b + 1) * 256).min(n)).map(|i| x[i]).sum::<f32>());
    with_buffer(args, 2, f32_bits(sums))
}

fn histogram(args: &[ArgValue]) -> Vec<ArgValue> {
    let n = scalar(&args[0]) as usize;
    let bins = scalar(&args[1]);
    let mut hist = buffer(&args[3]).to_vec();
    for &d in &buffer(&args[2])[..n] {
        hist[(d % bins) as usize] += 1;
    }
    with_buffer(args, 3, hist)
}

fn matmul(args: &[ArgValue]) -> Vec<ArgValue> {
    let (m, n, k) = (scalar(&args[0]) as usize, scalar(&args[1]) as usize, scalar(&args[2]) as usize);
    let (a, b) = (f32s(&args[3]), f32s(&args[4]));
    let mut c = f32s(&args[5]);
    for row in 0..m {
        for col in 0..n {
            // Same order as the kernel: k ascending, multiply then add.
            let mut acc = 0.0f32;
            for kk in 0..k {
                acc += a[row * k + kk] * b[kk * n + col];
            }
            c[row * n + col] = acc;
        }
    }
    with_buffer(args, 5, f32_bits(c))
}

fn scan(args: &[ArgValue]) -> Vec<ArgValue> {
    let n = scalar(&args[0]) as usize;
    let x = buffer(&args[1]);
    let mut out = buffer(&args[2]).to_vec();
    for i in 0..n {
        let start = i / 256 * 256;
        out[i] = x[start..=i].iter().fold(0u32, |acc, &v| acc.wrapping_add(v as u32)).into();
    }
    with_buffer(args, 2, out)
}
