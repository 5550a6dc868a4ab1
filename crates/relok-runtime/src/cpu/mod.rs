//! The cpu reference device: an interpreter of the kernel IR with GPU
//! semantics, over simulated device memory. It is the oracle every other
//! device is compared with (DESIGN §6), so it favours exact, checked,
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
//!   load of a byte other than 0 or 1 faults with [`FaultKind::InvalidBool`]
//!   rather than being normalised: the oracle should expose such bugs.
//!
//! # Execution
//!
//! Each launch compiles the kernel and the device functions it reaches into
//! one flat program (`compile.rs`): structured control flow becomes jumps,
//! each SSA value a `u64` register of its frame, scalar locals whose address
//! is never taken registers too, other locals slices of local memory, with
//! types, strides and spaces resolved ahead of time. Compiling is linear in
//! the kernel's size and is done per launch; there is no cache.
//!
//! Blocks run one after another, in order x, then y, then z (`exec.rs`).
//! The threads of a block are resumable state machines (pc, register stack,
//! local-memory stack, call stack) run cooperatively: each runs until it
//! finishes or reaches a barrier; when none can run, either all finished,
//! or all wait at the same barrier statement reached through the same call
//! sites and are released together, or the block faults with
//! [`FaultKind::BarrierDivergence`] (also when some threads finished while
//! others wait). Atomics are trivially atomic. Device-function calls pass
//! arguments by value on a per-thread call stack at most
//! `MAX_CALL_DEPTH` (64) frames deep. Every executed instruction counts
//! against the launch's step budget, so an endless loop ends with
//! [`FaultKind::StepBudgetExceeded`]. The first fault stops the launch;
//! writes made before it remain, and the device stays usable.
//!
//! Results are deterministic: the same inputs give the same memory contents
//! and errors (addresses aside). The interpreter never panics on a verified
//! module and returns [`LaunchError::InvalidModule`] for the unverified
//! shapes it notices.

mod compile;
mod error;
mod exec;
mod memory;
mod ops;

pub use error::{Access, DeviceError, FaultKind, LaunchError};

use relok_ir::{AddrSpace, FuncKind, Module, Scalar, Type};
use std::sync::{Mutex, MutexGuard};

/// A device address (global memory of one [`CpuDevice`]).
#[derive(Copy, Clone, PartialEq, Eq, Debug, Hash)]
pub struct DevicePtr(pub u64);

impl DevicePtr {
    /// The address `bytes` further on.
    pub const fn offset(self, bytes: u64) -> DevicePtr {
        DevicePtr(self.0.wrapping_add(bytes))
    }
}

/// A kernel argument.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Hash)]
pub enum KernelArg {
    /// A scalar parameter: its bits zero-extended as in
    /// [`relok_ir::Op::Const`] (`word` parameters: `Scalar { ty: Word, bits }`).
    Scalar {
        /// The parameter's scalar type.
        ty: Scalar,
        /// The value's bits.
        bits: u64,
    },
    /// A `ptr<global, T>` (or `ptr<const, T>`) parameter.
    Ptr(DevicePtr),
}

impl KernelArg {
    /// A `u32` argument.
    pub const fn u32(x: u32) -> KernelArg {
        KernelArg::Scalar { ty: Scalar::U32, bits: x as u64 }
    }
    /// An `i32` argument.
    pub const fn i32(x: i32) -> KernelArg {
        KernelArg::Scalar { ty: Scalar::I32, bits: x as u32 as u64 }
    }
    /// A `u64` argument.
    pub const fn u64(x: u64) -> KernelArg {
        KernelArg::Scalar { ty: Scalar::U64, bits: x }
    }
    /// An `i64` argument.
    pub const fn i64(x: i64) -> KernelArg {
        KernelArg::Scalar { ty: Scalar::I64, bits: x as u64 }
    }
    /// An `f32` argument.
    pub fn f32(x: f32) -> KernelArg {
        KernelArg::Scalar { ty: Scalar::F32, bits: u64::from(x.to_bits()) }
    }
    /// An `f64` argument.
    pub fn f64(x: f64) -> KernelArg {
        KernelArg::Scalar { ty: Scalar::F64, bits: x.to_bits() }
    }
    /// A `bool` argument.
    pub const fn bool(x: bool) -> KernelArg {
        KernelArg::Scalar { ty: Scalar::Bool, bits: x as u64 }
    }
    /// A `word` argument.
    pub const fn word(x: u64) -> KernelArg {
        KernelArg::Scalar { ty: Scalar::Word, bits: x }
    }
}

/// Launch geometry and limits.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Hash)]
pub struct LaunchConfig {
    /// Blocks per grid along x, y, z (x up to 2^31 - 1, y and z up to 65535).
    pub grid: [u32; 3],
    /// Threads per block along x, y, z (at most 1024 in all, z at most 64).
    pub block: [u32; 3],
    /// Instructions the whole launch may execute.
    pub step_budget: u64,
}

impl LaunchConfig {
    /// The default step budget: 2^32 instructions.
    pub const DEFAULT_STEP_BUDGET: u64 = 1 << 32;

    /// A one-dimensional launch of `grid` blocks of `block` threads.
    pub const fn linear(grid: u32, block: u32) -> LaunchConfig {
        LaunchConfig { grid: [grid, 1, 1], block: [block, 1, 1], step_budget: Self::DEFAULT_STEP_BUDGET }
    }
}

impl Default for LaunchConfig {
    fn default() -> LaunchConfig {
        LaunchConfig::linear(1, 1)
    }
}

/// What a successful launch did.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Hash, Default)]
pub struct LaunchStats {
    /// Instructions executed.
    pub steps: u64,
    /// Threads launched.
    pub threads: u64,
}

/// A simulated device: its own global memory; launches interpret the IR.
/// Shareable between host threads (`Send + Sync`); a launch holds the
/// device's memory for its whole duration.
#[derive(Debug)]
pub struct CpuDevice {
    ordinal: u32,
    mem: Mutex<memory::GlobalMem>,
}

impl CpuDevice {
    /// A new device with a fresh, randomly placed address space.
    pub fn new(ordinal: u32) -> CpuDevice {
        CpuDevice { ordinal, mem: Mutex::new(memory::GlobalMem::new(memory::random_base(ordinal))) }
    }

    /// The ordinal given at creation.
    pub fn ordinal(&self) -> u32 {
        self.ordinal
    }

    /// The lowest global address this device hands out (random).
    pub fn base_address(&self) -> u64 {
        self.lock().base()
    }

    fn lock(&self) -> MutexGuard<'_, memory::GlobalMem> {
        // Nothing panics while holding the lock, but never propagate poison.
        self.mem.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Allocates `bytes` zero-filled bytes of global memory (page aligned).
    pub fn alloc(&self, bytes: u64) -> Result<DevicePtr, DeviceError> {
        self.lock().alloc(bytes).map(DevicePtr)
    }

    /// Frees the allocation starting at `ptr`. Its addresses are never
    /// handed out again.
    pub fn free(&self, ptr: DevicePtr) -> Result<(), DeviceError> {
        self.lock().free(ptr.0)
    }

    /// Copies `bytes` to `ptr`, which may point inside an allocation; the
    /// whole range must lie in that allocation.
    pub fn write(&self, ptr: DevicePtr, bytes: &[u8]) -> Result<(), DeviceError> {
        self.lock().write(ptr.0, bytes)
    }

    /// Copies `len` bytes from `ptr`, which may point inside an allocation;
    /// the whole range must lie in that allocation.
    pub fn read(&self, ptr: DevicePtr, len: u64) -> Result<Vec<u8>, DeviceError> {
        self.lock().read(ptr.0, len)
    }

    /// Runs `kernel` of `module` (a verified module) over the grid.
    pub fn launch(&self, module: &Module, kernel: &str, config: &LaunchConfig, args: &[KernelArg]) -> Result<LaunchStats, LaunchError> {
        let id = module.func_by_name(kernel).ok_or_else(|| LaunchError::UnknownKernel { name: kernel.to_owned() })?;
        let f = &module.funcs[id];
        if f.kind != FuncKind::Kernel {
            return Err(LaunchError::NotAKernel { name: kernel.to_owned() });
        }
        let threads = check_config(kernel, config)?;
        let bits = check_args(module, id, args)?;
        let prog = compile::compile(module, id)?;
        let mut mem = self.lock();
        let steps = exec::run(&prog, &mut mem, config.grid, config.block, &bits, config.step_budget).map_err(|l| {
            LaunchError::Fault { kernel: kernel.to_owned(), block: l.block, thread: l.thread, kind: l.kind }
        })?;
        Ok(LaunchStats { steps, threads })
    }
}

/// Checks the geometry; returns the number of threads.
fn check_config(kernel: &str, c: &LaunchConfig) -> Result<u64, LaunchError> {
    let bad = |reason: String| Err(LaunchError::BadLaunchConfig { kernel: kernel.to_owned(), reason });
    if c.grid.contains(&0) || c.block.contains(&0) {
        return bad(format!("zero dimension in grid {:?} or block {:?}", c.grid, c.block));
    }
    let per_block: u64 = c.block.iter().map(|&d| u64::from(d)).product();
    if per_block > 1024 {
        return bad(format!("block {:?} has {per_block} threads, more than 1024", c.block));
    }
    if c.block[2] > 64 {
        return bad(format!("block z dimension {} exceeds 64", c.block[2]));
    }
    if c.grid[0] > i32::MAX as u32 || c.grid[1] > 65535 || c.grid[2] > 65535 {
        return bad(format!("grid {:?} exceeds (2^31-1, 65535, 65535)", c.grid));
    }
    let blocks: u64 = c.grid.iter().map(|&d| u64::from(d)).product();
    Ok(blocks * per_block)
}

/// Checks arguments against the kernel's parameters; returns their bits.
fn check_args(module: &Module, id: relok_ir::FuncId, args: &[KernelArg]) -> Result<Vec<u64>, LaunchError> {
    let f = &module.funcs[id];
    if f.params.len() != args.len() {
        return Err(LaunchError::ArgCount { kernel: f.name.clone(), expected: f.params.len(), found: args.len() });
    }
    f.params
        .iter()
        .zip(args)
        .enumerate()
        .map(|(index, (&p, arg))| {
            let ty = f.values.get(p).map(|d| d.ty.clone()).unwrap_or(Type::Scalar(Scalar::Bool));
            let mismatch = |why: String| LaunchError::ArgType { kernel: f.name.clone(), index, param: p.to_string(), expected: ty.clone(), why };
            match (&ty, *arg) {
                (Type::Scalar(s), KernelArg::Scalar { ty: t, bits }) if *s == t => {
                    if t == Scalar::Word || relok_ir::typing::literal_fits(t, bits) {
                        Ok(bits)
                    } else {
                        Err(mismatch(format!("bits {bits:#x} do not fit {t}")))
                    }
                }
                (Type::Scalar(_), KernelArg::Scalar { ty: t, .. }) => Err(mismatch(format!("a {t} argument was given"))),
                (Type::Ptr(AddrSpace::Global | AddrSpace::Const, _), KernelArg::Ptr(p)) => Ok(p.0),
                (Type::Ptr(space, _), KernelArg::Ptr(_)) => Err(mismatch(format!("{space} pointers cannot be kernel arguments"))),
                (_, KernelArg::Ptr(_)) => Err(mismatch("a pointer argument was given".to_owned())),
                (_, KernelArg::Scalar { ty: t, .. }) => Err(mismatch(format!("a {t} argument was given"))),
            }
        })
        .collect()
}
