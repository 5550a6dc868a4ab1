//! `relok bench kernels`: how fast the example kernels run once started,
//! against the same algorithm in CUDA C and the vendor libraries, in one
//! run (docs/benchmarks.md holds results).
//!
//! On every device asked for (by default every GPU found: cuda, and wgpu
//! on a hardware adapter; the cpu device only when named), each example
//! kernel of `examples/*.rk` — saxpy, gelu, reduce, softmax, scan,
//! histogram, matmul — and its Rust twin (`#[relok::kernel]`,
//! `crates/relok/examples/twins/kernels.rs`) run through the facade as a
//! user's program runs them: a [`Context`] with the facade's default
//! options, `ctx.kernel` or the twin's typed `launch`, `Kernel::launch` on
//! a [`Stream`] — once per set of the facade's options asked for
//! (`--facade`, [`FACADE`]: its defaults, checked mode on, checked mode
//! off; each a context of its own). Sizes: [`Sizes::FULL`] (2^28 elements; softmax 2^20 rows
//! of 256; matmul 4096³), `--quick` [`Sizes::QUICK`], or `--size` and
//! `--matmul`; on wgpu the 1-D kernels take at most 65 535 × 256 elements
//! (the largest grid wgpu takes is 65 535 blocks).
//!
//! Per kernel and variant:
//!
//! - **inputs** are pseudo-random (never zeros), made once in plain Rust
//!   (a device that takes a smaller size takes a prefix) and uploaded;
//! - **checked first**: the output is poisoned (NaN, `u32::MAX`; the
//!   histogram zeroed, saxpy's `y` rewritten), the kernel launched once and
//!   its whole result compared with the plain Rust reference
//!   ([`crate::examples::reference`], within the example's tolerance;
//!   matmul at [`MATMUL_SAMPLES`] entries and every element finite). A
//!   wrong result is a record with an error and no time: a wrong kernel
//!   is never reported as fast;
//! - **timed**: one launch timed alone says how many make a batch of about
//!   `batch_ms`; the time is the median over `batches` batches of one
//!   batch's host time (the launches enqueued back to back, then one
//!   synchronisation) over its launches. Where one set of buffers is
//!   smaller than [`ROTATE_BYTES`] (several times a GPU's L2), the
//!   launches rotate among up to [`MAX_SETS`] copies, so they do not run
//!   from the cache;
//! - **GB/s** counts the fewest bytes the kernel must move (each input read
//!   once, each output written once), **GFLOP/s** (matmul) 2·m·n·k;
//! - **registers** per thread where the device reports them
//!   (`Kernel::registers`: cuda).
//!
//! The CUDA C twins (`examples/cuda/*.cu`: the same algorithm, block size
//! and access pattern, compiled by NVRTC through CuPy's `RawKernel`), the
//! library baselines (cuBLAS SGEMM, CuPy `sum`, `cumsum`, `bincount`,
//! torch `softmax` and `gelu`) and the copy ceiling (a device-to-device
//! copy, bytes read plus written) come from `scripts/bench_kernels.py`, a
//! child process run after the devices, at every size a device took, with
//! the same checks and the same timing, when `python3` imports CuPy;
//! otherwise they are skipped, saying why. Each record's `ratio` is its
//! time over the CUDA C twin's at the same kernel and size (above 1:
//! slower than CUDA C).

use super::{median, nvidia_driver, print_json, repo, utc_date};
use crate::examples::{EXAMPLES, Example, Tolerance, reference};
use crate::rust_twins::kernels;
use crate::rust_twins::run::rand_at;
use relok::{Buffer, Context, ContextBuilder, DeviceKind, Grid, Kernel, Program, Stream};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fmt::Debug;
use std::process::Command;
use std::time::{Instant, SystemTime};

/// The example kernels measured, in the order of the report.
pub const KERNELS: [&str; 7] = ["saxpy", "gelu", "reduce", "softmax", "scan", "histogram", "matmul"];
/// Threads per block of every 1-D kernel, and softmax's columns.
pub const BLOCK: usize = 256;
/// The most blocks wgpu launches along one dimension.
pub const WGPU_MAX_BLOCKS: usize = 65_535;
/// Below this many bytes per set of buffers, launches rotate among copies
/// (four times the 60 MB L2 of an H200, rounded up).
pub const ROTATE_BYTES: usize = 256 << 20;
/// The most copies launches rotate among.
pub const MAX_SETS: usize = 8;
/// matmul's entries compared with the reference (the whole product would
/// take the host minutes at 4096³).
pub const MATMUL_SAMPLES: usize = 1024;
/// The histogram's bins.
pub const BINS: u32 = 256;
/// saxpy's `a`.
pub const SAXPY_A: f32 = 2.5;
/// The variant of the CUDA C twins, which every ratio is taken to.
pub const CUDA_C: &str = "CUDA C (NVRTC)";

/// The problem sizes of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Sizes {
    /// Elements of the 1-D kernels, a multiple of [`BLOCK`]: softmax takes
    /// them as rows of [`BLOCK`] columns.
    pub elements: usize,
    /// The side of matmul's square matrices.
    pub matmul: usize,
}

impl Sizes {
    /// What the timings of docs/benchmarks.md use.
    pub const FULL: Sizes = Sizes { elements: 1 << 28, matmul: 4096 };
    /// `--quick`: a smoke test (cache-resident on a GPU).
    pub const QUICK: Sizes = Sizes { elements: 1 << 16, matmul: 256 };

    /// These sizes as a device of `kind` takes them: on wgpu at most
    /// [`WGPU_MAX_BLOCKS`] blocks of the 1-D kernels.
    pub fn on(self, kind: DeviceKind) -> Sizes {
        match kind {
            DeviceKind::Wgpu => Sizes { elements: self.elements.min(WGPU_MAX_BLOCKS * BLOCK), ..self },
            DeviceKind::Cpu | DeviceKind::Cuda => self,
        }
    }

    /// The size of `kernel` as the records name it: elements (`268435456`),
    /// softmax's rows (`1048576x256`), matmul's side (`4096^3`).
    pub fn label(self, kernel: &str) -> String {
        match kernel {
            "softmax" => format!("{}x{BLOCK}", self.elements / BLOCK),
            "matmul" => format!("{}^3", self.matmul),
            _ => self.elements.to_string(),
        }
    }
}

/// What `relok bench kernels` is asked to do.
#[derive(Debug, Clone)]
pub struct Options {
    /// Device specs (`cuda`, `wgpu`, `cpu`, `cuda:1`, …).
    pub devices: Vec<String>,
    /// The kernels to measure (of [`KERNELS`]).
    pub kernels: Vec<String>,
    /// The sets of the facade's options to measure them under (of
    /// [`FACADE`]), each a context of its own.
    pub facade: Vec<String>,
    /// The largest sizes (a device may take smaller: [`Sizes::on`]).
    pub sizes: Sizes,
    /// Timed batches per measurement.
    pub batches: usize,
    /// The host time a batch aims at, ms.
    pub batch_ms: f64,
}

impl Options {
    /// The options from the command line: `devices` (none: every GPU
    /// found), `kernels` and `facade` (none: all), `size` and `matmul`
    /// (none: the full or quick sizes), `batches` (none: 25, quick 3).
    pub fn new(
        devices: Vec<String>,
        kernels: Vec<String>,
        facade: Vec<String>,
        size: Option<usize>,
        matmul: Option<usize>,
        batches: Option<usize>,
        quick: bool,
    ) -> Result<Options, String> {
        let base = if quick { Sizes::QUICK } else { Sizes::FULL };
        let sizes = Sizes { elements: size.unwrap_or(base.elements), matmul: matmul.unwrap_or(base.matmul) };
        if sizes.elements == 0 || !sizes.elements.is_multiple_of(BLOCK) || u32::try_from(sizes.elements).is_err() {
            return Err(format!("--size {}: not a positive multiple of {BLOCK} below 2^32", sizes.elements));
        }
        // 3 · side² f32 below 2^32 bytes a buffer, side² below 2^32.
        if sizes.matmul == 0 || sizes.matmul > 30_000 {
            return Err(format!("--matmul {}: not between 1 and 30000", sizes.matmul));
        }
        if let Some(k) = kernels.iter().find(|k| !KERNELS.contains(&k.as_str())) {
            return Err(format!("unknown kernel `{k}` (expected some of {})", KERNELS.join(", ")));
        }
        let kernels = if kernels.is_empty() { KERNELS.iter().map(|k| (*k).to_owned()).collect() } else { kernels };
        if let Some(f) = facade.iter().find(|f| !FACADE.contains(&f.as_str())) {
            return Err(format!("unknown facade options `{f}` (expected some of {})", FACADE.join(", ")));
        }
        let facade = if facade.is_empty() { FACADE.iter().map(|f| (*f).to_owned()).collect() } else { facade };
        let batches = batches.unwrap_or(if quick { 3 } else { 25 });
        if batches == 0 {
            return Err("--batches 0: at least one batch is timed".into());
        }
        let devices = if devices.is_empty() { super::gpu_devices() } else { devices };
        if devices.is_empty() {
            return Err(
                "no GPU found (cuda, or wgpu on a hardware adapter); name one with --devices (cpu, wgpu: lavapipe)"
                    .into(),
            );
        }
        Ok(Options { devices, kernels, facade, sizes, batches, batch_ms: if quick { 1.0 } else { 20.0 } })
    }
}

/// One measurement: a kernel's variant on one device at one size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// When the run started, UTC.
    pub date: String,
    /// The device, as its context (or CuPy) names it.
    pub device: String,
    /// `cuda`, `wgpu` or `cpu`.
    pub backend: String,
    /// The machine's NVIDIA GPU and driver (`nvidia-smi`), when it answers.
    pub driver: Option<String>,
    /// The example kernel (`saxpy` …), or `copy` for the copy ceiling.
    pub kernel: String,
    /// What ran: `.rk, facade default`, `Rust twin, facade default`,
    /// [`CUDA_C`], a library (`cuBLAS SGEMM`) or the copy.
    pub variant: String,
    /// The size ([`Sizes::label`]).
    pub size: String,
    /// Median time per launch, ms; none when the measurement failed.
    pub ms: Option<f64>,
    /// Bytes moved per second (read + written, the fewest the kernel must
    /// move), GB/s; none for matmul.
    pub gb_s: Option<f64>,
    /// Floating-point operations per second, GFLOP/s (matmul).
    pub gflop_s: Option<f64>,
    /// `ms` over the CUDA C twin's at the same kernel and size.
    pub ratio: Option<f64>,
    /// Registers per thread, where the device reports them.
    pub registers: Option<u32>,
    /// What the result was compared with before it was timed.
    pub checked: Option<String>,
    /// Why there is no time: a wrong result, a failed launch.
    pub error: Option<String>,
    /// Batches timed.
    pub batches: usize,
    /// Launches per batch.
    pub launches: usize,
}

/// A part of the run that did not run, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skipped {
    /// What was skipped.
    pub skipped: String,
    /// Why.
    pub why: String,
}

/// Everything `relok bench kernels` measured.
#[derive(Debug, Serialize)]
pub struct KernelsBench {
    /// When the run started, UTC.
    pub date: String,
    /// The machine's NVIDIA GPU and driver, when `nvidia-smi` answers.
    pub driver: Option<String>,
    /// Timed batches per measurement.
    pub batches: usize,
    /// One per measurement.
    pub records: Vec<Record>,
    /// What did not run.
    pub skipped: Vec<Skipped>,
}

impl KernelsBench {
    /// The records that failed (a wrong result, a failed launch).
    pub fn failures(&self) -> impl Iterator<Item = &Record> {
        self.records.iter().filter(|r| r.error.is_some())
    }
}

/// Runs the benchmark: every device, then the CUDA C twins and the
/// libraries at the sizes the devices took.
pub fn run(o: &Options) -> Result<KernelsBench, String> {
    let date = utc_date(SystemTime::now());
    let driver = nvidia_driver();
    let mut records = Vec::new();
    let mut sizes: Vec<Sizes> = Vec::new();
    let host = Host::new(o.sizes);
    for spec in &o.devices {
        // One context per set of options, each dropped (its memory freed)
        // before the next opens.
        for (options, builder) in o.facade.iter().map(|f| facade_options(f)) {
            let ctx = builder.device(spec).build().map_err(|e| format!("device {spec}: {e}"))?;
            let size = o.sizes.on(ctx.device_kind());
            if !sizes.contains(&size) {
                sizes.push(size);
            }
            let backend = match ctx.device_kind() {
                DeviceKind::Cpu => "cpu",
                DeviceKind::Cuda => "cuda",
                DeviceKind::Wgpu => "wgpu",
            };
            let meta = Meta {
                date: date.clone(),
                device: ctx.device_name().to_owned(),
                backend: backend.to_owned(),
                driver: (backend != "cpu").then(|| driver.clone()).flatten(),
            };
            let bench = Bench { ctx: &ctx, stream: ctx.stream(), options: &options, meta: &meta, o };
            records.extend(bench.all(&host, size));
        }
    }
    let mut skipped = Vec::new();
    match python_child(&sizes, o, &date, driver.as_deref()) {
        Ok((r, s)) => {
            records.extend(r);
            skipped.extend(s);
        }
        Err(why) => skipped.push(Skipped { skipped: "CUDA C twins, libraries and the copy ceiling".into(), why }),
    }
    add_ratios(&mut records);
    Ok(KernelsBench { date, driver, batches: o.batches, records, skipped })
}

/// The sets of the facade's options a run can measure (`--facade`): the
/// builder's defaults (checked mode on unless `RELOK_CHECKED` turns it
/// off), checked mode on, checked mode off.
pub const FACADE: [&str; 3] = ["default", "checked", "unchecked"];

/// The context builder of `--facade` option `name` ([`FACADE`]) and the
/// name its variants carry.
fn facade_options(name: &str) -> (String, ContextBuilder) {
    let builder = match name {
        "checked" => Context::builder().checked(true),
        "unchecked" => Context::builder().checked(false),
        _ => Context::builder(),
    };
    (format!("facade {name}"), builder)
}

/// Sets each record's ratio to the CUDA C twin of its kernel and size.
fn add_ratios(records: &mut [Record]) {
    let c: HashMap<(String, String), f64> = records
        .iter()
        .filter(|r| r.variant == CUDA_C)
        .filter_map(|r| Some(((r.kernel.clone(), r.size.clone()), r.ms?)))
        .collect();
    for r in records.iter_mut().filter(|r| r.variant != CUDA_C) {
        r.ratio = r.ms.zip(c.get(&(r.kernel.clone(), r.size.clone()))).map(|(ms, c)| ms / c);
    }
}

/// Runs `scripts/bench_kernels.py` at `sizes`: its records and skips, or
/// why it did not run.
fn python_child(
    sizes: &[Sizes],
    o: &Options,
    date: &str,
    driver: Option<&str>,
) -> Result<(Vec<Record>, Vec<Skipped>), String> {
    let last_line = |bytes: &[u8]| String::from_utf8_lossy(bytes).lines().last().unwrap_or("").trim().to_owned();
    let probe = Command::new("python3").args(["-c", "import cupy"]).output();
    match probe {
        Err(e) => return Err(format!("python3 cannot be started: {e}")),
        Ok(out) if !out.status.success() => {
            return Err(format!("python3 cannot import cupy ({})", last_line(&out.stderr)));
        }
        Ok(_) => {}
    }
    let repo = repo();
    let script = repo.join("scripts/bench_kernels.py");
    if !script.is_file() {
        return Err(format!("{} not found (run from the repository or set RELOK_REPO)", script.display()));
    }
    let mut c = Command::new("python3");
    c.arg(&script).arg("--repo").arg(&repo);
    for s in sizes {
        c.arg("--size").arg(format!("{}:{}", s.elements, s.matmul));
    }
    c.args(["--kernels", &o.kernels.join(",")]);
    c.args(["--batches", &o.batches.to_string(), "--batch-ms", &o.batch_ms.to_string(), "--date", date]);
    if let Some(d) = driver {
        c.args(["--driver", d]);
    }
    let out = c.output().map_err(|e| format!("python3 {}: {e}", script.display()))?;
    // What it printed before any failure counts.
    let (mut records, mut skipped) = (Vec::new(), Vec::new());
    for line in String::from_utf8_lossy(&out.stdout).lines().filter(|l| !l.trim().is_empty()) {
        let bad = |e: serde_json::Error| format!("bench_kernels.py printed `{line}`: {e}");
        let v: serde_json::Value = serde_json::from_str(line).map_err(bad)?;
        if v.get("skipped").is_some() {
            skipped.push(serde_json::from_value(v).map_err(bad)?);
        } else {
            records.push(serde_json::from_value(v).map_err(bad)?);
        }
    }
    if !out.status.success() {
        let why = format!("bench_kernels.py failed: {}", last_line(&out.stderr));
        skipped.push(Skipped { skipped: "the rest of the CUDA C twins and libraries".into(), why });
    }
    Ok((records, skipped))
}

/// What every record of one device says about where it ran.
#[derive(Debug)]
struct Meta {
    date: String,
    device: String,
    backend: String,
    driver: Option<String>,
}

/// A kernel's measurement before it ran: its name, size and work.
struct Work {
    kernel: &'static str,
    size: String,
    /// Bytes moved per launch (for GB/s).
    bytes: Option<f64>,
    /// Floating-point operations per launch (for GFLOP/s).
    flops: Option<f64>,
    /// What the result is compared with.
    checked: String,
}

/// One variant of a kernel: its name, registers and one launch on one
/// set of buffers.
type Variant<'a, S> = (String, Option<u32>, &'a dyn Fn(&Stream, &mut S) -> relok::Result<()>);

/// The measurements on one context.
struct Bench<'a> {
    ctx: &'a Context,
    stream: Stream,
    /// The context's options, as the variants name them.
    options: &'a str,
    meta: &'a Meta,
    o: &'a Options,
}

impl Bench<'_> {
    /// Every kernel's variants at `size`.
    fn all(&self, host: &Host, size: Sizes) -> Vec<Record> {
        let mut records = Vec::new();
        for kernel in KERNELS.into_iter().filter(|k| self.o.kernels.iter().any(|x| x == k)) {
            let outcome = match kernel {
                "saxpy" => self.saxpy(host, size),
                "gelu" => self.gelu(host, size),
                "reduce" => self.reduce(host, size),
                "softmax" => self.softmax(host, size),
                "scan" => self.scan(host, size),
                "histogram" => self.histogram(host, size),
                "matmul" => self.matmul(host, size),
                other => Err(format!("no kernel {other}")),
            };
            match outcome {
                Ok(r) => records.extend(r),
                Err(e) => {
                    let work =
                        Work { kernel, size: size.label(kernel), bytes: None, flops: None, checked: String::new() };
                    records.push(self.record(&work, &format!(".rk and Rust twin, {}", self.options), None, Err(e)));
                }
            }
        }
        records
    }

    /// The `.rk` kernel of example `name`, loaded on the context.
    fn rk(&self, name: &str) -> Result<(Kernel, &'static Example), String> {
        let ex = EXAMPLES.iter().find(|e| e.name == name).ok_or_else(|| format!("no example {name}"))?;
        let program = Program::parse_named(ex.file, ex.source).map_err(|e| e.to_string())?;
        Ok((self.ctx.kernel(&program, ex.kernel).map_err(|e| e.to_string())?, ex))
    }

    /// The registers of the Rust twin `name` whose IR is `program`.
    fn twin_registers(&self, program: relok::Result<&Program>, name: &str) -> Option<u32> {
        self.ctx.kernel(program.ok()?, name).ok()?.registers()
    }

    /// `n` sets of buffers made by `make`, `n` enough that together they
    /// pass [`ROTATE_BYTES`] (at most [`MAX_SETS`]) for sets of `bytes`.
    fn sets<S>(&self, bytes: usize, make: impl Fn(&Context) -> relok::Result<S>) -> Result<Vec<S>, String> {
        let n = ROTATE_BYTES.div_ceil(bytes.max(1)).clamp(1, MAX_SETS);
        (0..n).map(|_| make(self.ctx)).collect::<relok::Result<_>>().map_err(|e| e.to_string())
    }

    /// Measures each variant on `sets`: `reset` the first set's output,
    /// launch once, `check` it, then time launches rotating over the sets.
    fn measure<S>(
        &self,
        work: &Work,
        sets: &mut [S],
        reset: impl Fn(&mut S) -> relok::Result<()>,
        check: impl Fn(&S) -> Result<(), String>,
        variants: &[Variant<'_, S>],
    ) -> Vec<Record> {
        let mut records = Vec::new();
        for (variant, registers, launch) in variants {
            let mut first = || -> Result<(), String> {
                reset(&mut sets[0]).map_err(|e| e.to_string())?;
                launch(&self.stream, &mut sets[0])
                    .and_then(|()| self.stream.synchronize())
                    .map_err(|e| e.to_string())?;
                check(&sets[0]).map_err(|e| format!("wrong result, not timed: {e}"))
            };
            let outcome = first().and_then(|()| self.time(sets, launch).map_err(|e| e.to_string()));
            records.push(self.record(work, variant, *registers, outcome));
        }
        records
    }

    /// The median time per launch over the batches, ms, and the launches
    /// per batch.
    fn time<S>(
        &self,
        sets: &mut [S],
        launch: &dyn Fn(&Stream, &mut S) -> relok::Result<()>,
    ) -> relok::Result<(f64, usize)> {
        let s = &self.stream;
        let t = Instant::now();
        launch(s, &mut sets[sets.len() - 1])?;
        s.synchronize()?;
        let one_ms = t.elapsed().as_secs_f64() * 1e3;
        let per = ((self.o.batch_ms / one_ms).ceil() as usize).clamp(1, 1000);
        let mut times = Vec::with_capacity(self.o.batches);
        let mut i = 0;
        for _ in 0..self.o.batches {
            let t = Instant::now();
            for _ in 0..per {
                let n = sets.len();
                launch(s, &mut sets[i % n])?;
                i += 1;
            }
            s.synchronize()?;
            times.push(t.elapsed().as_secs_f64() * 1e3 / per as f64);
        }
        Ok((median(times), per))
    }

    fn record(
        &self,
        work: &Work,
        variant: &str,
        registers: Option<u32>,
        outcome: Result<(f64, usize), String>,
    ) -> Record {
        let m = self.meta;
        let (ms, launches, error) = match outcome {
            Ok((ms, per)) => (Some(ms), per, None),
            Err(e) => (None, 0, Some(e)),
        };
        let rate = |work: Option<f64>| work.zip(ms).map(|(w, ms)| w / (ms * 1e-3) / 1e9);
        Record {
            date: m.date.clone(),
            device: m.device.clone(),
            backend: m.backend.clone(),
            driver: m.driver.clone(),
            kernel: work.kernel.to_owned(),
            variant: variant.to_owned(),
            size: work.size.clone(),
            ms,
            gb_s: rate(work.bytes),
            gflop_s: rate(work.flops),
            ratio: None,
            registers,
            checked: (!work.checked.is_empty()).then(|| work.checked.clone()),
            error,
            batches: if ms.is_some() { self.o.batches } else { 0 },
            launches,
        }
    }

    /// The two variants' names on this context.
    fn names(&self) -> [String; 2] {
        [format!(".rk, {}", self.options), format!("Rust twin, {}", self.options)]
    }

    fn saxpy(&self, h: &Host, size: Sizes) -> Result<Vec<Record>, String> {
        struct Set {
            x: Buffer<f32>,
            y: Buffer<f32>,
        }
        let n = size.elements;
        let (rk, ex) = self.rk("saxpy")?;
        let (n32, grid) = (n as u32, Grid::cover(n, BLOCK as u32));
        let (x, y, want) = (&h.uniform[..n], &h.uniform2[..n], &h.saxpy[..n]);
        let mut sets = self.sets(8 * n, |c| Ok(Set { x: c.upload(x)?, y: c.upload(y)? }))?;
        let [rk_name, twin_name] = self.names();
        let work = Work {
            kernel: "saxpy",
            size: size.label("saxpy"),
            bytes: Some(12.0 * n as f64),
            flops: None,
            checked: h.checked(ex),
        };
        Ok(self.measure(
            &work,
            &mut sets,
            |s| s.y.write(y),
            |s| check_f32(&s.y.download().map_err(|e| e.to_string())?, want, ex.tolerance),
            &[
                (rk_name, rk.registers(), &|st, s| rk.launch(st, grid, (n32, SAXPY_A, &s.x, &mut s.y))),
                (twin_name, self.twin_registers(kernels::saxpy::program(), "saxpy"), &|st, s| {
                    kernels::saxpy::launch(st, grid, n32, SAXPY_A, &s.x, &mut s.y)
                }),
            ],
        ))
    }

    fn gelu(&self, h: &Host, size: Sizes) -> Result<Vec<Record>, String> {
        struct Set {
            x: Buffer<f32>,
            y: Buffer<f32>,
        }
        let n = size.elements;
        let (rk, ex) = self.rk("gelu")?;
        let (n32, grid) = (n as u32, Grid::cover(n, BLOCK as u32));
        let (x, want, poison) = (&h.signed[..n], &h.gelu[..n], vec![f32::NAN; n]);
        let mut sets = self.sets(8 * n, |c| Ok(Set { x: c.upload(x)?, y: c.upload(&poison)? }))?;
        let [rk_name, twin_name] = self.names();
        let work = Work {
            kernel: "gelu",
            size: size.label("gelu"),
            bytes: Some(8.0 * n as f64),
            flops: None,
            checked: h.checked(ex),
        };
        Ok(self.measure(
            &work,
            &mut sets,
            |s| s.y.write(&poison),
            |s| check_f32(&s.y.download().map_err(|e| e.to_string())?, want, ex.tolerance),
            &[
                (rk_name, rk.registers(), &|st, s| rk.launch(st, grid, (n32, &s.x, &mut s.y))),
                (twin_name, self.twin_registers(kernels::gelu::program(), "gelu"), &|st, s| {
                    kernels::gelu::launch(st, grid, n32, &s.x, &mut s.y)
                }),
            ],
        ))
    }

    fn reduce(&self, h: &Host, size: Sizes) -> Result<Vec<Record>, String> {
        struct Set {
            x: Buffer<f32>,
            out: Buffer<f32>,
        }
        let (n, blocks) = (size.elements, size.elements / BLOCK);
        let (rk, ex) = self.rk("reduce")?;
        let (n32, grid) = (n as u32, Grid::new(blocks as u32, BLOCK as u32));
        let (x, want, poison) = (&h.small[..n], &h.reduce[..blocks], vec![f32::NAN; blocks]);
        let mut sets = self.sets(4 * (n + blocks), |c| Ok(Set { x: c.upload(x)?, out: c.upload(&poison)? }))?;
        let [rk_name, twin_name] = self.names();
        let bytes = Some(4.0 * (n + blocks) as f64);
        let work = Work { kernel: "reduce", size: size.label("reduce"), bytes, flops: None, checked: h.checked(ex) };
        Ok(self.measure(
            &work,
            &mut sets,
            |s| s.out.write(&poison),
            |s| check_f32(&s.out.download().map_err(|e| e.to_string())?, want, ex.tolerance),
            &[
                (rk_name, rk.registers(), &|st, s| rk.launch(st, grid, (n32, &s.x, &mut s.out))),
                (twin_name, self.twin_registers(kernels::reduce::program(), "reduce"), &|st, s| {
                    kernels::reduce::launch(st, grid, n32, &s.x, &mut s.out)
                }),
            ],
        ))
    }

    fn softmax(&self, h: &Host, size: Sizes) -> Result<Vec<Record>, String> {
        struct Set {
            x: Buffer<f32>,
            y: Buffer<f32>,
        }
        let (n, rows) = (size.elements, size.elements / BLOCK);
        let (rk, ex) = self.rk("softmax")?;
        let (cols, grid) = (BLOCK as u32, Grid::new(rows as u32, BLOCK as u32));
        let (x, want, poison) = (&h.uniform[..n], &h.softmax[..n], vec![f32::NAN; n]);
        let mut sets = self.sets(8 * n, |c| Ok(Set { x: c.upload(x)?, y: c.upload(&poison)? }))?;
        let [rk_name, twin_name] = self.names();
        let work = Work {
            kernel: "softmax",
            size: size.label("softmax"),
            bytes: Some(8.0 * n as f64),
            flops: None,
            checked: h.checked(ex),
        };
        Ok(self.measure(
            &work,
            &mut sets,
            |s| s.y.write(&poison),
            |s| check_f32(&s.y.download().map_err(|e| e.to_string())?, want, ex.tolerance),
            &[
                (rk_name, rk.registers(), &|st, s| rk.launch(st, grid, (cols, &s.x, &mut s.y))),
                (twin_name, self.twin_registers(kernels::softmax::program(), "softmax"), &|st, s| {
                    kernels::softmax::launch(st, grid, cols, &s.x, &mut s.y)
                }),
            ],
        ))
    }

    fn scan(&self, h: &Host, size: Sizes) -> Result<Vec<Record>, String> {
        struct Set {
            x: Buffer<u32>,
            out: Buffer<u32>,
        }
        let n = size.elements;
        let (rk, ex) = self.rk("scan")?;
        let (n32, grid) = (n as u32, Grid::cover(n, BLOCK as u32));
        let (x, want, poison) = (&h.words[..n], &h.scan[..n], vec![u32::MAX; n]);
        let mut sets = self.sets(8 * n, |c| Ok(Set { x: c.upload(x)?, out: c.upload(&poison)? }))?;
        let [rk_name, twin_name] = self.names();
        let work = Work {
            kernel: "scan",
            size: size.label("scan"),
            bytes: Some(8.0 * n as f64),
            flops: None,
            checked: h.checked(ex),
        };
        Ok(self.measure(
            &work,
            &mut sets,
            |s| s.out.write(&poison),
            |s| check_exact(&s.out.download().map_err(|e| e.to_string())?, want),
            &[
                (rk_name, rk.registers(), &|st, s| rk.launch(st, grid, (n32, &s.x, &mut s.out))),
                (twin_name, self.twin_registers(kernels::scan::program(), "scan"), &|st, s| {
                    kernels::scan::launch(st, grid, n32, &s.x, &mut s.out)
                }),
            ],
        ))
    }

    fn histogram(&self, h: &Host, size: Sizes) -> Result<Vec<Record>, String> {
        struct Set {
            data: Buffer<u32>,
            hist: Buffer<u32>,
        }
        let n = size.elements;
        let (rk, ex) = self.rk("histogram")?;
        let (n32, grid) = (n as u32, Grid::cover(n, BLOCK as u32));
        let data = &h.bytes[..n];
        let (mut want, zeros) = (vec![0u32; BINS as usize], vec![0u32; BINS as usize]);
        reference::histogram(data, BINS, &mut want);
        let mut sets = self.sets(4 * n, |c| Ok(Set { data: c.upload(data)?, hist: c.upload(&zeros)? }))?;
        let [rk_name, twin_name] = self.names();
        let bytes = Some(4.0 * (n + BINS as usize) as f64);
        let work =
            Work { kernel: "histogram", size: size.label("histogram"), bytes, flops: None, checked: h.checked(ex) };
        Ok(self.measure(
            &work,
            &mut sets,
            |s| s.hist.write(&zeros),
            |s| check_exact(&s.hist.download().map_err(|e| e.to_string())?, &want),
            &[
                (rk_name, rk.registers(), &|st, s| rk.launch(st, grid, (n32, BINS, &s.data, &mut s.hist))),
                (twin_name, self.twin_registers(kernels::histogram::program(), "histogram"), &|st, s| {
                    kernels::histogram::launch(st, grid, n32, BINS, &s.data, &mut s.hist)
                }),
            ],
        ))
    }

    fn matmul(&self, h: &Host, size: Sizes) -> Result<Vec<Record>, String> {
        struct Set {
            a: Buffer<f32>,
            b: Buffer<f32>,
            c: Buffer<f32>,
        }
        let (m, tile) = (size.matmul, kernels::TILE);
        let (rk, _) = self.rk("matmul")?;
        let m32 = m as u32;
        let blocks = m.div_ceil(tile) as u32;
        let grid = Grid::new([blocks, blocks, 1], [tile as u32, tile as u32, 1]);
        let (a, b, poison) = (&h.a[..m * m], &h.b[..m * m], vec![f32::NAN; m * m]);
        let mut sets =
            self.sets(12 * m * m, |c| Ok(Set { a: c.upload(a)?, b: c.upload(b)?, c: c.upload(&poison)? }))?;
        let [rk_name, twin_name] = self.names();
        let checked =
            format!("{MATMUL_SAMPLES} entries against plain Rust in the kernel's order, every element finite");
        let work = Work {
            kernel: "matmul",
            size: size.label("matmul"),
            bytes: None,
            flops: Some(2.0 * (m as f64).powi(3)),
            checked,
        };
        Ok(self.measure(
            &work,
            &mut sets,
            |s| s.c.write(&poison),
            |s| check_matmul(&s.c.download().map_err(|e| e.to_string())?, a, b, m),
            &[
                (rk_name, rk.registers(), &|st, s| rk.launch(st, grid, (m32, m32, m32, &s.a, &s.b, &mut s.c))),
                (twin_name, self.twin_registers(kernels::matmul::program(), "matmul"), &|st, s| {
                    kernels::matmul::launch(st, grid, m, m, m, &s.a, &s.b, &mut s.c)
                }),
            ],
        ))
    }
}

/// The inputs of every kernel at a run's largest sizes (a smaller size
/// takes a prefix) and the references of those whose result on a prefix
/// is the prefix of the result.
struct Host {
    /// Floats in [0, 1): saxpy's `x`, softmax's input, matmul's `a`.
    uniform: Vec<f32>,
    /// Floats in [0, 1): saxpy's `y`.
    uniform2: Vec<f32>,
    /// Floats in [-6, 6): gelu's input (the range its tolerance assumes).
    signed: Vec<f32>,
    /// Integers 0–15 as floats: reduce's input (block sums stay exact).
    small: Vec<f32>,
    /// Integers in [0, 65536): scan's input.
    words: Vec<u32>,
    /// Integers in [0, 256): the histogram's data.
    bytes: Vec<u32>,
    /// matmul's `a` and `b`, floats in [0, 1).
    a: Vec<f32>,
    b: Vec<f32>,
    saxpy: Vec<f32>,
    gelu: Vec<f32>,
    reduce: Vec<f32>,
    softmax: Vec<f32>,
    scan: Vec<u32>,
}

impl Host {
    fn new(s: Sizes) -> Host {
        let n = s.elements;
        let unit = |seed: u64| par_collect(n, |i| (rand_at(seed, i as u64) >> 40) as f32 / (1u64 << 24) as f32);
        let below = |seed: u64, m: u64| par_collect(n, |i| (rand_at(seed, i as u64) % m) as u32);
        let (uniform, uniform2) = (unit(1), unit(2));
        let signed: Vec<f32> = unit(3).into_iter().map(|u| u * 12.0 - 6.0).collect();
        let small: Vec<f32> = below(4, 16).into_iter().map(|v| v as f32).collect();
        let (words, bytes) = (below(5, 65_536), below(6, u64::from(BINS)));
        let mm = s.matmul * s.matmul;
        let a = par_collect(mm, |i| (rand_at(7, i as u64) >> 40) as f32 / (1u64 << 24) as f32);
        let b = par_collect(mm, |i| (rand_at(8, i as u64) >> 40) as f32 / (1u64 << 24) as f32);
        let mut saxpy = uniform2.clone();
        par_chunks(&mut saxpy, 1, |start, y| reference::saxpy(SAXPY_A, &uniform[start..start + y.len()], y));
        let gelu = par_collect(n, |i| reference::gelu(signed[i]));
        let reduce = par_collect(n / BLOCK, |b| reference::block_sum(&small[b * BLOCK..(b + 1) * BLOCK]));
        let mut softmax = vec![0.0; n];
        par_chunks(&mut softmax, BLOCK, |start, out| {
            for (row, o) in uniform[start..start + out.len()].chunks(BLOCK).zip(out.chunks_mut(BLOCK)) {
                reference::softmax_row(row, o);
            }
        });
        let mut scan = vec![0; n];
        par_chunks(&mut scan, BLOCK, |start, out| {
            for (x, o) in words[start..start + out.len()].chunks(BLOCK).zip(out.chunks_mut(BLOCK)) {
                reference::scan_block(x, o);
            }
        });
        Host { uniform, uniform2, signed, small, words, bytes, a, b, saxpy, gelu, reduce, softmax, scan }
    }

    /// What a `.rk` example's result is compared with.
    fn checked(&self, ex: &Example) -> String {
        if ex.tolerance == Tolerance::EXACT {
            "every element, exactly, against plain Rust".into()
        } else {
            let Tolerance { ulps, abs } = ex.tolerance;
            format!("every element against plain Rust in f64, within {ulps} ulp + {abs:e}")
        }
    }
}

/// `f(i)` for every `i < n`, computed on every core.
fn par_collect<T: Send + Clone + Default>(n: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let mut out = vec![T::default(); n];
    par_chunks(&mut out, 1, |start, chunk| {
        for (j, o) in chunk.iter_mut().enumerate() {
            *o = f(start + j);
        }
    });
    out
}

/// `f(start, chunk)` over `out` cut into one chunk per core (each a
/// multiple of `unit` elements, `start` its first index).
fn par_chunks<T: Send>(out: &mut [T], unit: usize, f: impl Fn(usize, &mut [T]) + Sync) {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let per = out.len().div_ceil(cores).div_ceil(unit).max(1) * unit;
    std::thread::scope(|s| {
        for (i, chunk) in out.chunks_mut(per).enumerate() {
            let f = &f;
            s.spawn(move || f(i * per, chunk));
        }
    });
}

/// `Ok` when every element of `got` is `ok` against `want`; else how many
/// are not, and the first.
fn check_with<T: Copy + Debug + Sync>(got: &[T], want: &[T], ok: impl Fn(T, T) -> bool + Sync) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{} elements, expected {}", got.len(), want.len()));
    }
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let per = got.len().div_ceil(cores).max(1);
    // Per chunk: how many are wrong, and the first.
    let wrong: Vec<(usize, Option<usize>)> = std::thread::scope(|s| {
        let chunks: Vec<_> = (0..got.len().div_ceil(per))
            .map(|c| {
                let ok = &ok;
                s.spawn(move || {
                    let (mut count, mut first) = (0, None);
                    for i in c * per..((c + 1) * per).min(got.len()) {
                        if !ok(got[i], want[i]) {
                            count += 1;
                            first = first.or(Some(i));
                        }
                    }
                    (count, first)
                })
            })
            .collect();
        chunks.into_iter().map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
    });
    let count: usize = wrong.iter().map(|w| w.0).sum();
    match wrong.iter().find_map(|w| w.1) {
        None => Ok(()),
        Some(i) => Err(format!(
            "{count} of {} elements differ from the reference; the first at {i}: {:?}, expected {:?}",
            got.len(),
            got[i],
            want[i]
        )),
    }
}

fn check_exact<T: Copy + Debug + Sync + PartialEq>(got: &[T], want: &[T]) -> Result<(), String> {
    check_with(got, want, |g, w| g == w)
}

fn check_f32(got: &[f32], want: &[f32], tolerance: Tolerance) -> Result<(), String> {
    check_with(got, want, |g, w| tolerance.close(g, w))
}

/// matmul's `c` (`m` x `m`): [`MATMUL_SAMPLES`] entries (the corners
/// among them) exactly as the kernel computes them, and every element
/// finite (written: the output was poisoned with NaN).
fn check_matmul(c: &[f32], a: &[f32], b: &[f32], m: usize) -> Result<(), String> {
    if c.len() != m * m {
        return Err(format!("{} elements, expected {}", c.len(), m * m));
    }
    if let Some(i) = c.iter().position(|v| !v.is_finite()) {
        return Err(format!("element {i} is {} (not written?)", c[i]));
    }
    let corners = [0, m - 1, m * (m - 1), m * m - 1];
    let samples =
        corners.into_iter().chain((0..MATMUL_SAMPLES as u64).map(|i| (rand_at(9, i) % (m * m) as u64) as usize));
    for i in samples {
        let want = reference::matmul_at(a, b, m, m, i / m, i % m);
        if c[i].to_bits() != want.to_bits() {
            return Err(format!("entry ({}, {}) is {}, expected {want}", i / m, i % m, c[i]));
        }
    }
    Ok(())
}

/// Prints the report: one JSON record per measurement, then one per
/// skipped part, or a table.
pub fn print(r: &KernelsBench, json: bool) -> Result<(), String> {
    if json {
        r.records.iter().try_for_each(print_json)?;
        return r.skipped.iter().try_for_each(print_json);
    }
    println!(
        "relok bench kernels, {}{}: medians of {} batches; ×C: time over the CUDA C twin's at the same size",
        r.date,
        r.driver.as_ref().map_or(String::new(), |d| format!(", {d}")),
        r.batches
    );
    let mut devices: Vec<(&str, &str)> = r.records.iter().map(|x| (x.backend.as_str(), x.device.as_str())).collect();
    devices.dedup();
    for (backend, device) in devices {
        println!("  {backend}: {device}");
    }
    println!(
        "{:<10} {:<12} {:<5} {:<30} {:>10} {:>9} {:>9} {:>6} {:>5}",
        "kernel", "size", "on", "variant", "ms", "GB/s", "GFLOP/s", "×C", "regs"
    );
    let opt = |v: Option<f64>, digits: usize| v.map_or("-".to_owned(), |v| format!("{v:.digits$}"));
    let rate = |v: Option<f64>| opt(v, if v.is_some_and(|v| v < 10.0) { 3 } else { 1 });
    let mut rows: Vec<&Record> = r.records.iter().collect();
    let order = |k: &str| KERNELS.iter().position(|x| *x == k).unwrap_or(KERNELS.len());
    rows.sort_by_key(|x| (order(&x.kernel), x.size.len(), x.size.clone()));
    for x in rows {
        match &x.error {
            Some(e) => println!("{:<10} {:<12} {:<5} {:<30} FAILED: {e}", x.kernel, x.size, x.backend, x.variant),
            None => println!(
                "{:<10} {:<12} {:<5} {:<30} {:>10} {:>9} {:>9} {:>6} {:>5}",
                x.kernel,
                x.size,
                x.backend,
                x.variant,
                opt(x.ms, 3),
                rate(x.gb_s),
                rate(x.gflop_s),
                opt(x.ratio, 2),
                x.registers.map_or("-".to_owned(), |v| v.to_string())
            ),
        }
    }
    for s in &r.skipped {
        println!("SKIPPED {}: {}", s.skipped, s.why);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cpu device at the smallest sizes, two batches of one launch.
    fn options() -> Options {
        Options {
            devices: vec!["cpu".into()],
            kernels: KERNELS.iter().map(|k| (*k).to_owned()).collect(),
            facade: vec!["default".into()],
            sizes: Sizes { elements: 2 * BLOCK, matmul: 20 },
            batches: 2,
            batch_ms: 0.0,
        }
    }

    #[test]
    fn a_wrong_kernel_is_not_timed() {
        // saxpy without its `+ y`: launches fine, computes the wrong thing.
        let wrong = "kernel @saxpy(v0: u32, v1: f32, v2: ptr<global, f32>, v3: ptr<global, f32>) {\n    v4: u32 = block_id.x\n    v5: u32 = block_dim.x\n    v6: u32 = thread_id.x\n    v7: u32 = mul v4, v5\n    v8: u32 = add v7, v6\n    v9: bool = lt v8, v0\n    if v9 {\n        v10: f32 = load v2[v8]\n        v11: f32 = mul v1, v10\n        store v3[v8], v11\n    }\n    return\n}\n";
        let o = options();
        let host = Host::new(o.sizes);
        let ctx = Context::builder().device("cpu").no_cache().build().expect("cpu");
        let meta = Meta { date: String::new(), device: "cpu".into(), backend: "cpu".into(), driver: None };
        let bench = Bench { ctx: &ctx, stream: ctx.stream(), options: "test", meta: &meta, o: &o };
        let k = ctx.kernel(&Program::parse(wrong).expect("parses"), "saxpy").expect("loads");
        let n = o.sizes.elements;
        let (x, y) = (&host.uniform[..n], &host.uniform2[..n]);
        let mut sets = vec![(ctx.upload(x).expect("x"), ctx.upload(y).expect("y"))];
        let work = Work { kernel: "saxpy", size: "512".into(), bytes: None, flops: None, checked: "plain Rust".into() };
        let records = bench.measure(
            &work,
            &mut sets,
            |s| s.1.write(y),
            |s| check_f32(&s.1.download().map_err(|e| e.to_string())?, &host.saxpy[..n], Tolerance::EXACT),
            &[("wrong".into(), None, &|st, s| k.launch(st, Grid::cover(n, 256), (n as u32, SAXPY_A, &s.0, &mut s.1)))],
        );
        assert_eq!(records.len(), 1);
        let r = &records[0];
        assert!(r.ms.is_none() && r.launches == 0, "{r:?}");
        let e = r.error.as_deref().unwrap_or("");
        assert!(e.starts_with("wrong result, not timed: 512 of 512 elements differ"), "{e}");
    }

    #[test]
    fn checks_name_the_first_wrong_element() {
        let want = [1.0f32, 2.0, 3.0];
        assert!(check_f32(&want, &want, Tolerance::EXACT).is_ok());
        let e = check_f32(&[1.0, f32::NAN, 3.5], &want, Tolerance::EXACT).unwrap_err();
        assert_eq!(e, "2 of 3 elements differ from the reference; the first at 1: NaN, expected 2.0");
        let next = f32::from_bits(2.0f32.to_bits() + 1);
        assert!(check_f32(&[1.0, next, 3.0], &want, Tolerance { ulps: 1.0, abs: 0.0 }).is_ok());
        assert!(check_exact(&[1u32, 2], &[1, 2, 3]).is_err());
        // matmul: one entry off is found among the samples when every
        // entry is sampled (a 2 x 2 product).
        let (a, b) = ([1.0f32, 2.0, 3.0, 4.0], [5.0f32, 6.0, 7.0, 8.0]);
        let c = [19.0f32, 22.0, 43.0, 50.0];
        assert!(check_matmul(&c, &a, &b, 2).is_ok());
        assert!(check_matmul(&[19.0, 22.0, 43.0, 51.0], &a, &b, 2).is_err());
        assert!(check_matmul(&[19.0, f32::NAN, 43.0, 50.0], &a, &b, 2).is_err());
    }

    #[test]
    fn ratios_are_to_the_cuda_c_twin_of_the_same_size() {
        let rec = |variant: &str, size: &str, ms: f64| Record {
            date: String::new(),
            device: String::new(),
            backend: "cuda".into(),
            driver: None,
            kernel: "saxpy".into(),
            variant: variant.into(),
            size: size.into(),
            ms: Some(ms),
            gb_s: None,
            gflop_s: None,
            ratio: None,
            registers: None,
            checked: None,
            error: None,
            batches: 1,
            launches: 1,
        };
        let mut r = vec![rec(CUDA_C, "8", 2.0), rec(".rk", "8", 3.0), rec(CUDA_C, "4", 1.0), rec(".rk", "4", 4.0)];
        add_ratios(&mut r);
        let ratios: Vec<_> = r.iter().map(|r| r.ratio).collect();
        assert_eq!(ratios, [None, Some(1.5), None, Some(4.0)]);
    }

    #[test]
    fn sizes_are_capped_on_wgpu_and_checked() {
        assert_eq!(Sizes::FULL.on(DeviceKind::Wgpu).elements, 65_535 * 256);
        assert_eq!(Sizes::FULL.on(DeviceKind::Cuda), Sizes::FULL);
        assert_eq!(Sizes::FULL.label("softmax"), "1048576x256");
        assert_eq!(Sizes::FULL.label("matmul"), "4096^3");
        let cpu = || vec!["cpu".to_owned()];
        assert!(Options::new(cpu(), vec![], vec![], Some(300), None, None, true).is_err());
        assert!(Options::new(cpu(), vec![], vec![], Some(512), Some(0), None, true).is_err());
        assert!(Options::new(cpu(), vec!["saxpy".into(), "fft".into()], vec![], None, None, None, true).is_err());
        assert!(Options::new(cpu(), vec![], vec!["fast".into()], None, None, None, true).is_err());
        let o = Options::new(cpu(), vec![], vec![], Some(512), None, None, true).expect("valid");
        assert_eq!((o.sizes, o.batches, o.kernels.len()), (Sizes { elements: 512, matmul: 256 }, 3, 7));
        assert_eq!(o.facade, FACADE);
    }
}
