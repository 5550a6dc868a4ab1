//! Runs each Rust twin (kernels.rs) and its `.rk` version on one context,
//! on the same inputs, and compares what they leave in their buffers (or
//! the exception they raise).

use super::kernels;
use relok::{Context, Error, Grid, Program};

/// One twin's comparison.
#[derive(Debug)]
pub struct Outcome {
    /// The example's name.
    pub name: &'static str,
    /// Lines of the Rust kernel (its `fn`, without blank lines).
    pub rust_lines: usize,
    /// Lines of the `.rk` kernel (without comments and blank lines).
    pub rk_lines: usize,
    /// Whether both left the same results.
    pub equal: bool,
    /// What the Rust twin left (its output's bits, or its exception), to
    /// compare devices.
    pub result: String,
    /// Its `f32` output, for the comparisons within ulps.
    pub floats: Vec<f32>,
}

impl Outcome {
    /// Whether this outcome on a device equals the cpu device's: exactly,
    /// except on wgpu for nbody (whose sums of quotients are within 1e-5
    /// of its largest result) and for the kernels that divide floats or use the math
    /// library (softmax, gelu), within 2 ulp (a driver's f32 division may
    /// differ by an ulp: docs/wgpu.md), or a zero where the cpu device's
    /// result is subnormal or a zero of the other sign (WGSL lets a driver
    /// flush subnormals and ignore a zero's sign; NVIDIA's Vulkan driver
    /// does both: docs/ir.md). gelu's `1 + tanh(..)` cancels where `tanh`
    /// is near -1, so a `tanh` within its wgpu bound (3.5 ulp, docs/ir.md)
    /// moves a result near 0 by up to about 2e-7 × |x| absolutely (the
    /// inputs here have |x| <= 6): gelu's results may differ by 2e-6 there.
    pub fn same_as(&self, cpu: &Outcome, wgpu: bool) -> bool {
        if wgpu && self.name == "nbody" {
            // Each term divides (2.5 ulp on wgpu): the sums of 200 terms
            // within 1e-5 of the largest result.
            let big = cpu.floats.iter().fold(0.0f32, |m, x| m.max(x.abs()));
            return self.floats.len() == cpu.floats.len()
                && self.floats.iter().zip(&cpu.floats).all(|(&a, &b)| (a - b).abs() <= 1e-5 * big);
        }
        if wgpu && matches!(self.name, "softmax" | "gelu") {
            let cancels = if self.name == "gelu" { 2e-6 } else { 0.0 };
            // (`==`: a zero's sign may differ, which WGSL allows.)
            let close = |a: f32, b: f32| {
                a == b
                    || a.to_bits().abs_diff(b.to_bits()) <= 2
                    || (a == 0.0 && b.is_subnormal())
                    || (a - b).abs() <= cancels
            };
            return self.floats.len() == cpu.floats.len()
                && self.floats.iter().zip(&cpu.floats).all(|(&a, &b)| close(a, b));
        }
        self.result == cpu.result
    }

    /// Where this outcome's result first differs from `cpu`'s (for a
    /// failure's message).
    pub fn difference(&self, cpu: &Outcome) -> String {
        let at = self
            .result
            .bytes()
            .zip(cpu.result.bytes())
            .position(|(a, b)| a != b)
            .unwrap_or(self.result.len().min(cpu.result.len()));
        let from = at.saturating_sub(40);
        let piece = |s: &str| s.get(from..(at + 80).min(s.len())).unwrap_or("").to_owned();
        format!("at byte {at}: here …{}… cpu …{}…", piece(&self.result), piece(&cpu.result))
    }
}

const KERNELS_RS: &str = include_str!("kernels.rs");

/// The device functions a twin calls (their lines count with its own).
const DEVICE_FNS: &[(&str, &str)] = &[("tokens", "class")];

/// Lines of twin `name` (its function without blank lines, with the device
/// functions it calls), as docs/kernels.md counts them.
pub fn rust_lines(name: &str) -> usize {
    let lines = |f: &str| {
        let start = KERNELS_RS.find(&format!("fn {f}(")).unwrap_or(0);
        let body = &KERNELS_RS[start..];
        let end = body.find("\n}\n").map_or(body.len(), |e| e + 2);
        body[..end].lines().filter(|l| !l.trim().is_empty()).count()
    };
    lines(name) + DEVICE_FNS.iter().filter(|(k, _)| *k == name).map(|(_, f)| lines(f)).sum::<usize>()
}

fn rk_lines(text: &str) -> usize {
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with(';') && !l.starts_with("import"))
        .count()
}

fn bits(v: &[f32]) -> String {
    format!("{:?}", v.iter().map(|x| x.to_bits()).collect::<Vec<_>>())
}

/// SplitMix64, as `relok run`'s `rand:N:SEED`.
pub fn rand(n: usize, seed: u64) -> Vec<u64> {
    (0..n as u64).map(|i| rand_at(seed, i)).collect()
}

/// Element `i` of [`rand`]`(_, seed)`, computed directly: SplitMix64's
/// state after `i + 1` steps is `seed + (i + 1) * 0x9e37_79b9_7f4a_7c15`.
pub fn rand_at(seed: u64, i: u64) -> u64 {
    let mut z = seed.wrapping_add(i.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn floats(n: usize, seed: u64) -> Vec<f32> {
    rand(n, seed).into_iter().map(|z| (z >> 40) as f32 / (1u64 << 24) as f32).collect()
}

fn ints(n: usize, seed: u64) -> Vec<u32> {
    rand(n, seed).into_iter().map(|z| (z >> 48) as u32).collect()
}

macro_rules! rk {
    ($file:literal) => {
        (include_str!(concat!("../../../../examples/", $file)), concat!("examples/", $file))
    };
}

fn rk_kernel(ctx: &Context, (text, file): (&str, &str), name: &str) -> Result<relok::Kernel, Error> {
    ctx.kernel(&Program::parse_named(file, text)?, name)
}

/// Every twin on `ctx`.
pub fn all(ctx: &Context) -> Result<Vec<Outcome>, Error> {
    let s = ctx.stream();
    let mut out = Vec::new();
    let mut push = |name: &'static str, rk: (&str, &str), equal: bool, result: String, floats: Vec<f32>| {
        out.push(Outcome { name, rust_lines: rust_lines(name), rk_lines: rk_lines(rk.0), equal, result, floats });
    };

    // saxpy
    let src = rk!("saxpy.rk");
    let (n, a) = (4000usize, 2.5f32);
    let x = ctx.upload(&floats(n, 1))?;
    let (mut y1, mut y2) = (ctx.upload(&floats(n, 2))?, ctx.upload(&floats(n, 2))?);
    rk_kernel(ctx, src, "saxpy")?.launch(&s, Grid::cover(n, 256), (n as u32, a, &x, &mut y1))?;
    kernels::saxpy::launch(&s, Grid::cover(n, 256), n as u32, a, &x, &mut y2)?;
    s.synchronize()?;
    let (y1, y2) = (y1.download()?, y2.download()?);
    push("saxpy", src, y1 == y2, bits(&y2), Vec::new());

    // reduce
    let src = rk!("reduce.rk");
    let n = 1000usize;
    let x = ctx.upload(&(0..n).map(|i| i as f32).collect::<Vec<_>>())?;
    let (mut o1, mut o2) = (ctx.zeros::<f32>(4)?, ctx.zeros::<f32>(4)?);
    rk_kernel(ctx, src, "reduce")?.launch(&s, Grid::new(4, 256), (n as u32, &x, &mut o1))?;
    kernels::reduce::launch(&s, Grid::new(4, 256), n as u32, &x, &mut o2)?;
    s.synchronize()?;
    let (o1, o2) = (o1.download()?, o2.download()?);
    push("reduce", src, o1 == o2, bits(&o2), Vec::new());

    // histogram
    let src = rk!("histogram.rk");
    let (n, bins) = (10_000usize, 16u32);
    let data = ctx.upload(&ints(n, 3))?;
    let (mut h1, mut h2) = (ctx.zeros::<u32>(16)?, ctx.zeros::<u32>(16)?);
    rk_kernel(ctx, src, "histogram")?.launch(&s, Grid::new(40, 256), (n as u32, bins, &data, &mut h1))?;
    kernels::histogram::launch(&s, Grid::new(40, 256), n as u32, bins, &data, &mut h2)?;
    s.synchronize()?;
    let (h1, h2) = (h1.download()?, h2.download()?);
    push("histogram", src, h1 == h2 && h1.iter().sum::<u32>() == n as u32, format!("{h2:?}"), Vec::new());

    // matmul
    let src = rk!("matmul.rk");
    let (m, nn, k) = (40u32, 24u32, 36u32);
    let a = ctx.upload(&floats((m * k) as usize, 4))?;
    let b = ctx.upload(&floats((k * nn) as usize, 5))?;
    let (mut c1, mut c2) = (ctx.zeros::<f32>((m * nn) as usize)?, ctx.zeros::<f32>((m * nn) as usize)?);
    let grid = Grid::new([2, 3, 1], [16, 16, 1]);
    rk_kernel(ctx, src, "matmul")?.launch(&s, grid, (m, nn, k, &a, &b, &mut c1))?;
    kernels::matmul::launch(&s, grid, m as usize, nn as usize, k as usize, &a, &b, &mut c2)?;
    s.synchronize()?;
    let (c1, c2) = (c1.download()?, c2.download()?);
    push("matmul", src, c1 == c2, bits(&c2), Vec::new());

    // scan
    let src = rk!("scan.rk");
    let n = 1000usize;
    let x = ctx.upload(&ints(n, 6))?;
    let (mut o1, mut o2) = (ctx.zeros::<u32>(n)?, ctx.zeros::<u32>(n)?);
    rk_kernel(ctx, src, "scan")?.launch(&s, Grid::new(4, 256), (n as u32, &x, &mut o1))?;
    kernels::scan::launch(&s, Grid::new(4, 256), n as u32, &x, &mut o2)?;
    s.synchronize()?;
    let (o1, o2) = (o1.download()?, o2.download()?);
    push("scan", src, o1 == o2, format!("{o2:?}"), Vec::new());

    // lookup (a host table)
    let src = rk!("reloc/lookup.rk");
    let n = 1000usize;
    let x = ctx.upload(&ints(n, 7))?;
    let (mut o1, mut o2) = (ctx.zeros::<u32>(n)?, ctx.zeros::<u32>(n)?);
    rk_kernel(ctx, src, "lookup")?.launch(&s, Grid::cover(n, 256), (n as u32, &x, &mut o1))?;
    kernels::lookup::launch(&s, Grid::cover(n, 256), n as u32, &x, &mut o2)?;
    s.synchronize()?;
    let (o1, o2) = (o1.download()?, o2.download()?);
    push("lookup", src, o1 == o2, format!("{o2:?}"), Vec::new());

    // classify (symbols)
    let src = rk!("reloc/symbols.rk");
    let mut equal = true;
    let mut results = Vec::new();
    for name in ["foo", "bar", "baz"] {
        let sym = ctx.symbol(name);
        let (mut o1, mut o2) = (ctx.zeros::<i32>(1)?, ctx.zeros::<i32>(1)?);
        rk_kernel(ctx, src, "classify")?.launch(&s, Grid::new(1, 1), (&sym, &mut o1))?;
        kernels::classify::launch(&s, Grid::new(1, 1), &sym, &mut o2)?;
        s.synchronize()?;
        let (o1, o2) = (o1.download()?, o2.download()?);
        equal &= o1 == o2;
        results.push(o2[0]);
    }
    push("classify", src, equal, format!("{results:?}"), Vec::new());

    // count (a runtime global): the .rk then the Rust kernel count on one
    // cell, so the Rust kernel's old values are the .rk's plus n.
    let src = rk!("reloc/counter.rk");
    let n = 256usize;
    let before = ctx.global_value(&kernels::RELOK_COUNTER)?;
    let (mut o1, mut o2) = (ctx.zeros::<u64>(n)?, ctx.zeros::<u64>(n)?);
    rk_kernel(ctx, src, "count")?.launch(&s, Grid::new(2, 128), (&mut o1,))?;
    s.synchronize()?;
    kernels::count::launch(&s, Grid::new(2, 128), &mut o2)?;
    s.synchronize()?;
    let (mut o1, mut o2) = (o1.download()?, o2.download()?);
    o1.sort_unstable();
    o2.sort_unstable();
    let shifted: Vec<u64> = o1.iter().map(|v| v + n as u64).collect();
    let after = ctx.global_value(&kernels::RELOK_COUNTER)?;
    let relative: Vec<u64> = o2.iter().map(|v| v - before).collect();
    push(
        "count",
        src,
        o2 == shifted && o1[0] == before && after == before + 2 * n as u64,
        format!("{relative:?}"),
        Vec::new(),
    );

    // softmax (math: exp), as the demo runs it: rows of 0..1023
    let src = rk!("softmax.rk");
    let x = ctx.upload(&(0..1024).map(|v| v as f32).collect::<Vec<_>>())?;
    let (mut y1, mut y2) = (ctx.zeros::<f32>(1024)?, ctx.zeros::<f32>(1024)?);
    rk_kernel(ctx, src, "softmax")?.launch(&s, Grid::new(4, 256), (256u32, &x, &mut y1))?;
    kernels::softmax::launch(&s, Grid::new(4, 256), 256, &x, &mut y2)?;
    s.synchronize()?;
    let (y1, y2) = (y1.download()?, y2.download()?);
    push("softmax", src, y1 == y2, bits(&y2), y2);

    // gelu (math: tanh) on -6, -5.875, …, 6
    let src = rk!("gelu.rk");
    let x = ctx.upload(&(0..97).map(|k| -6.0 + k as f32 * 0.125).collect::<Vec<_>>())?;
    let (mut y1, mut y2) = (ctx.zeros::<f32>(97)?, ctx.zeros::<f32>(97)?);
    rk_kernel(ctx, src, "gelu")?.launch(&s, Grid::new(1, 128), (97u32, &x, &mut y1))?;
    kernels::gelu::launch(&s, Grid::new(1, 128), 97, &x, &mut y2)?;
    s.synchronize()?;
    let (y1, y2) = (y1.download()?, y2.download()?);
    push("gelu", src, y1 == y2, bits(&y2), y2);

    // throw (an exception)
    let src = rk!("reloc/throw.rk");
    let x: Vec<i32> = (1..=40).map(|v| if v == 38 { -38 } else { v }).collect();
    let x = ctx.upload(&x)?;
    rk_kernel(ctx, src, "check")?.launch(&s, Grid::new(4, 32), (40u32, &x))?;
    let e1 = s.synchronize();
    kernels::check::launch(&s, Grid::new(4, 32), 40, &x)?;
    let e2 = s.synchronize();
    let thrown = format!("{e2:?}");
    let equal = match (e1, e2) {
        (
            Err(Error::Exception { message: m1, block: b1, thread: t1, .. }),
            Err(Error::Exception { message: m2, block: b2, thread: t2, .. }),
        ) => m2.ends_with(&format!(": {m1}")) && b1 == b2 && t1 == t2,
        _ => false,
    };
    push("check", src, equal, thrown, Vec::new());

    // grey (bytes: u8 loads and stores, four threads' bytes in a word)
    let src = rk!("grey.rk");
    let n = 333usize;
    let px: Vec<u8> = rand(4 * n, 11).into_iter().map(|z| (z >> 56) as u8).collect();
    let px = ctx.upload(&px)?;
    let (mut g1, mut g2) = (ctx.zeros::<u8>(4 * n)?, ctx.zeros::<u8>(4 * n)?);
    rk_kernel(ctx, src, "grey")?.launch(&s, Grid::cover(n, 64), (n as u32, &px, &mut g1))?;
    kernels::grey::launch(&s, Grid::cover(n, 64), n as u32, &px, &mut g2)?;
    s.synchronize()?;
    let (g1, g2) = (g1.download()?, g2.download()?);
    push("grey", src, g1 == g2, format!("{g2:?}"), Vec::new());

    // tokens (a `match` on bytes in a device function)
    let src = rk!("tokens.rk");
    let text = b"let x_1 = 42 + y*(z - 7);\n\tif a/b == c { return foo_bar9 }  # done?".repeat(5);
    let n = text.len();
    let text = ctx.upload(&text)?;
    let (mut t1, mut t2) = (ctx.zeros::<u32>(n)?, ctx.zeros::<u32>(n)?);
    rk_kernel(ctx, src, "tokens")?.launch(&s, Grid::cover(n, 64), (n as u32, &text, &mut t1))?;
    kernels::tokens::launch(&s, Grid::cover(n, 64), n as u32, &text, &mut t2)?;
    s.synchronize()?;
    let (t1, t2) = (t1.download()?, t2.download()?);
    push("tokens", src, t1 == t2, format!("{t2:?}"), Vec::new());

    // nbody (a slice of structs, a loop over its elements)
    let src = rk!("nbody.rk");
    let n = 200usize;
    let f = floats(4 * n, 12);
    let bodies: Vec<kernels::Body> =
        f.chunks(4).map(|c| kernels::Body { x: c[0], y: c[1], z: c[2], m: 0.5 + c[3] }).collect();
    let p = ctx.upload(&bodies)?;
    let zero = kernels::Body { x: 0.0, y: 0.0, z: 0.0, m: 0.0 };
    let (mut a1, mut a2) = (ctx.upload(&vec![zero; n])?, ctx.upload(&vec![zero; n])?);
    rk_kernel(ctx, src, "nbody")?.launch(&s, Grid::cover(n, 64), (n as u32, &p, &mut a1))?;
    kernels::nbody::launch(&s, Grid::cover(n, 64), n as u32, &p, &mut a2)?;
    s.synchronize()?;
    let (a1, a2) = (a1.download()?, a2.download()?);
    let parts: Vec<f32> = a2.iter().flat_map(|b| [b.x, b.y, b.z, b.m]).collect();
    push("nbody", src, a1 == a2, bits(&parts), parts);
    Ok(out)
}
