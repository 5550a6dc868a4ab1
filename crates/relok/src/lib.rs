//! relok runs GPU kernels from Rust on any device — a CUDA GPU, a GPU
//! through wgpu (Vulkan, Metal, DX12), or the cpu reference device — and
//! caches them compiled across processes, even when they refer to host
//! objects (constant tables, messages, symbols, runtime globals) whose
//! addresses change from process to process: each such reference stays a
//! relocation record until the kernel is loaded, where this program's
//! words are delivered.
//!
//! # Start here
//!
//! ```
//! use relok::{Context, Grid, Program};
//!
//! let program = Program::parse(r#"
//! kernel @saxpy(v0: u32, v1: f32, v2: ptr<global, f32>, v3: ptr<global, f32>) {
//!     v4: u32 = block_id.x
//!     v5: u32 = block_dim.x
//!     v6: u32 = thread_id.x
//!     v7: u32 = mul v4, v5
//!     v8: u32 = add v7, v6
//!     v9: bool = lt v8, v0
//!     if v9 {
//!         v10: f32 = load v2[v8]
//!         v11: f32 = load v3[v8]
//!         v12: f32 = mul v1, v10
//!         v13: f32 = add v12, v11
//!         store v3[v8], v13
//!     }
//!     return
//! }
//! "#)?;
//! let ctx = Context::cpu();                       // or Context::from_env()?, Context::best()?
//! let saxpy = ctx.kernel(&program, "saxpy")?;     // compiled once, then from the cache
//! let x = ctx.upload(&[1.0f32, 2.0, 3.0, 4.0])?;
//! let mut y = ctx.upload(&[10.0f32; 4])?;
//! let stream = ctx.stream();
//! saxpy.launch(&stream, Grid::cover(4, 256), (4u32, 2.0f32, &x, &mut y))?;   // enqueues
//! stream.synchronize()?;                          // kernel exceptions surface here
//! assert_eq!(y.download()?, [12.0, 14.0, 16.0, 18.0]);
//! # Ok::<(), relok::Error>(())
//! ```
//!
//! Kernels are written in Rust with [`kernel`] (a documented subset of
//! Rust: scalars, slices, loops, shared arrays, atomics, bounds-checked
//! indexing that raises Rust's message with the Rust location), [`device`]
//! functions and [`host`] statics (tables relocated by identity), or in the
//! text format through [`Program`]:
//!
//! ```
//! #[relok::kernel]
//! fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
//!     let i = relok::global_id_x();
//!     if i < y.len() {
//!         y[i] = a * x[i] + y[i];
//!     }
//! }
//!
//! fn main() -> Result<(), relok::Error> {
//!     let ctx = relok::Context::cpu();
//!     let x = ctx.upload(&[1.0f32, 2.0, 3.0, 4.0])?;
//!     let mut y = ctx.upload(&[10.0f32; 4])?;
//!     let stream = ctx.stream();
//!     saxpy::launch(&stream, relok::Grid::cover(4, 256), 2.0, &x, &mut y)?;   // typed after the kernel
//!     stream.synchronize()?;
//!     assert_eq!(y.download()?, [12.0, 14.0, 16.0, 18.0]);
//!     Ok(())
//! }
//! ```
//!
//! - [`Context`]: a device (`cpu`, `cuda[:N]`, `wgpu[:N]`, `best`), this
//!   program's host objects on it, and the kernel cache;
//! - [`Program`]: kernel IR, parsed from the text format and verified;
//! - [`Kernel`]: one kernel loaded on a context, launched with typed
//!   arguments checked against its signature;
//! - [`Buffer`]: typed device memory, freed on drop (never under a pending
//!   launch);
//! - [`Stream`]: asynchronous launches; exceptions at synchronisation;
//! - [`Error`]: one error type, with typed variants naming the place.
//!
//! The Rust kernel subset (`docs/kernels.md`), the kernel text format,
//! the relocation model, the caches and each backend are described in the
//! repository's `docs/` folder.

mod buffer;
mod cells;
mod context;
mod core;
mod element;
mod error;
mod global;
mod grid;
mod kernel;
mod program;
mod rust_kernel;
mod stream;

pub use buffer::{Buffer, BufferSlice};
pub use context::{Context, ContextBuilder};
pub use element::{Element, ElementType, ScalarArg, Word};
pub use error::{Error, Result};
pub use global::Global;
pub use grid::{Dim3, Grid};
pub use kernel::{Arg, Args, IntoArg, Kernel, Symbol};
pub use program::{KernelSource, Program, Source};
pub use stream::Stream;

/// What the code `#[relok::kernel]` generates calls (not an API).
#[doc(hidden)]
pub mod __kernel {
    pub use crate::rust_kernel::*;
    pub use relok_ir::{FuncId, MathFn, UnaryOp, Value};
}

/// A kernel parameter's scalar type; how host objects reach a kernel.
///
/// ```
/// assert_eq!(relok::Scalar::F32.to_string(), "f32");
/// let ctx = relok::Context::builder().device("cpu").strategy(relok::Strategy::Patch).build()?;
/// # drop(ctx);
/// # Ok::<(), relok::Error>(())
/// ```
pub use relok_ir::{Scalar, Strategy};
pub use relok_macros::{Struct, device, host, kernel};
/// What the kernel cache and the device's code path did; a device's kind;
/// what a faulting thread did (the cpu device); what a stream's launches
/// did ([`Stream::synchronize_stats`]).
///
/// ```
/// let ctx = relok::Context::cpu();
/// let (cache, code): (relok::CacheStats, relok::CodeStats) = (ctx.cache_stats(), ctx.code_stats());
/// assert_eq!((cache.compiles, code.jit), (0, 0));
/// assert_eq!(ctx.device_kind(), relok::DeviceKind::Cpu);
/// let stats: relok::LaunchStats = ctx.stream().synchronize_stats()?;
/// assert_eq!((stats.threads, stats.steps), (0, 0));
/// # let _: Option<relok::FaultKind> = None;
/// # Ok::<(), relok::Error>(())
/// ```
pub use relok_runtime::{CacheStats, CodeStats, DeviceKind, FaultKind, LaunchStats};
pub use rust_kernel::{Elem as Number, Float, Int, Signed};
