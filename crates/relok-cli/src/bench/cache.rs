//! `relok bench cache` ([`run`]): the kernel cache's tiers against
//! compiling, per example kernel and strategy (table, patch):
//!
//! - cold: `load::by_module` (the kernel cache, then the cpu device's
//!   load) on a fresh cache with no store;
//! - warm, this process: the same call on a freshly opened cache over a
//!   filled artifact store (memory tier empty), checked to be a store hit;
//! - warm, a new process: the `relok` binary started again (hidden
//!   `bench cache-child`), timing `KernelCache::open` + the load inside it,
//!   and the child's whole wall time;
//! - `Store::open` with many entries against an empty store's (it never
//!   scans), and lookups that hit and miss.
//!
//! Medians of several runs taken in one process, so that ratios between the
//! lines are meaningful; absolute times depend on the machine.

use super::median;
use crate::examples::{EXAMPLES, Example};
use relok_cache::{Key, Lookup, Store, entry};
use relok_compiler::artifact::{Artifact, COMPILER_ID, CodeTarget, CompileOptions};
use relok_compiler::lower::site_table;
use relok_compiler::stencil::Stencil;
use relok_ir::Strategy;
use relok_runtime::cpu::CpuDevice;
use relok_runtime::{CacheStats, KernelCache, Session, load};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Instant, SystemTime};

/// The strategies `relok bench cache` measures (bake never reaches the store).
const CACHE_STRATEGIES: [Strategy; 2] = [Strategy::Table, Strategy::Patch];

/// One kernel (or the total over every example) of `relok bench cache`:
/// medians in µs.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CacheRow {
    /// The example's name, or `total`.
    pub kernel: String,
    /// `table` or `patch`.
    pub strategy: String,
    /// Bytes of lowered IR text in the artifact (what a warm load parses).
    pub code_bytes: usize,
    /// Cold: a load (`load::by_module`) on a fresh cache with no store (stencil, key,
    /// optimise, lower, codegen, parse + verify, device load).
    pub cold_us: f64,
    /// Warm, this process: a load on a freshly opened cache over a
    /// filled store (memory tier empty): a store hit.
    pub warm_us: f64,
    /// A memory-tier hit: the same call again on that cache (stencil and
    /// key still computed, then a map lookup).
    pub memory_us: f64,
    /// Warm, a new process: `KernelCache::open` plus the load, measured
    /// inside the child.
    pub child_open_load_us: f64,
    /// Warm, a new process: the load alone.
    pub child_load_us: f64,
    /// `cold_us / warm_us`.
    pub cold_over_warm: f64,
    /// `cold_us / child_open_load_us`.
    pub cold_over_child: f64,
}

/// One step of the warm path, summed over every example (table).
#[derive(Clone, Debug, serde::Serialize)]
pub struct Step {
    /// What the step does.
    pub name: &'static str,
    /// Median over the runs of the sum over the examples, µs.
    pub median_us: f64,
}

/// Opening and reading a store that holds many entries.
#[derive(Clone, Debug, serde::Serialize)]
pub struct StoreScale {
    /// Entries in the full store.
    pub entries: usize,
    /// Bytes of each entry's payload.
    pub payload_bytes: usize,
    /// Seconds it took to write them (not a benchmark: context).
    pub fill_s: f64,
    /// `Store::open` of the full store, median µs.
    pub open_full_us: f64,
    /// `Store::open` of an empty store, median µs.
    pub open_empty_us: f64,
    /// How many opens of each.
    pub open_runs: usize,
    /// `get` of a present key in the full store, median µs.
    pub get_hit_us: f64,
    /// `get` of an absent key in the full store, median µs.
    pub get_miss_us: f64,
    /// `get` of an absent key in the empty store, median µs.
    pub get_miss_empty_us: f64,
    /// How many lookups of each kind.
    pub lookups: usize,
}

/// What `relok bench cache` measured.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CacheReport {
    /// In-process runs per kernel (cold and warm each).
    pub runs: usize,
    /// Child processes.
    pub child_runs: usize,
    /// One row per example and strategy, then a `total` row per strategy.
    pub rows: Vec<CacheRow>,
    /// The warm path (table) taken apart, summed over the examples (each
    /// step timed on its own, so their sum only approximates the `total`
    /// row's `warm_us`).
    pub warm_steps: Vec<Step>,
    /// Wall time of a whole child process (spawn to exit), median ms.
    pub child_wall_ms: f64,
    /// Store open and lookups at scale.
    pub store: StoreScale,
}

/// One load in the child process.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct ChildLoad {
    /// The example's name.
    pub kernel: String,
    /// `table` or `patch`.
    pub strategy: String,
    /// From before `KernelCache::open` to after the load, µs.
    pub open_load_us: f64,
    /// The load alone, µs.
    pub load_us: f64,
}

/// What the child process of `relok bench cache` prints (one JSON line).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct ChildReport {
    /// Every example with every strategy, in that order (table first).
    pub loads: Vec<ChildLoad>,
}

/// A folder under the system's temporary folder, private to the user,
/// removed on drop.
#[derive(Debug)]
struct TempDir(PathBuf);

impl TempDir {
    fn new(label: &str) -> Result<TempDir, String> {
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().subsec_nanos();
        let seq = SEQ.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("relok-bench-{label}-{}-{nanos}-{seq}", std::process::id()));
        let mut b = fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
        b.create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(TempDir(path))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn micros(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e6
}

/// Every example's module, parsed and verified.
fn example_modules() -> Result<Vec<relok_ir::VerifiedModule>, String> {
    EXAMPLES
        .iter()
        .map(|ex| {
            let m = relok_ir::parse(ex.source).map_err(|e| format!("{}: {e}", ex.file))?;
            relok_ir::VerifiedModule::new(m).map_err(|e| format!("{}: {e}", ex.file))
        })
        .collect()
}

/// An error unless `stats` show exactly one load, taken from the store.
fn expect_store_hit(stats: &CacheStats, what: &str) -> Result<(), String> {
    if stats.compiles != 0 || stats.store.hits != 1 || stats.memory.hits != 0 || stats.store.corrupt != 0 {
        return Err(format!("{what}: expected one artifact-store hit and no compile, got {stats:?}"));
    }
    Ok(())
}

/// The child process of `relok bench cache`: opens the store under `root`
/// (filled by the parent) once per load and loads every example with each
/// strategy, timing each load from inside. Fails unless every load is a
/// store hit.
pub fn child(device: &CpuDevice, root: &Path) -> Result<ChildReport, String> {
    let modules = example_modules()?;
    let session = Session::new();
    let mut loads = Vec::new();
    for strategy in CACHE_STRATEGIES {
        for (ex, module) in EXAMPLES.iter().zip(&modules) {
            let t0 = Instant::now();
            let cache = KernelCache::open(root).map_err(|e| e.to_string())?;
            let t1 = Instant::now();
            load::by_module(device, &session, &cache, module, ex.kernel, strategy, None)
                .map_err(|e| format!("{}: {e}", ex.name))?;
            let (open_load_us, load_us) = (micros(t0), micros(t1));
            expect_store_hit(&cache.stats(), &format!("child: {} ({strategy})", ex.name))?;
            loads.push(ChildLoad { kernel: ex.name.into(), strategy: strategy.name().into(), open_load_us, load_us });
        }
    }
    Ok(ChildReport { loads })
}

/// Runs the child `runs` times over the store under `root`; their reports
/// and wall times (ms).
fn run_children(
    root: &Path,
    runs: usize,
    spawn: &dyn Fn(&Path) -> std::process::Command,
) -> Result<(Vec<ChildReport>, Vec<f64>), String> {
    let mut reports = Vec::with_capacity(runs);
    let mut walls = Vec::with_capacity(runs);
    for _ in 0..runs {
        let mut cmd = spawn(root);
        cmd.stdin(std::process::Stdio::null());
        let t = Instant::now();
        let out = cmd.output().map_err(|e| format!("cannot start the bench child {cmd:?}: {e}"))?;
        walls.push(t.elapsed().as_secs_f64() * 1e3);
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            return Err(format!(
                "bench child {cmd:?} failed ({}):\n{}{}",
                out.status,
                stdout,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let line = stdout
            .lines()
            .rev()
            .find(|l| l.starts_with('{'))
            .ok_or_else(|| format!("bench child {cmd:?} printed no report:\n{stdout}"))?;
        reports.push(serde_json::from_str(line).map_err(|e| format!("bench child report: {e}: {line}"))?);
    }
    Ok((reports, walls))
}

/// Runs `relok bench cache`; `quick` uses fewer runs and a small store.
/// `spawn` makes the command of a child process over a store root (the
/// `relok` binary's hidden `bench cache-child --store ROOT`).
pub fn run(
    device: &CpuDevice,
    quick: bool,
    spawn: &dyn Fn(&Path) -> std::process::Command,
) -> Result<CacheReport, String> {
    let runs = if quick { 3 } else { 21 };
    let child_runs = if quick { 3 } else { 21 };
    let modules = example_modules()?;
    let session = Session::new();
    let nk = EXAMPLES.len();
    let slots = CACHE_STRATEGIES.len() * nk;
    let err =
        |ex: &'static Example, s: Strategy| move |e: relok_runtime::ProgramError| format!("{} ({s}): {e}", ex.name);

    // The store every warm load reads: every example with every strategy.
    let dir = TempDir::new("cache")?;
    {
        let cache = KernelCache::open(dir.path()).map_err(|e| e.to_string())?;
        for s in CACHE_STRATEGIES {
            for (ex, m) in EXAMPLES.iter().zip(&modules) {
                load::by_module(device, &session, &cache, m, ex.kernel, s, None).map_err(err(ex, s))?;
            }
        }
        let st = cache.stats();
        if st.compiles != slots as u64 || st.store.write_errors != 0 {
            return Err(format!("filling the store: expected {slots} compiles and no write error, got {st:?}"));
        }
    }

    let mut cold = vec![Vec::with_capacity(runs); slots];
    let mut warm = vec![Vec::with_capacity(runs); slots];
    let mut memory = vec![Vec::with_capacity(runs); slots];
    let mut code_bytes = vec![0; slots];
    const STEPS: [&str; 6] = [
        "stencil + key (link the closure, canonical text, SHA-256)",
        "store get (open, read, check frame and checksum)",
        "decode the artifact (postcard) and check it",
        "parse + verify the lowered IR text",
        "validate the manifest against the code",
        "device load (cpu: compile the IR for the interpreter)",
    ];
    let mut steps = vec![Vec::with_capacity(runs); STEPS.len()];
    let store = Store::open(relok_runtime::stores::artifact_config(dir.path())?).map_err(|e| e.to_string())?;
    for _ in 0..runs {
        for (si, &s) in CACHE_STRATEGIES.iter().enumerate() {
            for (ki, (ex, m)) in EXAMPLES.iter().zip(&modules).enumerate() {
                let cache = KernelCache::uncached();
                let t = Instant::now();
                load::by_module(device, &session, &cache, m, ex.kernel, s, None).map_err(err(ex, s))?;
                cold[si * nk + ki].push(micros(t));
                if cache.stats().compiles != 1 {
                    return Err(format!("{} ({s}): a cold compile did not compile: {:?}", ex.name, cache.stats()));
                }
                let cache = KernelCache::open(dir.path()).map_err(|e| e.to_string())?;
                let t = Instant::now();
                // Held, so that the memory hit below finds it loaded.
                let _loaded = load::by_module(device, &session, &cache, m, ex.kernel, s, None).map_err(err(ex, s))?;
                warm[si * nk + ki].push(micros(t));
                expect_store_hit(&cache.stats(), &format!("{} ({s})", ex.name))?;
                let t = Instant::now();
                load::by_module(device, &session, &cache, m, ex.kernel, s, None).map_err(err(ex, s))?;
                memory[si * nk + ki].push(micros(t));
                let st = cache.stats();
                if st.memory.hits != 1 || st.compiles != 0 || st.store.hits != 1 {
                    return Err(format!("{} ({s}): expected a memory hit, got {st:?}", ex.name));
                }
            }
        }
        // The warm path (table) step by step, as the kernel cache and the
        // cpu device's load take it.
        let mut sums = [0.0; STEPS.len()];
        for (ki, (ex, m)) in EXAMPLES.iter().zip(&modules).enumerate() {
            let s = Strategy::Table;
            let t = Instant::now();
            let stencil = Stencil::new(m, ex.kernel).map_err(|e| e.to_string())?;
            let key = stencil.key(CodeTarget::Cpu, s, CompileOptions::default());
            sums[0] += micros(t);
            let t = Instant::now();
            let Lookup::Hit(payload) = store.get(Key(key)) else {
                return Err(format!("{}: the store does not hold its artifact", ex.name));
            };
            sums[1] += micros(t);
            let t = Instant::now();
            let artifact = Artifact::from_payload(&payload).map_err(|e| e.to_string())?;
            artifact.check(&key, CodeTarget::Cpu, s).map_err(|e| e.to_string())?;
            sums[2] += micros(t);
            let t = Instant::now();
            let lowered = artifact.lowered().map_err(|e| e.to_string())?;
            sums[3] += micros(t);
            let t = Instant::now();
            lowered.manifest.validate(&site_table(&lowered)).map_err(|e| e.to_string())?;
            sums[4] += micros(t);
            let t = Instant::now();
            device.compile(&lowered.module, &lowered.kernel).map_err(|e| e.to_string())?;
            sums[5] += micros(t);
            code_bytes[ki] = artifact.code.len();
        }
        for (acc, x) in steps.iter_mut().zip(sums) {
            acc.push(x);
        }
    }
    drop(store);
    // Patch code sizes, once.
    {
        let store = Store::open(relok_runtime::stores::artifact_config(dir.path())?).map_err(|e| e.to_string())?;
        for (ki, (ex, m)) in EXAMPLES.iter().zip(&modules).enumerate() {
            let key = Stencil::new(m, ex.kernel).map_err(|e| e.to_string())?.key(
                CodeTarget::Cpu,
                Strategy::Patch,
                CompileOptions::default(),
            );
            if let Lookup::Hit(p) = store.get(Key(key)) {
                code_bytes[nk + ki] = Artifact::from_payload(&p).map_err(|e| e.to_string())?.code.len();
            }
        }
    }

    let (children, walls) = run_children(dir.path(), child_runs, spawn)?;
    let mut child_open_load = vec![Vec::with_capacity(child_runs); slots];
    let mut child_load = vec![Vec::with_capacity(child_runs); slots];
    for r in &children {
        if r.loads.len() != slots {
            return Err(format!("bench child reported {} loads, expected {slots}", r.loads.len()));
        }
        for (i, l) in r.loads.iter().enumerate() {
            child_open_load[i].push(l.open_load_us);
            child_load[i].push(l.load_us);
        }
    }

    let row = |kernel: &str, s: Strategy, code: usize, [c, w, mem, col, cl]: [f64; 5]| CacheRow {
        kernel: kernel.into(),
        strategy: s.name().into(),
        code_bytes: code,
        cold_us: c,
        warm_us: w,
        memory_us: mem,
        child_open_load_us: col,
        child_load_us: cl,
        cold_over_warm: c / w,
        cold_over_child: c / col,
    };
    // Per run, the sum over the examples of one strategy.
    let totals = |xs: &[Vec<f64>], si: usize| -> f64 {
        let n = xs[si * nk].len();
        median((0..n).map(|r| (0..nk).map(|k| xs[si * nk + k][r]).sum()).collect())
    };
    let mut rows = Vec::with_capacity(slots + CACHE_STRATEGIES.len());
    for (si, &s) in CACHE_STRATEGIES.iter().enumerate() {
        for (ki, ex) in EXAMPLES.iter().enumerate() {
            let i = si * nk + ki;
            let m = |xs: &[Vec<f64>]| median(xs[i].clone());
            rows.push(row(
                ex.name,
                s,
                code_bytes[i],
                [m(&cold), m(&warm), m(&memory), m(&child_open_load), m(&child_load)],
            ));
        }
    }
    for (si, &s) in CACHE_STRATEGIES.iter().enumerate() {
        let code = code_bytes[si * nk..(si + 1) * nk].iter().sum();
        let t = |xs: &[Vec<f64>]| totals(xs, si);
        rows.push(row("total", s, code, [t(&cold), t(&warm), t(&memory), t(&child_open_load), t(&child_load)]));
    }
    let warm_steps = STEPS.iter().zip(steps).map(|(&name, xs)| Step { name, median_us: median(xs) }).collect();
    drop(dir);

    Ok(CacheReport { runs, child_runs, rows, warm_steps, child_wall_ms: median(walls), store: store_scale(quick)? })
}

/// Prints the report as text; `device` names the cpu device it ran on.
pub fn print(device: &str, r: &CacheReport) {
    println!(
        "relok bench cache on {device}: medians of {} runs in this process, {} child processes",
        r.runs, r.child_runs
    );
    println!("cold: compile, no store; warm: a store hit in this process (memory tier empty);");
    println!("mem: a memory-tier hit; child: a new process, KernelCache::open + load (ld: load");
    println!("alone); IR B: bytes of lowered IR text in the artifact; times in µs\n");
    println!(
        "{:<10} {:<8} {:>6} {:>9} {:>8} {:>9} {:>6} {:>9} {:>8} {:>10}",
        "kernel", "strategy", "IR B", "cold", "warm", "cold/warm", "mem", "child", "child ld", "cold/child"
    );
    for row in &r.rows {
        if row.kernel == "total" && row.strategy == "table" {
            println!();
        }
        println!(
            "{:<10} {:<8} {:>6} {:>9.1} {:>8.1} {:>8.1}x {:>6.1} {:>9.1} {:>8.1} {:>9.1}x",
            row.kernel,
            row.strategy,
            row.code_bytes,
            row.cold_us,
            row.warm_us,
            row.cold_over_warm,
            row.memory_us,
            row.child_open_load_us,
            row.child_load_us,
            row.cold_over_child
        );
    }
    println!("\nwarm path (table) step by step, summed over the examples (medians):");
    for s in &r.warm_steps {
        println!("  {:<62} {:>9.1} µs", s.name, s.median_us);
    }
    let sum: f64 = r.warm_steps.iter().map(|s| s.median_us).sum();
    let whole =
        r.rows.iter().find(|row| row.kernel == "total" && row.strategy == "table").map_or(f64::NAN, |row| row.warm_us);
    println!("  {:<62} {:>9.1} µs (the whole call, timed as one: {whole:.1} µs)", "sum of the steps", sum);
    println!("\nchild process wall time (spawn to exit): {:.2} ms", r.child_wall_ms);
    let s = &r.store;
    println!("\nstore with {} entries of {} B payload (written in {:.1} s):", s.entries, s.payload_bytes, s.fill_s);
    println!(
        "  Store::open           {:>8.1} µs (empty store: {:.1} µs; {} opens each)",
        s.open_full_us, s.open_empty_us, s.open_runs
    );
    println!("  get, present key      {:>8.1} µs ({} lookups)", s.get_hit_us, s.lookups);
    println!("  get, absent key       {:>8.1} µs (empty store: {:.1} µs)", s.get_miss_us, s.get_miss_empty_us);
}

/// A key from a counter and a seed (splitmix64 over the 32 bytes): keys
/// spread over every shard, as digests do.
fn synthetic_key(i: u64, seed: u64) -> Key {
    let mut state = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ seed.wrapping_mul(0xd1b5_4a32_d192_ed03);
    let mut key = [0u8; 32];
    for chunk in key.chunks_mut(8) {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        chunk.copy_from_slice(&z.to_le_bytes());
    }
    Key(key)
}

/// Fills a store with many small entries (written directly in the store's
/// layout: framed by `entry::encode`, at `Store::entry_path`), then times
/// `Store::open` against an empty store's, and lookups that hit and miss.
fn store_scale(quick: bool) -> Result<StoreScale, String> {
    let entries = if quick { 2_000 } else { 100_000 };
    let open_runs = if quick { 21 } else { 101 };
    let lookups = if quick { 201 } else { 2_001 };
    let payload_bytes = 256;
    let full = TempDir::new("store-full")?;
    let empty = TempDir::new("store-empty")?;
    let open = |root: &Path| {
        relok_runtime::stores::artifact_config(root).and_then(|c| Store::open(c).map_err(|e| e.to_string()))
    };
    let keys: Vec<Key> = (0..entries as u64).map(|i| synthetic_key(i, 1)).collect();
    let t = Instant::now();
    {
        let store = open(full.path())?;
        for shard in 0..=255u8 {
            let dir = store.dir().join(format!("{shard:02x}"));
            fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        let payload = vec![0x5a; payload_bytes];
        for &k in &keys {
            let path = store.entry_path(k);
            fs::write(&path, entry::encode(entry::Kind::Artifact, COMPILER_ID, k, &payload))
                .map_err(|e| format!("{}: {e}", path.display()))?;
        }
    }
    let fill_s = t.elapsed().as_secs_f64();
    drop(open(empty.path())?);

    let mut open_full = Vec::with_capacity(open_runs);
    let mut open_empty = Vec::with_capacity(open_runs);
    for _ in 0..open_runs {
        let t = Instant::now();
        let s = open(full.path())?;
        open_full.push(micros(t));
        drop(s);
        let t = Instant::now();
        let s = open(empty.path())?;
        open_empty.push(micros(t));
        drop(s);
    }

    let store = open(full.path())?;
    let empty_store = open(empty.path())?;
    let (mut hit, mut miss, mut miss_empty) =
        (Vec::with_capacity(lookups), Vec::with_capacity(lookups), Vec::with_capacity(lookups));
    for i in 0..lookups as u64 {
        // A present key picked across the whole store, and absent ones.
        let k = keys[(synthetic_key(i, 3).0[0] as usize * 65_537 + i as usize * 7_919) % entries];
        let t = Instant::now();
        let found = store.get(k);
        hit.push(micros(t));
        if !matches!(found, Lookup::Hit(ref p) if p.len() == payload_bytes) {
            return Err(format!("store at scale: key {k} not found: {found:?}"));
        }
        let absent = synthetic_key(i, 2);
        let t = Instant::now();
        let found = store.get(absent);
        miss.push(micros(t));
        if found != Lookup::Miss {
            return Err(format!("store at scale: absent key {absent} found: {found:?}"));
        }
        let t = Instant::now();
        let found = empty_store.get(absent);
        miss_empty.push(micros(t));
        if found != Lookup::Miss {
            return Err(format!("empty store: absent key {absent} found: {found:?}"));
        }
    }
    let st = store.stats();
    if st.hits != lookups as u64 || st.misses != lookups as u64 || st.corrupt != 0 {
        return Err(format!("store at scale: expected {lookups} hits and misses, got {st:?}"));
    }
    drop((store, empty_store));
    Ok(StoreScale {
        entries,
        payload_bytes,
        fill_s,
        open_full_us: median(open_full),
        open_empty_us: median(open_empty),
        open_runs,
        get_hit_us: median(hit),
        get_miss_us: median(miss),
        get_miss_empty_us: median(miss_empty),
        lookups,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// Set in a child started by `cache_bench_quick`: the store root.
    const CHILD_ENV: &str = "RELOK_BENCH_TEST_CHILD_STORE";

    /// The child process of `cache_bench_quick` (this test binary, run with
    /// only this test); does nothing in an ordinary test run.
    #[test]
    fn cache_child_entry() {
        let Some(root) = std::env::var_os(CHILD_ENV) else { return };
        let report = child(&CpuDevice::new(0), Path::new(&root)).unwrap();
        let mut out = std::io::stdout().lock();
        writeln!(out, "\n{}", serde_json::to_string(&report).unwrap()).unwrap();
    }

    #[test]
    fn cache_bench_quick() {
        let exe = std::env::current_exe().unwrap();
        let spawn = |root: &Path| {
            let mut c = std::process::Command::new(&exe);
            c.args(["bench::cache::tests::cache_child_entry", "--exact", "--nocapture", "--test-threads=1"])
                .env(CHILD_ENV, root);
            c
        };
        // Every warm load is checked to be a store hit with no compile
        // inside run (and inside the child): an error otherwise.
        let r = run(&CpuDevice::new(0), true, &spawn).unwrap();
        assert_eq!(r.rows.len(), (EXAMPLES.len() + 1) * CACHE_STRATEGIES.len());
        for row in &r.rows {
            for x in
                [row.cold_us, row.warm_us, row.memory_us, row.child_open_load_us, row.child_load_us, row.cold_over_warm]
            {
                assert!(x.is_finite() && x > 0.0, "{row:?}");
            }
            assert!(row.code_bytes > 0, "{row:?}");
        }
        assert_eq!(r.rows.iter().filter(|row| row.kernel == "total").count(), 2);
        assert!(r.warm_steps.iter().all(|s| s.median_us > 0.0), "{:?}", r.warm_steps);
        assert!(r.child_wall_ms > 0.0);
        let s = &r.store;
        assert_eq!(s.entries, 2_000);
        for x in [s.open_full_us, s.open_empty_us, s.get_hit_us, s.get_miss_us, s.get_miss_empty_us] {
            assert!(x.is_finite() && x > 0.0, "{s:?}");
        }
    }

    #[test]
    fn synthetic_keys_differ_and_spread() {
        let keys: std::collections::HashSet<_> = (0..1000).map(|i| synthetic_key(i, 1)).collect();
        assert_eq!(keys.len(), 1000);
        let shards: std::collections::HashSet<_> = keys.iter().map(|k| k.0[0]).collect();
        assert!(shards.len() > 200);
        assert!(!keys.contains(&synthetic_key(0, 2)));
    }
}
