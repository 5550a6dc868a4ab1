//! The cpu reference device: an interpreter of the kernel IR with GPU
//! semantics, over simulated device memory. It is the oracle every other
//! device is compared with (docs/design.md §6), so it favours exact, checked,
//! deterministic behaviour over speed.
//!
//! # Address spaces
//!
//! - **global**: each [`CpuDevice`] has its own address space whose base is
//!   random per device and per process (page aligned, in `[2^40, 2^46)`,
//!   mixing `rand`, the process id, the ordinal and a per-process device
//!   counter). Allocations are placed at increasing addresses, never reused,
//!   with a guard gap of at least 64 KiB after each, so a freed address, a
//!   stale one from another process or one from another device falls outside
//!   every allocation and faults. An address maps to its allocation by a
//!   `BTreeMap` range query, with the last hit cached. Allocation is
//!   zero-filled; at most 4 GiB may be allocated at once.
//! - **shared** (per block), **local** (per thread) and **const** (the
//!   module's constants) are separate regions at fixed, distinct address
//!   ranges below 2^32 (`0x2000_0000`, `0x3000_0000`, `0x1000_0000`). The
//!   space of an access is known statically from the pointer's type; the
//!   address is checked against that space only. Shared memory is
//!   zero-filled at the start of each block (at most 48 KiB per block); local
//!   memory is a per-thread stack of call frames, zero-filled on entry (at
//!   most 64 KiB per thread over all live frames), so a pointer into a
//!   returned frame faults. A `const` read outside the module's constants
//!   reads global memory (read only), so a `ptr<const, T>` kernel argument
//!   may point at a device allocation.
//! - Every load, store and atomic is checked for alignment (address modulo
//!   the accessed scalar's size; pointers and words are 8 bytes) and then
//!   for bounds. Stores and atomics through `const` pointers fault. A `bool`
//!   load of a byte other than 0 or 1 faults with [`FaultKind::InvalidBool`](crate::FaultKind::InvalidBool)
//!   rather than being normalised: the oracle should expose such bugs.
//!
//! # Execution
//!
//! Each launch compiles the kernel and the device functions it reaches into
//! one flat program (`compile.rs`): structured control flow becomes jumps,
//! each SSA value a `u64` register of its frame, scalar locals whose address
//! is never taken registers too, other locals slices of local memory, with
//! types, strides and spaces resolved ahead of time. Compiling is linear in
//! the kernel's size; [`CpuDevice::compile`] does it once and returns a
//! [`LoadedKernel`] for [`CpuDevice::launch_loaded`], while
//! [`CpuDevice::launch`] and [`CpuDevice::launch_with`] compile per launch.
//!
//! # Relocations and kernel state (docs/design.md §3)
//!
//! - `word 0x…` (stage `lowered bake`) is an immediate; `patch NAME` (stage
//!   `lowered patch`) reads the word of cell NAME from
//!   [`LaunchState::patch_cells`], resolved to an index at compile time;
//!   words inside constants are written per launch from
//!   [`LaunchState::const_patches`]. `ref` never reaches the device: a module
//!   that still has one is [`LaunchError::InvalidModule`].
//! - `wordptr v` is a move: on this device the word of a host value or a
//!   runtime global is its device address.
//! - `state.*` reads the device's kernel-state block, which every launch
//!   writes: `reloc_table` ([`LaunchState::reloc_table`], 0 for none),
//!   `exception` (the device's exception record, zeroed before every
//!   launch) and `rng_seed`. A raised exception (a nonzero record flag after
//!   the launch) is [`LaunchError::Exception`].
//! - `exit` finishes the thread from any call depth; for barriers it counts
//!   as finished.
//!
//! Blocks run one after another, in order x, then y, then z (`exec.rs`).
//! The threads of a block are resumable state machines (pc, register stack,
//! local-memory stack, call stack) run cooperatively: each runs until it
//! finishes or reaches a barrier; when none can run, either all finished,
//! or all wait at the same barrier statement reached through the same call
//! sites and are released together, or the block faults with
//! [`FaultKind::BarrierDivergence`](crate::FaultKind::BarrierDivergence) (also when some threads finished while
//! others wait). Atomics are trivially atomic. Because a block's threads
//! run one after another between barriers, a racy kernel would get one of
//! its possible answers here: the race detector (`race.rs`, on unless
//! [`CpuDevice::set_race_detection`] turns it off) faults with
//! [`FaultKind::DataRace`](crate::FaultKind::DataRace) when two threads of a block access one byte of
//! global or shared memory between the same barriers, unless both are
//! loads or both are atomics (a plain load racing another thread's atomic
//! is a race too). Device-function calls pass
//! arguments by value on a per-thread call stack at most
//! `MAX_CALL_DEPTH` (64) frames deep. Every executed instruction counts
//! against the launch's step budget, so an endless loop ends with
//! [`FaultKind::StepBudgetExceeded`](crate::FaultKind::StepBudgetExceeded). The first fault stops the launch;
//! writes made before it remain, and the device stays usable.
//!
//! Results are deterministic: the same inputs give the same memory contents
//! and errors (addresses aside). The interpreter never panics on a verified
//! module and returns [`LaunchError::InvalidModule`] for the unverified
//! shapes it notices.

mod backend;
mod compile;
mod exec;
mod memory;
mod race;
mod state;

use crate::error::{DeviceError, LaunchError};
use crate::launch::{DevicePtr, KernelArg, LaunchConfig, LaunchStats, check_args, check_config, check_lens};
pub use backend::{CpuKernel, CpuStream, deliver};
pub use state::{EXC_WORDS, LaunchState, PatchCells};

use relok_ir::{FuncKind, Module, Scalar, Type};
use std::borrow::Cow;
use std::sync::{Arc, Mutex, MutexGuard};

/// A kernel compiled for the cpu device, with the device functions it
/// calls: compile once with [`CpuDevice::compile`], launch many times with
/// [`CpuDevice::launch_loaded`]. It holds no device addresses, so it may be
/// launched on any [`CpuDevice`]; cloning is cheap.
#[derive(Clone, Debug)]
pub struct LoadedKernel {
    name: String,
    params: Vec<Type>,
    /// The length parameters (`relok_ir::LenParam`), as (length, pointer)
    /// parameter indices: checked at every launch.
    lens: Vec<(usize, usize)>,
    /// The block shape every launch must have (`relok_ir::Function::block`).
    block: Option<[u32; 3]>,
    prog: Arc<compile::Program>,
}

impl LoadedKernel {
    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The kernel's parameter types.
    pub fn params(&self) -> &[Type] {
        &self.params
    }
    /// The patch cells the kernel (or a function it calls) reads, in order
    /// of first use: each must be in [`LaunchState::patch_cells`].
    pub fn patch_cells(&self) -> impl Iterator<Item = &str> {
        self.prog.patch_names.iter().map(String::as_str)
    }
    /// The module's constants as laid out for the kernel: name and size in
    /// bytes (the targets of [`LaunchState::const_patches`]).
    pub fn constants(&self) -> impl Iterator<Item = (&str, u64)> {
        self.prog.const_layout.iter().map(|(n, _, size)| (n.as_str(), *size))
    }
}

/// Global memory plus the device's launch buffers.
#[derive(Debug)]
struct DeviceMem {
    global: memory::GlobalMem,
    /// The kernel-state block and the exception record, allocated on the
    /// first launch and reused by every later one.
    launch: Option<LaunchBuffers>,
}

#[derive(Copy, Clone, Debug)]
struct LaunchBuffers {
    state: u64,
    exception: u64,
}

impl DeviceMem {
    fn launch_buffers(&mut self) -> Result<LaunchBuffers, DeviceError> {
        if let Some(b) = self.launch {
            return Ok(b);
        }
        let state = self.global.alloc(state::STATE_SIZE)?;
        let exception = self.global.alloc(8 * EXC_WORDS as u64)?;
        let b = LaunchBuffers { state, exception };
        self.launch = Some(b);
        Ok(b)
    }
    fn is_reserved(&self, addr: u64) -> bool {
        self.launch.is_some_and(|b| addr == b.state || addr == b.exception)
    }
}

/// A simulated device: its own global memory; launches interpret the IR.
/// Shareable between host threads (`Send + Sync`); a launch holds the
/// device's memory for its whole duration.
#[derive(Debug)]
pub struct CpuDevice {
    ordinal: u32,
    id: crate::DeviceId,
    /// Shared with what this device's kernels own (their table buffers),
    /// which free themselves on drop.
    mem: Arc<Mutex<DeviceMem>>,
    /// Kernels loaded with their words, by (artifact key, session).
    loaded: crate::backend::LoadedKernels<CpuKernel>,
    /// Whether launches run the race detector (on unless turned off).
    race_detection: std::sync::atomic::AtomicBool,
}

impl CpuDevice {
    /// A new device with a fresh, randomly placed address space.
    pub fn new(ordinal: u32) -> CpuDevice {
        let global = memory::GlobalMem::new(memory::random_base(ordinal));
        CpuDevice {
            ordinal,
            id: crate::DeviceId::allocate(crate::session::DeviceKind::Cpu, u64::from(ordinal)),
            mem: Arc::new(Mutex::new(DeviceMem { global, launch: None })),
            loaded: Mutex::default(),
            race_detection: std::sync::atomic::AtomicBool::new(true),
        }
    }

    /// Turns the race detector on (the default) or off for later launches:
    /// two accesses to the same byte of global or shared memory by
    /// different threads of a block between the same pair of barriers,
    /// unless both are loads or both are atomics, are
    /// [`FaultKind::DataRace`](crate::FaultKind::DataRace). It costs
    /// a hash-map update per global or shared access of a block with more
    /// than one thread.
    pub fn set_race_detection(&self, on: bool) {
        self.race_detection.store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether launches run the race detector ([`CpuDevice::set_race_detection`]).
    pub fn race_detection(&self) -> bool {
        self.race_detection.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// This device's identity (see [`crate::DeviceId`]).
    pub fn id(&self) -> crate::DeviceId {
        self.id
    }

    /// Live allocations of global memory (the device's own launch buffers
    /// aside).
    pub fn live_allocations(&self) -> u64 {
        let mem = self.lock();
        mem.global.live_allocations() - mem.launch.map_or(0, |_| 2)
    }

    /// The ordinal given at creation.
    pub fn ordinal(&self) -> u32 {
        self.ordinal
    }

    /// The lowest global address this device hands out (random).
    pub fn base_address(&self) -> u64 {
        self.lock().global.base()
    }

    fn lock(&self) -> MutexGuard<'_, DeviceMem> {
        // Nothing panics while holding the lock, but never propagate poison.
        self.mem.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// An owner of `ptr` that frees it when dropped (if the device's memory
    /// is still there).
    pub(crate) fn owned(&self, ptr: DevicePtr) -> backend::CpuAlloc {
        backend::CpuAlloc { mem: Arc::downgrade(&self.mem), addr: ptr.0 }
    }

    /// Allocates `bytes` zero-filled bytes of global memory (page aligned).
    pub fn alloc(&self, bytes: u64) -> Result<DevicePtr, DeviceError> {
        self.lock().global.alloc(bytes).map(DevicePtr)
    }

    /// Frees the allocation starting at `ptr`. Its addresses are never
    /// handed out again. The device's own launch buffers cannot be freed.
    pub fn free(&self, ptr: DevicePtr) -> Result<(), DeviceError> {
        let mut mem = self.lock();
        if mem.is_reserved(ptr.0) {
            return Err(DeviceError::InvalidFree { addr: ptr.0 });
        }
        mem.global.free(ptr.0)
    }

    /// Copies `bytes` to `ptr`, which may point inside an allocation; the
    /// whole range must lie in that allocation.
    pub fn write(&self, ptr: DevicePtr, bytes: &[u8]) -> Result<(), DeviceError> {
        self.lock().global.write(ptr.0, bytes)
    }

    /// Copies `len` bytes from `ptr`, which may point inside an allocation;
    /// the whole range must lie in that allocation.
    pub fn read(&self, ptr: DevicePtr, len: u64) -> Result<Vec<u8>, DeviceError> {
        self.lock().global.read(ptr.0, len)
    }

    /// Runs `kernel` of `module` (a verified module) over the grid with a
    /// default [`LaunchState`] (no table, seed 0, no patch cells).
    pub fn launch(
        &self,
        module: &Module,
        kernel: &str,
        config: &LaunchConfig,
        args: &[KernelArg],
    ) -> Result<LaunchStats, LaunchError> {
        self.launch_with(module, kernel, config, args, &LaunchState::default())
    }

    /// Runs `kernel` of `module` (a verified, lowered module) over the grid,
    /// delivering `state` (docs/design.md §3). Compiles the kernel each time; use
    /// [`CpuDevice::compile`] and [`CpuDevice::launch_loaded`] to compile once.
    pub fn launch_with(
        &self,
        module: &Module,
        kernel: &str,
        config: &LaunchConfig,
        args: &[KernelArg],
        state: &LaunchState,
    ) -> Result<LaunchStats, LaunchError> {
        let loaded = self.compile(module, kernel)?;
        self.launch_loaded(&loaded, config, args, state)
    }

    /// Compiles `kernel` of `module` and the device functions it calls.
    /// `ref` operations and `ref` constant initializers are rejected (lower
    /// the module first); `word` needs stage `lowered bake` and `patch`
    /// stage `lowered patch`.
    pub fn compile(&self, module: &Module, kernel: &str) -> Result<LoadedKernel, LaunchError> {
        let id = module.func_by_name(kernel).ok_or_else(|| LaunchError::UnknownKernel { name: kernel.to_owned() })?;
        let f = &module.funcs[id];
        if f.kind != FuncKind::Kernel {
            return Err(LaunchError::NotAKernel { name: kernel.to_owned() });
        }
        let params = f
            .params
            .iter()
            .map(|&p| f.values.get(p).map(|d| d.ty.clone()).unwrap_or(Type::Scalar(Scalar::Bool)))
            .collect();
        let lens =
            relok_compiler::artifact::len_indices(f).into_iter().map(|(l, p)| (l as usize, p as usize)).collect();
        let prog = compile::compile(module, id)?;
        Ok(LoadedKernel { name: kernel.to_owned(), params, lens, block: f.block, prog: Arc::new(prog) })
    }

    /// Runs a loaded kernel over the grid, delivering `state`.
    ///
    /// Before the launch: every patch cell the kernel reads must be in
    /// `state.patch_cells` ([`LaunchError::MissingPatchCell`]), every
    /// constant patch must name a constant and fit it
    /// ([`LaunchError::BadConstPatch`]); the device's kernel-state block is
    /// written and its exception record zeroed. After it: a raised exception
    /// is [`LaunchError::Exception`] (it wins over a later fault); the device
    /// stays usable either way.
    pub fn launch_loaded(
        &self,
        kernel: &LoadedKernel,
        config: &LaunchConfig,
        args: &[KernelArg],
        state: &LaunchState,
    ) -> Result<LaunchStats, LaunchError> {
        let name = kernel.name.as_str();
        let threads = check_config(name, config, kernel.block)?;
        let bits = check_args(name, &kernel.params, args)?;
        let prog = &*kernel.prog;
        let patch = prog
            .patch_names
            .iter()
            .map(|n| {
                state
                    .patch_cells
                    .get(n)
                    .ok_or_else(|| LaunchError::MissingPatchCell { kernel: name.to_owned(), name: n.clone() })
            })
            .collect::<Result<Vec<u64>, _>>()?;
        let consts = patch_consts(name, prog, &state.const_patches)?;
        let mut mem = self.lock();
        check_lens(name, &kernel.params, &kernel.lens, &bits, |p| mem.global.bytes_from(p))?;
        let device_err = |error| LaunchError::Device { kernel: name.to_owned(), error };
        let bufs = mem.launch_buffers().map_err(device_err)?;
        let table = state.reloc_table.map_or(0, |p| p.0);
        let ks = relok_compiler::state::KernelState {
            reloc_table: table,
            exception: bufs.exception,
            rng_seed: state.rng_seed,
        };
        mem.global.write(bufs.state, &state::state_bytes(&ks)).map_err(device_err)?;
        mem.global.write(bufs.exception, &[0u8; 8 * EXC_WORDS]).map_err(device_err)?;
        let env = exec::Env { state: bufs.state, patch: &patch, consts: &consts, races: self.race_detection() };
        let result = exec::run(prog, &env, &mut mem.global, config.grid, config.block, &bits, config.step_budget);
        let record = mem.global.read(bufs.exception, 8 * EXC_WORDS as u64).map_err(device_err)?;
        drop(mem);
        let w: Vec<u64> =
            record.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default())).collect();
        if let Some(t) = crate::backend::Thrown::from_record(&w) {
            return Err(LaunchError::Exception {
                kernel: name.to_owned(),
                message_word: t.message_word,
                block: t.block,
                thread: t.thread,
                values: t.values,
            });
        }
        let steps = result.map_err(|l| LaunchError::Fault {
            kernel: name.to_owned(),
            block: l.block,
            thread: l.thread,
            kind: l.kind,
        })?;
        Ok(LaunchStats { steps, threads })
    }
}

/// The const image of a launch: the program's, or a copy with `patches`
/// written in.
fn patch_consts<'p>(
    kernel: &str,
    prog: &'p compile::Program,
    patches: &[(String, u32, u64)],
) -> Result<Cow<'p, [u8]>, LaunchError> {
    if patches.is_empty() {
        return Ok(Cow::Borrowed(&prog.consts));
    }
    let mut image = prog.consts.clone();
    for (constant, offset, word) in patches {
        let bad = |reason: String| LaunchError::BadConstPatch {
            kernel: kernel.to_owned(),
            constant: constant.clone(),
            offset: *offset,
            reason,
        };
        let Some((_, start, size)) = prog.const_layout.iter().find(|(n, ..)| n == constant) else {
            return Err(bad("the module has no such constant".to_owned()));
        };
        let off = u64::from(*offset);
        if off + 8 > *size {
            return Err(bad(format!("a word there would end past the constant's {size} bytes")));
        }
        if off % 8 != 0 {
            return Err(bad("a word must be 8-byte aligned".to_owned()));
        }
        let at = (start + off) as usize;
        image[at..at + 8].copy_from_slice(&word.to_le_bytes());
    }
    Ok(Cow::Owned(image))
}

impl crate::memory::DeviceMemory for CpuDevice {
    fn device_id(&self) -> crate::DeviceId {
        self.id()
    }
    fn alloc_zeroed(&self, bytes: u64) -> Result<DevicePtr, DeviceError> {
        self.alloc(bytes)
    }
    fn write_bytes(&self, ptr: DevicePtr, bytes: &[u8]) -> Result<(), DeviceError> {
        self.write(ptr, bytes)
    }
    fn read_bytes(&self, ptr: DevicePtr, len: u64) -> Result<Vec<u8>, DeviceError> {
        self.read(ptr, len)
    }
    fn free_bytes(&self, ptr: DevicePtr) -> Result<(), DeviceError> {
        self.free(ptr)
    }
    fn seal_value(&self, ptr: DevicePtr) -> Result<(), DeviceError> {
        self.lock().global.seal(ptr.0)
    }
}
