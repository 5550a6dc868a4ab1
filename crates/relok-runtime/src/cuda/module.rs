//! Loading code on a cuda device (see the module docs of `cuda`): the
//! [`PtxModule`] a load makes, where its machine code comes from — a
//! bundle's cubin, the binary archive's, PTX linked into one by the
//! driver's linker (and archived), else the PTX JIT-compiled — the checks
//! of a cubin (`elf_bounds`) and of its function's parameters (`Fit`),
//! and the words' delivery; [`CudaLoadStats`] counts where the code came
//! from.

use super::launch::CudaKernel;
use super::memory::TableAlloc;
use super::{CudaDevice, driver};
use crate::error::DeviceError;
use crate::load::Validated;
use crate::lock;
use crate::memory::DeviceMemory;
use crate::session::Session;
use cudarc::driver::{CudaContext, result, sys};
use relok_cache::{Key, Lookup, Store, StoreConfig};
use relok_compiler::artifact::{Artifact, CodeTarget};
use relok_compiler::reloc::Site;
use relok_ir::Strategy;
use std::ffi::CString;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The cubin a module was loaded from, for a load record: none when the
/// driver JIT-compiled the PTX, or when a bundle supplied it (the bundle
/// serves it from memory in the next process too: writing a record would
/// only put a file write on a shipped program's first launch).
pub(super) type Cubin = Option<Arc<[u8]>>;

/// How loads on a cuda device got their machine code.
#[derive(Debug, Default)]
pub(super) struct CodeStats {
    pub(super) archive_hits: AtomicU64,
    pub(super) records: AtomicU64,
    bundled: AtomicU64,
    linked: AtomicU64,
    ptx_jit: AtomicU64,
}

/// Counters of a cuda device's loads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CudaLoadStats {
    /// Cubins loaded from the binary archive (no compile at all).
    pub archive_hits: u64,
    /// Of those, kernels loaded from a load record (no artifact read).
    pub records: u64,
    /// Cubins loaded from a bundle the application shipped (no compile).
    pub bundled: u64,
    /// PTX linked into a cubin by the driver's linker (then archived).
    pub linked: u64,
    /// PTX handed to the driver's JIT (linking failed or no archive).
    pub ptx_jit: u64,
    /// The archive's own counters in this process.
    pub archive: relok_cache::TierStats,
}

impl CudaDevice {
    /// The archive configuration of this GPU and driver under `root`.
    pub fn archive_config(&self, root: &std::path::Path) -> StoreConfig {
        let build = std::fs::read_to_string("/proc/driver/nvidia/version")
            .ok()
            .and_then(|t| t.split_whitespace().skip_while(|w| *w != "Module").nth(1).map(str::to_owned))
            .unwrap_or_else(|| "unknown".into());
        crate::stores::binary_config(
            root,
            &format!("{}-sm{}", self.name, self.sm),
            &format!("driver{}-{build}", self.driver_version),
        )
    }

    /// Uses `store` as this device's binary archive (or none).
    pub fn set_archive(&mut self, store: Option<Store>) {
        self.archive = store;
    }

    /// The binary archive, if any.
    pub fn archive(&self) -> Option<&Store> {
        self.archive.as_ref()
    }

    /// How this device's loads got their machine code.
    pub fn load_stats(&self) -> CudaLoadStats {
        let c = &self.code_stats;
        CudaLoadStats {
            archive_hits: c.archive_hits.load(Ordering::Relaxed),
            records: c.records.load(Ordering::Relaxed),
            bundled: c.bundled.load(Ordering::Relaxed),
            linked: c.linked.load(Ordering::Relaxed),
            ptx_jit: c.ptx_jit.load(Ordering::Relaxed),
            archive: self.archive.as_ref().map(Store::stats).unwrap_or_default(),
        }
    }

    /// Keeps the machine code of a bundle (see
    /// [`crate::KernelCache::load_bundle`]) for the loads that need it.
    /// Only cubins this GPU can run are ever looked up: its own compute
    /// capability's, else an earlier minor version's of the same major
    /// one; the rest are never used.
    pub fn add_machine_code(&self, code: &[(Key, bytes::Bytes)]) {
        lock(&self.bundled).extend(code.iter().cloned());
    }

    /// A bundled cubin of `ptx` this GPU runs: made for its compute
    /// capability or an earlier one of the same major version (cubins
    /// run on later minor versions), whose entry the driver finds. One
    /// the driver refuses is dropped (a miss, with a warning).
    fn bundled_module(&self, ptx: &[u8], fit: &Fit<'_>) -> Option<(PtxModule, sys::CUfunction)> {
        let entry = fit.entry;
        if lock(&self.bundled).is_empty() {
            return None;
        }
        let (major, minor) = (self.sm / 10, self.sm % 10);
        for sm in (0..=minor).rev().map(|m| major * 10 + m) {
            let key = Key(relok_compiler::ptx::cubin_key(ptx, entry, sm));
            let Some(cubin) = lock(&self.bundled).get(&key).cloned() else { continue };
            match fit.load(&self.ctx, &cubin) {
                Ok(m) => {
                    self.code_stats.bundled.fetch_add(1, Ordering::Relaxed);
                    return Some(m);
                }
                Err(e) => {
                    tracing::warn!("the bundled cubin of @{entry} for sm_{sm} was refused ({e}); compiling instead");
                    lock(&self.bundled).remove(&key);
                }
            }
        }
        None
    }

    /// The module of `ptx` and its entry, fit for the launch ([`Fit`]): a
    /// bundled cubin, else the archive's, else linked and archived, else
    /// JIT-compiled from the PTX; with the cubin for a load record
    /// ([`Cubin`]). A bundled or archived cubin that does not fit is a miss
    /// (the archive's is removed); linked or JIT-compiled code that does
    /// not is an error.
    fn module_for(&self, ptx: &[u8], fit: &Fit<'_>) -> Result<(PtxModule, sys::CUfunction, Cubin), DeviceError> {
        let entry = fit.entry;
        if let Some((m, f)) = self.bundled_module(ptx, fit) {
            return Ok((m, f, None));
        }
        let jit = || {
            self.code_stats.ptx_jit.fetch_add(1, Ordering::Relaxed);
            let m = PtxModule::load(&self.ctx, ptx)?;
            let f = fit.function(&m)?;
            Ok((m, f, None))
        };
        let Some(archive) = &self.archive else { return jit() };
        let key = Key(relok_compiler::ptx::cubin_key(ptx, entry, self.sm));
        if let Lookup::Hit(cubin) = archive.get(key) {
            match fit.load(&self.ctx, &cubin) {
                Ok((m, f)) => {
                    self.code_stats.archive_hits.fetch_add(1, Ordering::Relaxed);
                    return Ok((m, f, Some(cubin.into())));
                }
                Err(e) => archive.reject(key, &format!("the cubin was refused: {e}")),
            }
        }
        match link_cubin(&self.ctx, ptx) {
            Ok(cubin) => {
                archive.count_compile();
                let _ = archive.put(key, &cubin);
                match PtxModule::load_image(&self.ctx, &cubin) {
                    Ok(m) => {
                        self.code_stats.linked.fetch_add(1, Ordering::Relaxed);
                        let f = fit.function(&m)?;
                        Ok((m, f, Some(cubin.into())))
                    }
                    Err(e) => {
                        tracing::warn!(
                            "the driver refused the linked cubin of @{entry} ({e}); loading the PTX instead"
                        );
                        archive.reject(key, "the driver refused it");
                        jit()
                    }
                }
            }
            Err(e) => {
                tracing::warn!("linking PTX for @{entry} failed ({e}); loading the PTX instead");
                jit()
            }
        }
    }

    /// Loads a PTX artifact on this device with its words delivered (see
    /// the module docs), validating it first where the driver does not
    /// check the function unless `validated` says the kernel cache did: a
    /// new kernel, not kept in the map of loaded ones ([`Backend::load`](crate::Backend::load)
    /// is the way in), and the cubin its module was loaded from.
    pub(super) fn load_new(
        &self,
        session: &Session,
        artifact: &Artifact,
        validated: Validated,
    ) -> Result<(CudaKernel, Cubin), crate::ProgramError> {
        if !matches!(artifact.target, CodeTarget::Ptx { .. }) {
            return Err(DeviceError::Driver {
                call: "load",
                message: format!("artifact for {}, not PTX", artifact.target.name()),
            }
            .into());
        }
        // The launch's parameter buffer is built from the ABI: the loaded
        // function is checked against it below where the driver can say
        // what it takes (CUDA 12.4); before, the PTX must declare exactly
        // that entry (and the patch globals) before the driver sees it.
        if validated == Validated::No && !self.reports_params() {
            artifact.validate()?;
        }
        self.bind()?;
        let fit = self.fit(artifact)?;
        let (module, function, cubin) = self.module_for(&artifact.code, &fit)?;
        Ok((self.finish_load(session, artifact, fit, module, function)?, cubin))
    }

    /// What the code of `artifact` must take to be launched here.
    pub(super) fn fit<'a>(&self, artifact: &'a Artifact) -> Result<Fit<'a>, crate::ProgramError> {
        let params = artifact.param_types()?;
        let checked = artifact.compile_options().is_some_and(|o| o.checked);
        Ok(Fit { entry: &artifact.entry, params, checked, by_driver: self.reports_params() })
    }

    /// The kernel of `artifact` in `module`, whose `function` fits it
    /// ([`Fit`]): the function loaded, the words delivered, an exception
    /// record taken.
    pub(super) fn finish_load(
        &self,
        session: &Session,
        artifact: &Artifact,
        fit: Fit<'_>,
        module: PtxModule,
        function: sys::CUfunction,
    ) -> Result<CudaKernel, crate::ProgramError> {
        let module = Arc::new(module);
        let Fit { params, checked, .. } = fit;
        if self.reports_params() {
            // Under lazy loading (the default since CUDA 12.2) the function
            // is loaded onto the GPU at its first launch; load it now, so
            // that the first launch costs what every launch costs.
            // SAFETY: a function of `module`, alive.
            unsafe { driver::func_load(function) }?;
        }
        let words = crate::backend::deliver_words(session, self, &artifact.values, &artifact.manifest)?;
        let mut table = None;
        match artifact.strategy {
            Strategy::Patch => {
                for (r, &w) in artifact.manifest.records().iter().zip(&words) {
                    let (ptr, size) = module.global(r.name())?;
                    let offset = match r.site() {
                        Site::Slot => 0,
                        Site::Interior { offset } => u64::from(offset),
                    };
                    if offset + 8 > size as u64 {
                        return Err(DeviceError::OutOfBounds { addr: ptr + offset, len: 8 }.into());
                    }
                    // SAFETY: `ptr + offset .. + 8` lies inside the module
                    // global of `size` bytes (checked above).
                    unsafe { result::memcpy_htod_sync(ptr + offset, &w.to_le_bytes()) }
                        .map_err(driver("cuMemcpyHtoD"))?;
                }
            }
            Strategy::Table if !words.is_empty() => {
                let t = self.alloc_filled(&crate::backend::table_bytes(&words))?;
                table = Some(TableAlloc { ctx: Arc::clone(&self.ctx), heap: Arc::clone(&self.heap), ptr: t.0 });
            }
            _ => {}
        }
        let exception = self.records.take()?;
        Ok(CudaKernel {
            entry: artifact.entry.clone(),
            device: self.id,
            params,
            lens: artifact.len_params()?,
            block: artifact.abi.block,
            module,
            function,
            table,
            exception: Mutex::new(exception),
            words,
            checked,
        })
    }
}

/// Checks that `b` is a little-endian 64-bit ELF image whose program
/// header table, section header table and (file-backed) sections lie
/// inside `b`.
pub(super) fn elf_bounds(b: &[u8]) -> Result<(), String> {
    let u16_at = |o: usize| b.get(o..o + 2).map(|s| u64::from(u16::from_le_bytes([s[0], s[1]])));
    let u32_at = |o: usize| b.get(o..o + 4).map(|s| u64::from(u32::from_le_bytes([s[0], s[1], s[2], s[3]])));
    let u64_at = |o: usize| b.get(o..o + 8).and_then(|s| s.try_into().ok()).map(u64::from_le_bytes);
    if b.len() < 64 || b[..4] != *b"\x7fELF" || b[4] != 2 || b[5] != 1 {
        return Err("no 64-bit little-endian ELF header".into());
    }
    let len = b.len() as u64;
    let table = |off: Option<u64>, size: Option<u64>, n: Option<u64>| -> Result<(u64, u64, u64), String> {
        let (off, size, n) = (off.ok_or("truncated")?, size.ok_or("truncated")?, n.ok_or("truncated")?);
        match size.checked_mul(n).and_then(|t| t.checked_add(off)) {
            Some(end) if end <= len => Ok((off, size, n)),
            _ => Err("a header table lies outside the image".into()),
        }
    };
    table(u64_at(0x20), u16_at(0x36), u16_at(0x38))?;
    let (shoff, shentsize, shnum) = table(u64_at(0x28), u16_at(0x3A), u16_at(0x3C))?;
    if shnum > 0 && shentsize < 64 {
        return Err("section headers too small".into());
    }
    for i in 0..shnum {
        let h = (shoff + i * shentsize) as usize;
        let (kind, off, size) = (u32_at(h + 4), u64_at(h + 0x18), u64_at(h + 0x20));
        let (kind, off, size) = (kind.ok_or("truncated")?, off.ok_or("truncated")?, size.ok_or("truncated")?);
        // SHT_NOBITS (8) occupies no bytes in the file.
        if kind != 8 && off.checked_add(size).is_none_or(|end| end > len) {
            return Err(format!("section {i} lies outside the image"));
        }
    }
    Ok(())
}

/// The cubin the driver's linker makes of `ptx` for the context's GPU.
fn link_cubin(ctx: &Arc<CudaContext>, ptx: &[u8]) -> Result<Vec<u8>, DeviceError> {
    let text = CString::new(ptx)
        .map_err(|_| DeviceError::Driver { call: "cuLinkAddData", message: "PTX holds a NUL byte".into() })?;
    ctx.bind_to_thread().map_err(driver("cuCtxSetCurrent"))?;
    let state = driver::link_create()?;
    let linked = (|| {
        // SAFETY: `state` is live; `text` ends with its NUL byte and
        // outlives the call; the name is a static C string.
        unsafe {
            driver::link_add_data(state, sys::CUjitInputType::CU_JIT_INPUT_PTX, text.as_bytes_with_nul(), c"relok.ptx")
        }?;
        // SAFETY: `state` is live.
        let (out, size) = unsafe { driver::link_complete(state) }?;
        if out.is_null() {
            return Err(DeviceError::Driver { call: "cuLinkComplete", message: "no image".into() });
        }
        // SAFETY: the linker owns `size` bytes at `out` until the state is
        // destroyed below; they are copied first.
        Ok(unsafe { std::slice::from_raw_parts(out.cast::<u8>(), size) }.to_vec())
    })();
    // SAFETY: destroyed once; the image was copied out above.
    let _ = unsafe { driver::link_destroy(state) };
    linked
}

/// The bytes of `b` in a buffer aligned for any of the driver's reads (an
/// ELF image is read as 8-byte fields).
pub(super) fn aligned(b: &[u8]) -> Vec<u64> {
    let mut words = vec![0u64; b.len().div_ceil(8)];
    bytemuck::cast_slice_mut::<u64, u8>(&mut words)[..b.len()].copy_from_slice(b);
    words
}

/// What a loaded function must be to be launched with an artifact's ABI:
/// the entry, and — where the driver reports parameters — taking the
/// kernel state, the parameters and checked mode's, in order
/// ([`check_function_params`]).
pub(super) struct Fit<'a> {
    entry: &'a str,
    params: Vec<relok_ir::Type>,
    checked: bool,
    /// Whether the driver reports parameters (CUDA 12.4).
    by_driver: bool,
}

impl Fit<'_> {
    /// The entry of `module`, checked.
    fn function(&self, module: &PtxModule) -> Result<sys::CUfunction, DeviceError> {
        let function = module.function(self.entry)?;
        if self.by_driver {
            check_function_params(function, self.entry, &self.params, self.checked)?;
        }
        Ok(function)
    }

    /// `cubin` loaded, and its entry checked (a cubin without it, or with
    /// other parameters, is another kernel's: refused).
    pub(super) fn load(
        &self,
        ctx: &Arc<CudaContext>,
        cubin: &[u8],
    ) -> Result<(PtxModule, sys::CUfunction), DeviceError> {
        let module = PtxModule::load_image(ctx, cubin)?;
        let function = self.function(&module)?;
        Ok((module, function))
    }
}

/// Checks that the loaded `function` takes the parameters a launch passes
/// (`relok_compiler::ptx::entry_param_sizes`: the kernel state, `params`,
/// in checked mode the lengths and the seal table), as the driver reports
/// them (`cuFuncGetParamInfo`, CUDA 12.4: a size per index, an error past
/// the last).
pub(super) fn check_function_params(
    function: sys::CUfunction,
    entry: &str,
    params: &[relok_ir::Type],
    checked: bool,
) -> Result<(), DeviceError> {
    let refused =
        |message: String| DeviceError::Driver { call: "cuFuncGetParamInfo", message: format!("@{entry}: {message}") };
    let expected = relok_compiler::ptx::entry_param_sizes(params, checked).map_err(refused)?;
    let size_of = |i: usize| {
        // SAFETY: a function of a live module.
        unsafe { driver::func_get_param_info(function, i) }.map(|(_, size)| size)
    };
    for (i, &want) in expected.iter().enumerate() {
        match size_of(i) {
            Ok(size) if size == want => {}
            Ok(size) => return Err(refused(format!("parameter {i} is {size} bytes in the code, {want} in its ABI"))),
            Err(_) => return Err(refused(format!("the code takes {i} parameters, its ABI {}", expected.len()))),
        }
    }
    match size_of(expected.len()) {
        Err(_) => Ok(()),
        Ok(_) => Err(refused(format!("the code takes more than the {} parameters of its ABI", expected.len()))),
    }
}

/// A loaded PTX module, unloaded on drop.
#[derive(Debug)]
pub struct PtxModule {
    raw: sys::CUmodule,
    ctx: Arc<CudaContext>,
}

// SAFETY: a module handle may be used from any thread that binds its
// context, which every use here does first.
unsafe impl Send for PtxModule {}
// SAFETY: as for Send; the handle itself is never mutated.
unsafe impl Sync for PtxModule {}

impl PtxModule {
    /// Loads PTX text (the driver JIT-compiles it).
    fn load(ctx: &Arc<CudaContext>, ptx: &[u8]) -> Result<PtxModule, DeviceError> {
        let text = CString::new(ptx)
            .map_err(|_| DeviceError::Driver { call: "cuModuleLoadData", message: "PTX holds a NUL byte".into() })?;
        ctx.bind_to_thread().map_err(driver("cuCtxSetCurrent"))?;
        // SAFETY: `text` is NUL-terminated PTX that outlives the call.
        let raw = unsafe { result::module::load_data(text.as_ptr().cast()) }.map_err(driver("cuModuleLoadData"))?;
        Ok(PtxModule { raw, ctx: Arc::clone(ctx) })
    }

    /// Loads a cubin: an ELF image whose header, program and section
    /// tables and sections lie inside the bytes (checked first, since
    /// `cuModuleLoadData` takes no length), else it never reaches the
    /// driver.
    fn load_image(ctx: &Arc<CudaContext>, cubin: &[u8]) -> Result<PtxModule, DeviceError> {
        elf_bounds(cubin)
            .map_err(|why| DeviceError::Driver { call: "cuModuleLoadData", message: format!("not a cubin: {why}") })?;
        // The driver reads an ELF image as 8-byte fields; a cubin inside a
        // load record or a bundle starts wherever their framing puts it.
        let words;
        let cubin = if cubin.as_ptr().align_offset(8) == 0 {
            cubin
        } else {
            words = aligned(cubin);
            &bytemuck::cast_slice(&words)[..cubin.len()]
        };
        ctx.bind_to_thread().map_err(driver("cuCtxSetCurrent"))?;
        // SAFETY: `cubin` holds a whole 64-bit ELF image that outlives the
        // call, every table and section of which lies inside it (checked
        // by `elf_bounds`).
        let raw =
            unsafe { result::module::load_data(cubin.as_ptr().cast()) }.map_err(driver("cuModuleLoadData (cubin)"))?;
        Ok(PtxModule { raw, ctx: Arc::clone(ctx) })
    }

    fn function(&self, name: &str) -> Result<sys::CUfunction, DeviceError> {
        let c = CString::new(name)
            .map_err(|_| DeviceError::Driver { call: "cuModuleGetFunction", message: "bad name".into() })?;
        // SAFETY: a live module.
        unsafe { result::module::get_function(self.raw, c) }.map_err(driver("cuModuleGetFunction"))
    }

    fn global(&self, name: &str) -> Result<(u64, usize), DeviceError> {
        let c = CString::new(name)
            .map_err(|_| DeviceError::Driver { call: "cuModuleGetGlobal", message: "bad name".into() })?;
        // SAFETY: a live module.
        unsafe { result::module::get_global(self.raw, c) }
            .map_err(|e| DeviceError::Driver { call: "cuModuleGetGlobal", message: format!("{name}: {e:?}") })
    }
}

impl Drop for PtxModule {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: unloaded once, at drop.
            let _ = unsafe { result::module::unload(self.raw) };
        }
    }
}
