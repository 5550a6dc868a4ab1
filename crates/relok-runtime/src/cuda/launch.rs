//! Launching on a cuda device: [`CudaKernel`], a kernel loaded with its
//! words; blocking launches ([`CudaDevice::launch`]), their parameters
//! (the arguments, checked mode's buffer lengths and seal table, the
//! kernel state), and the [`Backend`] impl — loads, streams, launches
//! enqueued on a stream and their synchronisation.

use super::memory::TableAlloc;
use super::module::PtxModule;
use super::stream::{CudaStream, RawStream, Record, read_records};
use super::{CudaDevice, driver};
use crate::backend::{Backend, Thrown, load_once};
use crate::error::{DeviceError, LaunchError};
use crate::launch::{DevicePtr, KernelArg, LaunchConfig, check_args, check_config, check_lens};
use crate::load::LoadRequest;
use crate::lock;
use crate::memory::DeviceId;
use crate::session::Session;
use cudarc::driver::{result, sys};
use relok_cache::Key;
use relok_compiler::artifact::CodeTarget;
use relok_compiler::state::KernelState;
use relok_ir::Strategy;
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex};

/// A kernel loaded on one cuda device with its words delivered.
#[derive(Debug)]
pub struct CudaKernel {
    pub(super) entry: String,
    /// The device it was loaded on (its module, table and words are there).
    pub(super) device: DeviceId,
    pub(super) params: Vec<relok_ir::Type>,
    /// The length parameters (`relok_ir::LenParam`), as (length,
    /// pointer) parameter indices: checked at a checked launch.
    pub(super) lens: Vec<(usize, usize)>,
    /// The block shape every launch must have (`relok_ir::Function::block`).
    pub(super) block: Option<[u32; 3]>,
    pub(super) module: Arc<PtxModule>,
    pub(super) function: sys::CUfunction,
    pub(super) table: Option<TableAlloc>,
    pub(super) exception: Mutex<Record>,
    /// The words, in manifest (rank) order.
    pub words: Vec<u64>,
    /// Compiled in checked mode: launches pass each buffer argument's
    /// length after the arguments (`relok_compiler::ptx::checked`).
    pub(super) checked: bool,
}

// SAFETY: the function handle belongs to `module` (kept alive here) and is
// only used with its context bound.
unsafe impl Send for CudaKernel {}
// SAFETY: as for Send; launches do not mutate the handle.
unsafe impl Sync for CudaKernel {}

impl CudaKernel {
    /// The entry's name.
    pub fn entry(&self) -> &str {
        &self.entry
    }

    /// The table buffer (`table` strategy with records).
    pub fn table(&self) -> Option<DevicePtr> {
        self.table.as_ref().map(|t| DevicePtr(t.ptr))
    }

    pub(super) fn table_word(&self) -> u64 {
        self.table.as_ref().map_or(0, |t| t.ptr)
    }

    /// The module's handle (kept for the module's lifetime).
    pub fn module(&self) -> &PtxModule {
        &self.module
    }

    /// Launches the function with `params` and waits for it.
    ///
    /// # Safety
    ///
    /// `params` comes from [`kernel_params`] for this kernel's state and
    /// for arguments checked against its ABI (`check_args`), and the state
    /// and argument values it points into are alive until this returns;
    /// the context of this kernel's device is bound to the thread.
    pub(super) unsafe fn launch_and_wait(
        &self,
        config: &LaunchConfig,
        params: &mut [*mut c_void],
    ) -> Result<(), DeviceError> {
        // SAFETY: by the caller's contract; the wait below ends the
        // kernel's use of what `params` points into.
        unsafe { self.launch_on(std::ptr::null_mut(), config, params) }?;
        result::ctx::synchronize().map_err(driver("cuCtxSynchronize (the kernel)"))
    }

    /// Enqueues the function with `params` on `stream` (null: the legacy
    /// stream).
    ///
    /// # Safety
    ///
    /// As for [`CudaKernel::launch_and_wait`], and `stream` is a live
    /// stream of the bound context; the state and argument values may be
    /// dropped when this returns (the driver copies them), but the buffers
    /// they name must stay alive until the stream passes the launch.
    unsafe fn launch_on(
        &self,
        stream: sys::CUstream,
        config: &LaunchConfig,
        params: &mut [*mut c_void],
    ) -> Result<(), DeviceError> {
        let [gx, gy, gz] = config.grid;
        let [bx, by, bz] = config.block;
        // SAFETY: the function belongs to `self.module`, alive while `self`
        // is; by the caller's contract `params` holds one live pointer per
        // parameter of the entry (the state, then one per argument; the
        // function was checked against the ABI at load, `Fit`), and the
        // stream is the bound context's.
        unsafe { result::launch_kernel(self.function, (gx, gy, gz), (bx, by, bz), 0, stream, params) }
            .map_err(driver("cuLaunchKernel"))
    }
}

impl CudaDevice {
    /// Registers per thread of a loaded kernel's machine code
    /// (`CU_FUNC_ATTRIBUTE_NUM_REGS`, what `ptxas -v` reports): with the
    /// block size, what bounds how many of its threads a multiprocessor
    /// holds at once. A kernel of another device is refused.
    pub fn registers(&self, kernel: &CudaKernel) -> Result<u32, DeviceError> {
        if kernel.device != self.id {
            let message = format!("@{} was loaded on {}, not on this {}", kernel.entry, kernel.device, self.id);
            return Err(DeviceError::Driver { call: "cuFuncGetAttribute", message });
        }
        self.bind()?;
        // SAFETY: the function belongs to `kernel.module`, alive while
        // `kernel` is, and to this device's context, bound above.
        unsafe { driver::func_num_regs(kernel.function) }
    }

    /// Launches a loaded kernel and waits for it. The geometry and the
    /// arguments are checked as on the cpu device; an exception comes back
    /// as its message word, block and thread, a fault checked mode
    /// recorded as [`LaunchError::Fault`].
    pub fn launch(
        &self,
        kernel: &CudaKernel,
        config: &LaunchConfig,
        args: &[KernelArg],
        rng_seed: u64,
    ) -> Result<Option<Thrown>, LaunchError> {
        if kernel.device != self.id {
            let message = format!("@{} was loaded on {}, not on this {}", kernel.entry, kernel.device, self.id);
            return Err(LaunchError::Device {
                kernel: kernel.entry.clone(),
                error: DeviceError::Driver { call: "launch", message },
            });
        }
        check_config(&kernel.entry, config, kernel.block)?;
        let mut values = self.launch_values(kernel, args)?;
        let thrown = self
            .run(kernel, config, &mut values, rng_seed)
            .map_err(|error| LaunchError::Device { kernel: kernel.entry.clone(), error })?;
        // A fault checked mode recorded is an error; a throw comes back.
        match thrown.map(|t| (t, crate::backend::thrown_error(&kernel.entry, t, None))) {
            Some((_, fault @ LaunchError::Fault { .. })) => Err(fault),
            other => Ok(other.map(|(t, _)| t)),
        }
    }

    /// The launch's parameter values: the arguments, checked against the
    /// kernel's ABI, and for a checked kernel the length of each pointer
    /// argument's buffer — bytes from the pointer to the end of the
    /// allocation it points into, 0 when it points into none — with the
    /// address of the seal table, brought up to date first.
    pub(super) fn launch_values(&self, kernel: &CudaKernel, args: &[KernelArg]) -> Result<Vec<u64>, LaunchError> {
        let mut values = check_args(&kernel.entry, &kernel.params, args)?;
        if kernel.checked {
            let seals =
                self.publish_seals().map_err(|error| LaunchError::Device { kernel: kernel.entry.clone(), error })?;
            let heap = lock(&self.heap);
            let lens: Vec<u64> = kernel
                .params
                .iter()
                .zip(&values)
                .filter(|(t, _)| matches!(t, relok_ir::Type::Ptr(..)))
                .map(|(_, &p)| buffer_len(&heap.live, p))
                .collect();
            check_lens(&kernel.entry, &kernel.params, &kernel.lens, &values, |p| buffer_len(&heap.live, p))?;
            values.extend(lens);
            values.push(seals);
        }
        Ok(values)
    }

    pub(super) fn run(
        &self,
        kernel: &CudaKernel,
        config: &LaunchConfig,
        values: &mut [u64],
        rng_seed: u64,
    ) -> Result<Option<Thrown>, DeviceError> {
        self.bind()?;
        // One launch at a time per loaded kernel: they share its record.
        let mut record = lock(&kernel.exception);
        let mut state = KernelState { reloc_table: kernel.table_word(), exception: record.device, rng_seed };
        let mut params = kernel_params(&mut state, values);
        // SAFETY: `values` were checked against the ABI (`launch`), `state`
        // and `values` outlive the call, the context is bound above.
        unsafe { kernel.launch_on(std::ptr::null_mut(), config, &mut params) }?;
        record.unread = true;
        // SAFETY: the legacy stream of the bound context; the reading waits
        // for the launch.
        let thrown = unsafe { read_records(std::ptr::null_mut(), &mut [&mut *record]) }?;
        Ok(thrown[0])
    }
}

/// The bytes from `ptr` to the end of the allocation (of `allocs`: address
/// → bytes) it points into, 0 when it points into none: a buffer
/// argument's length for checked mode.
pub(super) fn buffer_len(allocs: &BTreeMap<u64, u64>, ptr: u64) -> u64 {
    match allocs.range(..=ptr).next_back() {
        Some((&base, &size)) if ptr < base.saturating_add(size) => base + size - ptr,
        _ => 0,
    }
}

/// The launch's parameter pointers: the kernel state, then each argument
/// (a parameter narrower than 8 bytes reads the low bytes of its
/// little-endian `u64`). They point into `state` and `values`, which must
/// outlive the launch.
pub(super) fn kernel_params(state: &mut KernelState, values: &mut [u64]) -> Vec<*mut c_void> {
    let mut params: Vec<*mut c_void> = Vec::with_capacity(1 + values.len());
    params.push(std::ptr::from_mut(state).cast());
    params.extend(values.iter_mut().map(|v| std::ptr::from_mut(v).cast::<c_void>()));
    params
}

impl Backend for CudaDevice {
    type Kernel = CudaKernel;
    type Stream = CudaStream;

    fn target(&self) -> CodeTarget {
        CudaDevice::target(self)
    }

    /// Loads the request's artifact once per artifact key and session on
    /// this device; with a source key, also writes its load record (see
    /// "Load records" in the module docs).
    fn load(&self, session: &Session, request: &LoadRequest<'_>) -> Result<Arc<CudaKernel>, crate::ProgramError> {
        let LoadRequest { artifact, source, validated } = *request;
        load_once(&self.loaded, self.id, session, artifact, || {
            let (kernel, cubin) = self.load_new(session, artifact, validated)?;
            if let (Some(source), Some(cubin)) = (source, cubin) {
                self.write_record(source, artifact, &cubin);
            }
            Ok(kernel)
        })
    }

    fn load_by_source(
        &self,
        session: &Session,
        source: Key,
        entry: &str,
        strategy: Strategy,
    ) -> Result<Option<Arc<CudaKernel>>, crate::ProgramError> {
        self.load_record(session, source, entry, strategy)
    }

    fn entry(kernel: &CudaKernel) -> &str {
        &kernel.entry
    }

    fn params(kernel: &CudaKernel) -> &[relok_ir::Type] {
        &kernel.params
    }

    fn new_stream(&self) -> Result<CudaStream, DeviceError> {
        let RawStream(raw) = self.streams.take()?;
        Ok(CudaStream {
            device: self.id,
            ctx: Arc::clone(&self.ctx),
            raw,
            pool: Arc::clone(&self.streams),
            records: Arc::clone(&self.records),
            state: Mutex::default(),
        })
    }

    fn enqueue(
        &self,
        stream: &CudaStream,
        kernel: &Arc<CudaKernel>,
        config: &LaunchConfig,
        args: &[KernelArg],
        rng_seed: u64,
    ) -> Result<(), LaunchError> {
        let err = |error| LaunchError::Device { kernel: kernel.entry.clone(), error };
        if kernel.device != self.id {
            return Err(crate::backend::wrong_device(&kernel.entry, "the kernel", kernel.device, self.id));
        }
        if stream.device != self.id {
            return Err(crate::backend::wrong_device(&kernel.entry, "the stream", stream.device, self.id));
        }
        let threads = check_config(&kernel.entry, config, kernel.block)?;
        let mut values = self.launch_values(kernel, args)?;
        self.bind().map_err(err)?;
        let mut state = lock(&stream.state);
        let exception = stream.record_for(&mut state, kernel).map_err(err)?;
        let mut ks = KernelState { reloc_table: kernel.table_word(), exception, rng_seed };
        let mut params = kernel_params(&mut ks, &mut values);
        let [gx, gy, gz] = config.grid;
        let [bx, by, bz] = config.block;
        // SAFETY: the function belongs to the kernel's module, kept alive
        // by the caller's `Arc` until the stream passes the launch (the
        // facade holds it; `synchronize` waits); `params` points into `ks`
        // and `values`, which the driver copies before returning; the
        // arguments were checked against the ABI the function was checked
        // against at load (`Fit`); the context is bound above; the stream is
        // this context's.
        unsafe { result::launch_kernel(kernel.function, (gx, gy, gz), (bx, by, bz), 0, stream.raw, &mut params) }
            .map_err(driver("cuLaunchKernel"))
            .map_err(err)?;
        state.threads = state.threads.saturating_add(threads);
        Ok(())
    }

    fn synchronize(&self, stream: &CudaStream) -> Result<crate::LaunchStats, LaunchError> {
        // Held across the wait: a launch enqueued meanwhile (which takes
        // this lock) is either waited for and read here, or left entirely
        // to the next synchronisation — never read before it ran.
        let mut state = lock(&stream.state);
        let first_kernel = state.used.first().map(|&i| state.records[i].1.clone()).unwrap_or_default();
        let err = |error| LaunchError::Device { kernel: first_kernel.clone(), error };
        self.bind().map_err(err)?;
        let threads = std::mem::take(&mut state.threads);
        // Passed: the stream no longer needs its kernels loaded (dropped
        // after the lock, a last holder unloads the module).
        let alive = std::mem::take(&mut state.alive);
        let read = stream.wait_and_read(&mut state);
        // Records of kernels that are gone go back to the pool (unless the
        // reading failed: they are to be read again, by index).
        if state.used.is_empty() {
            state.records.retain(|(k, ..)| k.strong_count() > 0);
        }
        drop(state);
        drop(alive);
        match read.map_err(err)? {
            Some((entry, t)) => Err(crate::backend::thrown_error(&entry, t, None)),
            None => Ok(crate::LaunchStats { steps: 0, threads }),
        }
    }

    fn live_allocations(&self) -> u64 {
        lock(&self.heap).live.len() as u64
    }
}
