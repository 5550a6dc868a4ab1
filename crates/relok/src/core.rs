//! The facade's ground: the state a context shares with everything made
//! from it — the device, session and kernel cache ([`Shared`]), device
//! allocations ([`Allocation`]), streams with their pending launches
//! ([`StreamInner`], [`Pending`]) and loaded kernels ([`LoadedKernel`]).
//! Every other module of the facade imports this one; it imports none of
//! them (as cudarc keeps its shared inner state in `driver/safe/core.rs`).
//! The behaviour of these types lives with their public faces: a stream's
//! synchronisation in `stream.rs`, a buffer's settling in `buffer.rs`.

use relok_ir::{Strategy, Type};
use relok_runtime::{Device, DeviceError, DeviceMemory, DevicePtr, KernelCache, Session};
use std::sync::{Arc, Mutex, Weak};

/// A lock that a panic elsewhere did not poison: the facade's shared
/// state stays consistent under every lock (no invariant spans a panic).
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What a context shares with its buffers, streams and kernels, which keep
/// it alive: the device is closed when the last of them drops.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) device: Device,
    pub(crate) session: Session,
    pub(crate) cache: KernelCache,
    pub(crate) strategy: Strategy,
    pub(crate) name: String,
    /// Rust kernels loaded here, by the address of their definition
    /// (`relok::__kernel::KernelDef`): a warm launch finds its kernel here.
    /// Without their context, which a `Kernel` here would keep alive.
    pub(crate) rust_kernels: Mutex<std::collections::HashMap<usize, Arc<LoadedKernel>>>,
    /// The `#[relok::host]` static whose bytes each host-static cell holds
    /// here, by the cell's name: a second static of the same identity is
    /// refused (`Error::HostStaticConflict`), never read for the first.
    pub(crate) host_statics: Mutex<std::collections::HashMap<String, &'static dyn crate::cells::HostObject>>,
}

/// A kernel loaded on a context's device, without the context: what the
/// context's map of Rust kernels holds (a `Kernel` there would hold the
/// context that holds it, and neither would ever drop).
#[derive(Debug)]
pub(crate) struct LoadedKernel {
    pub(crate) inner: relok_runtime::Kernel,
    pub(crate) name: String,
    /// Parameter names (`v0`) and types, in order.
    pub(crate) params: Vec<(String, Type)>,
}

/// One device allocation, freed when the last holder (its buffer, pending
/// launches) drops it.
#[derive(Debug)]
pub(crate) struct Allocation {
    pub(crate) ctx: Arc<Shared>,
    pub(crate) ptr: DevicePtr,
    /// Streams that may have pending launches using this allocation.
    pub(crate) users: Mutex<Vec<Weak<StreamInner>>>,
}

impl Allocation {
    pub(crate) fn new(ctx: Arc<Shared>, ptr: DevicePtr) -> Allocation {
        Allocation { ctx, ptr, users: Mutex::default() }
    }

    /// Notes that `stream` has a pending launch using this allocation.
    pub(crate) fn used_by(&self, stream: &Arc<StreamInner>) {
        let mut users = lock(&self.users);
        if !users.iter().any(|u| std::ptr::eq(u.as_ptr(), Arc::as_ptr(stream))) {
            users.retain(|u| u.strong_count() > 0);
            users.push(Arc::downgrade(stream));
        }
    }
}

impl Drop for Allocation {
    fn drop(&mut self) {
        // Our own allocation, freed once: a failure could only leak.
        let _ = self.ctx.device.free_bytes(self.ptr);
    }
}

/// What a pending launch keeps alive.
#[derive(Debug)]
pub(crate) struct Pending {
    pub(crate) _kernel: relok_runtime::Kernel,
    pub(crate) _buffers: Vec<Arc<Allocation>>,
}

/// Fields drop in order: the pending launches' kernels and buffers, the
/// device's stream, then the context (which may close the device), so
/// nothing is freed after its device.
#[derive(Debug)]
pub(crate) struct StreamInner {
    pub(crate) pending: Mutex<Vec<Pending>>,
    pub(crate) stream: Result<relok_runtime::Stream, DeviceError>,
    pub(crate) ctx: Arc<Shared>,
}

impl Drop for StreamInner {
    fn drop(&mut self) {
        if let Ok(stream) = &self.stream {
            // Nobody is left to hear of a failure; the wait is what matters.
            let _ = self.ctx.device.synchronize(&self.ctx.session, stream);
        }
    }
}
