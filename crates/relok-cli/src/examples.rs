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
    },
    Example {
        name: "throw",
        file: "examples/reloc/throw.rk",
        source: include_str!("../../../examples/reloc/throw.rk"),
        kernel: "check",
        grid: [4, 1, 1],
        block: [32, 1, 1],
        args: &["40", "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, -38, 39, 40]"],
        reference: unchanged,
        output: 1,
        exception: Some("negative input"),
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
