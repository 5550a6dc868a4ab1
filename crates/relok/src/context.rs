//! [`Context`]: one device, the host objects of this program on it (a
//! session), and the kernel cache in front of the compiler.

use crate::Element;
use crate::buffer::Buffer;
use crate::core::{Allocation, Shared};
use crate::error::{Error, Result};
use crate::kernel::{Kernel, Symbol};
use crate::program::KernelSource;
use crate::stream::Stream;
use relok_compiler::artifact::CompileOptions;
use relok_ir::Strategy;
use relok_runtime::{CacheStats, CodeStats, Device, DeviceKind, DeviceMemory, KernelCache, Session};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A device opened for this program, with its host objects and kernel
/// cache. Cheap to clone (clones share the device); `Send + Sync`.
///
/// Each context is its own device: buffers, streams, kernels and symbols
/// of one context are refused by another ([`Error::WrongContext`]), even
/// when both opened the same GPU.
///
/// ```
/// let ctx = relok::Context::cpu();
/// let x = ctx.upload(&[1u32, 2, 3])?;
/// assert_eq!(x.download()?, [1, 2, 3]);
/// # Ok::<(), relok::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Context {
    pub(crate) shared: Arc<Shared>,
}

/// Where a context keeps compiled kernels.
#[derive(Debug, Clone, PartialEq, Eq)]
enum CacheChoice {
    /// `RELOK_CACHE_DIR`, else `$XDG_CACHE_HOME/relok`, else
    /// `~/.cache/relok`; `RELOK_CACHE=off` turns it off; `RELOK_REMOTE`
    /// puts a shared Redis behind it.
    Environment,
    /// No artifact store: this process's memory only.
    Off,
    /// The store under this folder.
    Dir(PathBuf),
}

/// Options for a [`Context`]: the device, the strategy, the cache,
/// checked mode.
///
/// ```
/// let ctx = relok::Context::builder().device("cpu:1").strategy(relok::Strategy::Patch).no_cache().build()?;
/// assert_eq!(ctx.device_name(), "cpu:1");
/// assert_eq!(ctx.strategy(), relok::Strategy::Patch);
/// # Ok::<(), relok::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct ContextBuilder {
    device: String,
    strategy: Strategy,
    cache: CacheChoice,
    checked: Option<bool>,
}

/// The variable that turns checked mode off (or on) for contexts whose
/// builder did not choose ([`ContextBuilder::checked`]).
const CHECKED_VARIABLE: &str = "RELOK_CHECKED";

impl ContextBuilder {
    /// The device: `cpu[:N]`, `cuda[:N]`, `wgpu[:N]` or `best` (the
    /// default).
    ///
    /// ```
    /// let ctx = relok::Context::builder().device("cpu").build()?;
    /// assert_eq!(ctx.device_kind(), relok::DeviceKind::Cpu);
    /// # Ok::<(), relok::Error>(())
    /// ```
    pub fn device(mut self, spec: &str) -> ContextBuilder {
        spec.clone_into(&mut self.device);
        self
    }

    /// How host objects' words reach the code: `table` (the default;
    /// every device), `patch` (cpu and cuda) or `bake` (one process only:
    /// never stored).
    ///
    /// ```
    /// let ctx = relok::Context::builder().device("cpu").strategy(relok::Strategy::Bake).build()?;
    /// assert_eq!(ctx.strategy(), relok::Strategy::Bake);
    /// # Ok::<(), relok::Error>(())
    /// ```
    pub fn strategy(mut self, strategy: Strategy) -> ContextBuilder {
        self.strategy = strategy;
        self
    }

    /// No artifact store on disk: kernels are compiled once per process
    /// (and a GPU's machine code is not archived either).
    ///
    /// ```
    /// let ctx = relok::Context::builder().device("cpu").no_cache().build()?;
    /// assert_eq!(ctx.cache_stats().store.hits, 0);
    /// # Ok::<(), relok::Error>(())
    /// ```
    pub fn no_cache(mut self) -> ContextBuilder {
        self.cache = CacheChoice::Off;
        self
    }

    /// The artifact store under `root` (instead of the environment's), and
    /// the GPU's binary archive (cubins, the pipeline cache) beside it,
    /// with the environment's remote (`RELOK_REMOTE`) behind them as behind
    /// the default store. A root that cannot be used (a folder others may
    /// write, a read-only file system) leaves the context without a store,
    /// with a warning in the log, as the default store does.
    ///
    /// ```
    /// let root = std::env::temp_dir().join(format!("relok-doc-cache-{}", std::process::id()));
    /// let ctx = relok::Context::builder().device("cpu").cache_dir(&root).build()?;
    /// # drop(ctx); let _ = std::fs::remove_dir_all(&root);
    /// # Ok::<(), relok::Error>(())
    /// ```
    pub fn cache_dir(mut self, root: impl Into<PathBuf>) -> ContextBuilder {
        self.cache = CacheChoice::Dir(root.into());
        self
    }

    /// Checked mode for GPU code (on by default): every access to a
    /// buffer parameter is bounds-checked, loops have an iteration budget
    /// (an endless loop ends with a fault instead of hanging the GPU) and
    /// writes into host values are refused, each reported at
    /// synchronisation as the cpu device reports it ([`Error::Fault`])
    /// instead of being undefined. `checked(false)` compiles without these
    /// checks, as CUDA C does; `RELOK_CHECKED=0` does so for every context
    /// whose builder does not choose. The cpu device always checks; Rust
    /// kernels' own bounds checks (`x[i]`) are part of the kernel and stay
    /// either way. Checked and unchecked kernels are cached apart. What
    /// each device checks and what it costs: docs/cuda.md and docs/wgpu.md,
    /// "Checked mode".
    ///
    /// ```
    /// let ctx = relok::Context::builder().device("cpu").checked(false).build()?;
    /// assert!(!ctx.checked());
    /// assert!(relok::Context::builder().device("cpu").checked(true).build()?.checked());
    /// # Ok::<(), relok::Error>(())
    /// ```
    pub fn checked(mut self, on: bool) -> ContextBuilder {
        self.checked = Some(on);
        self
    }

    /// Opens the device. A store that cannot be opened leaves the context
    /// without one (compiling in memory), never failing.
    ///
    /// ```
    /// let err = relok::Context::builder().device("tpu").build().unwrap_err();
    /// assert!(matches!(err, relok::Error::Open(_)), "{err}");
    /// ```
    pub fn build(self) -> Result<Context> {
        let checked = match self.checked {
            Some(on) => on,
            None => checked_from_env()?,
        };
        // The binary archive (cubins, the pipeline cache) lives beside the
        // artifact store: under the builder's folder, or nowhere.
        let device = match &self.cache {
            CacheChoice::Environment => Device::open(&self.device)?,
            CacheChoice::Off => Device::open_in(&self.device, None)?,
            CacheChoice::Dir(root) => Device::open_in(&self.device, Some(root))?,
        };
        let target = device.target();
        if !device.strategies().contains(&self.strategy) {
            return Err(Error::Compile(relok_runtime::ProgramError::Unsupported {
                strategy: self.strategy,
                target: target.name(),
            }));
        }
        let cache = match &self.cache {
            CacheChoice::Environment => KernelCache::from_env(),
            CacheChoice::Off => KernelCache::uncached(),
            CacheChoice::Dir(root) => KernelCache::at(root),
        };
        let options = CompileOptions { checked, ..CompileOptions::default() };
        Ok(Context::new(device, cache.with_options(options), self.strategy))
    }
}

/// Checked mode as `RELOK_CHECKED` asks ([`parse_checked`]).
fn checked_from_env() -> Result<bool> {
    parse_checked(std::env::var_os(CHECKED_VARIABLE).as_deref())
}

/// Checked mode as a `RELOK_CHECKED` value asks: `1`/`on`/`true` or
/// `0`/`off`/`false`; on when unset.
fn parse_checked(value: Option<&std::ffi::OsStr>) -> Result<bool> {
    let Some(value) = value else { return Ok(true) };
    match value.to_str().map(str::trim) {
        Some("1" | "on" | "true") => Ok(true),
        Some("0" | "off" | "false") => Ok(false),
        _ => Err(Error::BadSetting {
            variable: CHECKED_VARIABLE,
            value: value.to_string_lossy().into_owned(),
            expected: "1, on, true, 0, off or false",
        }),
    }
}

/// The stack of each thread [`Context::kernels`] starts (as a main
/// thread's: the compiler recurses over a kernel's nesting).
const WORKER_STACK: usize = 8 << 20;

impl Context {
    /// Options for a context ([`ContextBuilder`]).
    ///
    /// ```
    /// let ctx = relok::Context::builder().device("cpu").build()?;
    /// # Ok::<(), relok::Error>(())
    /// ```
    pub fn builder() -> ContextBuilder {
        ContextBuilder {
            device: "best".to_owned(),
            strategy: Strategy::Table,
            cache: CacheChoice::Environment,
            checked: None,
        }
    }

    /// The best device here: the first CUDA GPU, else the first GPU wgpu
    /// finds (not a software rasteriser), else the cpu device.
    ///
    /// ```
    /// let ctx = relok::Context::best()?;
    /// println!("running on {}", ctx.device_name());
    /// # Ok::<(), relok::Error>(())
    /// ```
    pub fn best() -> Result<Context> {
        Context::builder().build()
    }

    /// The device `spec` names: `cpu[:N]`, `cuda[:N]`, `wgpu[:N]`, `best`.
    ///
    /// ```
    /// let ctx = relok::Context::open("cpu:2")?;
    /// assert_eq!(ctx.device_name(), "cpu:2");
    /// assert!(relok::Context::open("cuda:x").is_err());
    /// # Ok::<(), relok::Error>(())
    /// ```
    pub fn open(spec: &str) -> Result<Context> {
        Context::builder().device(spec).build()
    }

    /// The device `RELOK_DEVICE` names (`cpu`, `cuda[:N]`, `wgpu[:N]`,
    /// `best`), `best` when it is unset.
    ///
    /// ```
    /// let ctx = relok::Context::from_env()?;
    /// # Ok::<(), relok::Error>(())
    /// ```
    pub fn from_env() -> Result<Context> {
        match std::env::var("RELOK_DEVICE") {
            Ok(spec) => Context::open(spec.trim()),
            Err(std::env::VarError::NotPresent) => Context::best(),
            Err(std::env::VarError::NotUnicode(_)) => Err(Error::BadEnvironment),
        }
    }

    /// The cpu reference device (always there), with the environment's
    /// cache and `RELOK_CHECKED` (a value it does not take counts as on:
    /// this constructor cannot fail; the cpu device checks every access
    /// whatever the options, which only name its cache entries).
    ///
    /// ```
    /// assert_eq!(relok::Context::cpu().device_name(), "cpu:0");
    /// ```
    pub fn cpu() -> Context {
        let options = CompileOptions { checked: checked_from_env().unwrap_or(true), ..CompileOptions::default() };
        Context::new(
            Device::Cpu(relok_runtime::CpuDevice::new(0)),
            KernelCache::from_env().with_options(options),
            Strategy::Table,
        )
    }

    /// A context over an open device, with a session of its own.
    fn new(device: Device, cache: KernelCache, strategy: Strategy) -> Context {
        let name = device.name();
        Context {
            shared: Arc::new(Shared {
                device,
                session: Session::new(),
                cache,
                strategy,
                name,
                rust_kernels: Default::default(),
                host_statics: Default::default(),
            }),
        }
    }

    /// The device's name: `cpu:0`, `cuda:0 (NVIDIA H200, sm_90)`,
    /// `wgpu:0 (llvmpipe (LLVM 15.0.6, 256 bits), vulkan)`.
    ///
    /// ```
    /// assert_eq!(relok::Context::cpu().device_name(), "cpu:0");
    /// ```
    pub fn device_name(&self) -> &str {
        &self.shared.name
    }

    /// The kind of device.
    ///
    /// ```
    /// assert_eq!(relok::Context::cpu().device_kind(), relok::DeviceKind::Cpu);
    /// ```
    pub fn device_kind(&self) -> DeviceKind {
        self.shared.device.device_id().kind()
    }

    /// The strategy kernels are loaded with.
    ///
    /// ```
    /// assert_eq!(relok::Context::cpu().strategy(), relok::Strategy::Table);
    /// ```
    pub fn strategy(&self) -> Strategy {
        self.shared.strategy
    }

    /// Whether GPU code is compiled in checked mode
    /// ([`ContextBuilder::checked`]).
    ///
    /// ```
    /// assert!(relok::Context::builder().device("cpu").checked(true).build()?.checked());
    /// # Ok::<(), relok::Error>(())
    /// ```
    pub fn checked(&self) -> bool {
        self.shared.cache.options().checked
    }

    /// A new buffer holding a copy of `data`.
    ///
    /// ```
    /// let ctx = relok::Context::cpu();
    /// let b = ctx.upload(&[1.5f32, 2.5])?;
    /// assert_eq!(b.len(), 2);
    /// assert_eq!(b.download()?, [1.5, 2.5]);
    /// # Ok::<(), relok::Error>(())
    /// ```
    pub fn upload<T: Element>(&self, data: &[T]) -> Result<Buffer<T>> {
        if data.is_empty() {
            return self.zeros(0);
        }
        let ptr = self.shared.device.alloc_filled(bytemuck::cast_slice(data))?;
        Ok(Buffer::new(Arc::new(Allocation::new(Arc::clone(&self.shared), ptr)), data.len()))
    }

    /// A new buffer of `len` zeros.
    ///
    /// A buffer of no elements (`zeros(0)`, `upload(&[])`) still has an
    /// address of its own, so that it can be passed to kernels: on every
    /// device it is backed by room for one element, which the bounds checks
    /// treat as the buffer's (a kernel's access to its element 0 is not a
    /// fault). Its [`Buffer::len`] is 0 and it downloads as empty.
    ///
    /// ```
    /// let ctx = relok::Context::cpu();
    /// assert_eq!(ctx.zeros::<i64>(3)?.download()?, [0, 0, 0]);
    /// assert!(matches!(ctx.zeros::<u64>(usize::MAX), Err(relok::Error::TooLarge { .. })));
    /// assert!(ctx.zeros::<f32>(0)?.download()?.is_empty());
    /// # Ok::<(), relok::Error>(())
    /// ```
    pub fn zeros<T: Element>(&self, len: usize) -> Result<Buffer<T>> {
        let elem_bytes = size_of::<T>();
        let too_large = Error::TooLarge { len, elem_bytes };
        let bytes = len.checked_mul(elem_bytes).and_then(|b| u64::try_from(b).ok()).ok_or(too_large)?;
        // A zero-length buffer still has an address of its own.
        let ptr = self.shared.device.alloc_zeroed(bytes.max(elem_bytes as u64))?;
        Ok(Buffer::new(Arc::new(Allocation::new(Arc::clone(&self.shared), ptr)), len))
    }

    /// A new stream: launches on it run in order, asynchronously.
    ///
    /// ```
    /// let s = relok::Context::cpu().stream();
    /// s.synchronize()?;
    /// # Ok::<(), relok::Error>(())
    /// ```
    pub fn stream(&self) -> Stream {
        Stream::new(Arc::clone(&self.shared))
    }

    /// Kernel `name` of a [`crate::Program`] or a [`crate::Source`],
    /// compiled for this device (or taken from the cache: memory, bundles,
    /// the artifact store — by the text's source key first, so a warm
    /// start from a `Source` parses nothing) and loaded with this
    /// context's host objects delivered.
    ///
    /// ```
    /// let ctx = relok::Context::cpu();
    /// let p = relok::Program::parse("kernel @k() {\n    return\n}\nfn @f() {\n    return\n}\n")?;
    /// let k = ctx.kernel(&p, "k")?;
    /// assert_eq!(k.name(), "k");
    /// assert!(matches!(ctx.kernel(&p, "nope"), Err(relok::Error::NoSuchKernel { .. })));
    /// assert!(matches!(ctx.kernel(&p, "f"), Err(relok::Error::NotAKernel { .. })));
    /// # Ok::<(), relok::Error>(())
    /// ```
    pub fn kernel(&self, from: &impl KernelSource, name: &str) -> Result<Kernel> {
        Kernel::load(&self.shared, from, name)
    }

    /// Several kernels, each as [`Context::kernel`] would load it, in the
    /// order asked, loaded together: those a cache holds by their text's
    /// source key are loaded first, on this thread; the others (compiled,
    /// or found by their artifact key) are loaded in parallel on as many
    /// threads as the machine has cores, at most one per kernel, this one
    /// included. An application that loads its kernels this way before
    /// its first result waits, on a cold start, for about its compiles
    /// divided by its cores instead of their sum. A warm start of kernels
    /// whose text is known ([`crate::Source`], a parsed [`crate::Program`])
    /// starts no thread; programs without text (a Rust kernel's
    /// `program()`) are always loaded on the threads.
    ///
    /// On an error, the error of the first kernel that failed, in the
    /// order asked, is returned. Sources of different types go in as
    /// `&(dyn KernelSource + Sync)`.
    ///
    /// ```
    /// use relok::{Context, Source};
    /// static ADD: Source = Source::new("add.rk", "kernel @add(v0: ptr<global, u32>) {
    ///     v1: u32 = thread_id.x
    ///     v2: u32 = load v0[v1]
    ///     v3: u32 = const 1
    ///     v4: u32 = add v2, v3
    ///     store v0[v1], v4
    ///     return
    /// }
    /// kernel @nothing() {
    ///     return
    /// }
    /// ");
    /// let ctx = Context::cpu();
    /// let [add, nothing] = ctx.kernels(&[(&ADD, "add"), (&ADD, "nothing")])?.try_into().unwrap();
    /// assert_eq!((add.name(), nothing.name()), ("add", "nothing"));
    /// assert!(matches!(ctx.kernels(&[(&ADD, "add"), (&ADD, "nope")]), Err(relok::Error::NoSuchKernel { .. })));
    /// # Ok::<(), relok::Error>(())
    /// ```
    pub fn kernels<S: KernelSource + Sync>(&self, kernels: &[(S, &str)]) -> Result<Vec<Kernel>> {
        let ctx = &self.shared;
        let mut loaded = Vec::with_capacity(kernels.len());
        let mut rest = Vec::new();
        // A failure here ends the scan: only kernels before it are
        // compiled, and its error is returned unless one of theirs fails.
        let mut failed = None;
        for (i, (from, name)) in kernels.iter().enumerate() {
            let source_key = Kernel::source_key(ctx, from, name);
            match Kernel::by_source(ctx, source_key, name) {
                Ok(Some(k)) => loaded.push(Some(k)),
                Ok(None) => {
                    loaded.push(None);
                    rest.push((i, source_key));
                }
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        let compile = |&(i, source_key): &(usize, Option<relok_cache::Key>)| {
            let (from, name) = &kernels[i];
            Kernel::compile(ctx, from, name, source_key)
        };
        let threads = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get).min(rest.len());
        let mut done: Vec<(usize, Result<Kernel>)> = Vec::with_capacity(rest.len());
        if threads <= 1 {
            for r in &rest {
                let k = compile(r);
                let stop = k.is_err();
                done.push((r.0, k));
                if stop {
                    break;
                }
            }
        } else {
            // This thread and `threads - 1` more each take the next kernel
            // until none is left.
            let next = AtomicUsize::new(0);
            let work = || {
                let mut mine = Vec::new();
                loop {
                    let j = next.fetch_add(1, Ordering::Relaxed);
                    let Some(r) = rest.get(j) else { break mine };
                    mine.push((r.0, compile(r)));
                }
            };
            done = std::thread::scope(|scope| {
                let helpers: Vec<_> = (1..threads)
                    .filter_map(|_| std::thread::Builder::new().stack_size(WORKER_STACK).spawn_scoped(scope, work).ok())
                    .collect();
                let mut all = work();
                for h in helpers {
                    all.extend(h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)));
                }
                all
            });
            done.sort_unstable_by_key(|(i, _)| *i);
        }
        for (i, k) in done {
            loaded[i] = Some(k?);
        }
        if let Some(e) = failed {
            return Err(e);
        }
        Ok(loaded.into_iter().flatten().collect())
    }

    /// The symbol `name` (a `word` argument: its word in this program,
    /// equal to the kernel's `ref :name`).
    ///
    /// ```
    /// let ctx = relok::Context::cpu();
    /// assert_eq!(ctx.symbol("foo").name(), "foo");
    /// ```
    pub fn symbol(&self, name: &str) -> Symbol {
        Symbol::new(&self.shared, name)
    }

    /// The value of a runtime global on this context's device (zero until
    /// a kernel changes it; see [`crate::Global`]).
    ///
    /// ```
    /// static UNUSED: relok::Global<u64> = relok::Global::new("doc_unused");
    /// let ctx = relok::Context::cpu();
    /// assert_eq!(ctx.global_value(&UNUSED)?, 0);
    /// // A name no kernel could use (not `[A-Za-z0-9_]+`) is an error.
    /// assert!(ctx.global_value(&relok::Global::<u32>::new("not a name!")).is_err());
    /// // A cell relok writes itself is not the program's.
    /// let reserved = relok::Global::<u32>::new("relok_host__app__LUT");
    /// assert!(matches!(ctx.global_value(&reserved), Err(relok::Error::ReservedGlobal { .. })));
    /// # Ok::<(), relok::Error>(())
    /// ```
    pub fn global_value<T: Element>(&self, global: &crate::Global<T>) -> Result<T> {
        let s = &self.shared;
        crate::program::rust::declare_user_global(s, global.name(), size_of::<T>())?;
        let cell = s
            .session
            .global_cell(&s.device, global.name())
            .map_err(relok_runtime::ProgramError::from)
            .map_err(Error::Compile)?;
        let bytes = s.device.read_bytes(cell, size_of::<T>() as u64)?;
        // The bytes of exactly one element: one value, or the bool's byte.
        T::from_device_bytes(&bytes).map(|v| v[0]).map_err(|i| Error::InvalidBool { index: i, byte: bytes[i] })
    }

    /// Makes a bundle's precompiled kernels (from `relok precompile` or
    /// `relok-build`) available, and gives the device the bundle's machine
    /// code for it: a program that ships one starts with zero compiles.
    /// Returns how many artifact entries it holds (each kernel's artifact
    /// and its source-key alias: two per kernel, target and strategy). A
    /// damaged bundle, or one made by another relok, is refused as a whole.
    ///
    /// ```
    /// let err = relok::Context::cpu().load_bundle(b"not a bundle").unwrap_err();
    /// assert!(matches!(err, relok::Error::Bundle(_)));
    /// ```
    pub fn load_bundle(&self, bytes: &[u8]) -> Result<usize> {
        Ok(self.shared.device.load_bundle(&self.shared.cache, bytes)?)
    }

    /// [`Context::load_bundle`] of a bundle that lives as long as the
    /// program, as one embedded with `include_bytes!` does: its entries are
    /// used where they lie. `load_bundle` copies the bundle once (for an
    /// application's 64 kernels, 0.85 MB: about 0.4 ms of fresh pages).
    ///
    /// ```
    /// static BUNDLE: &[u8] = b"RELOKBDL but damaged";
    /// let err = relok::Context::cpu().load_static_bundle(BUNDLE).unwrap_err();
    /// assert!(matches!(err, relok::Error::Bundle(_)));
    /// ```
    pub fn load_static_bundle(&self, bytes: &'static [u8]) -> Result<usize> {
        Ok(self.shared.device.load_static_bundle(&self.shared.cache, bytes)?)
    }

    /// What the kernel cache did in this context: compiles, hits per tier,
    /// and the remote tier's counters (`remote`: hits, misses, rejected,
    /// errors…) when `RELOK_REMOTE` names one (see docs/cache.md, "The
    /// remote tier": a shared Redis behind the environment's store, with
    /// signed entries).
    ///
    /// ```
    /// let ctx = relok::Context::builder().device("cpu").no_cache().build()?;
    /// let p = relok::Program::parse("kernel @k() {\n    return\n}\n")?;
    /// ctx.kernel(&p, "k")?;
    /// assert_eq!(ctx.cache_stats().compiles, 1);
    /// assert_eq!(ctx.cache_stats().remote.hits, 0);
    /// # Ok::<(), relok::Error>(())
    /// ```
    pub fn cache_stats(&self) -> CacheStats {
        self.shared.cache.stats()
    }

    /// Why this context has no artifact store although it was built with
    /// one (the environment's, or [`ContextBuilder::cache_dir`]): a root
    /// that others may write, a read-only file system. The context then
    /// compiles in memory; the same text is logged as a warning when the
    /// context is built. `None` when the store opened or none was asked for.
    ///
    /// ```
    /// let ctx = relok::Context::builder().device("cpu").no_cache().build()?;
    /// assert_eq!(ctx.cache_warning(), None);
    /// # Ok::<(), relok::Error>(())
    /// ```
    pub fn cache_warning(&self) -> Option<&str> {
        self.shared.cache.warning()
    }

    /// How the device obtained the machine code of this context's kernels:
    /// from its binary archive, from a shipped bundle, compiled by relok,
    /// or by the driver's JIT (all zero on the cpu device).
    ///
    /// ```
    /// let ctx = relok::Context::cpu();
    /// assert_eq!(ctx.code_stats(), relok::CodeStats::default());
    /// ```
    pub fn code_stats(&self) -> CodeStats {
        self.shared.device.code_stats()
    }

    /// Live device allocations of this context: buffers, host objects,
    /// kernels' table buffers (for leak checks).
    ///
    /// ```
    /// let ctx = relok::Context::cpu();
    /// let before = ctx.device_allocations();
    /// let b = ctx.zeros::<u32>(4)?;
    /// assert_eq!(ctx.device_allocations(), before + 1);
    /// drop(b);
    /// assert_eq!(ctx.device_allocations(), before);
    /// # Ok::<(), relok::Error>(())
    /// ```
    pub fn device_allocations(&self) -> u64 {
        self.shared.device.live_allocations()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn relok_checked_takes_on_and_off_and_names_a_bad_value() {
        assert!(parse_checked(None).expect("unset"));
        for (v, on) in [("1", true), ("on", true), ("true", true), ("0", false), ("off", false), (" false ", false)] {
            assert_eq!(parse_checked(Some(OsStr::new(v))).expect(v), on, "{v}");
        }
        let e = parse_checked(Some(OsStr::new("maybe"))).expect_err("refused");
        assert!(matches!(&e, Error::BadSetting { variable: "RELOK_CHECKED", value, .. } if value == "maybe"), "{e:?}");
        assert_eq!(e.to_string(), "RELOK_CHECKED=\"maybe\": expected 1, on, true, 0, off or false");
    }
}
