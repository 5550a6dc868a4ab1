//! [`Stream`]: an ordered queue of launches on one device.
//!
//! [`crate::Kernel::launch`] checks its arguments and enqueues without
//! waiting. A kernel exception (or, on the cpu device, a fault) is reported
//! at the next synchronisation point of its stream — [`Stream::synchronize`],
//! or a download or write of a buffer the failing launch used — with the
//! message text, block and thread of the first thrower since the previous
//! synchronisation; the stream stays usable afterwards, and launches after
//! the failing one still ran (CUDA.jl's rule). A download of a buffer the
//! failing launch did not use waits for the same stream but succeeds: the
//! exception is kept for the next point that reports it. Each pending
//! launch keeps its kernel and buffers alive until the stream passes it; a
//! stream that drops waits for its launches first (and their failures are
//! lost).

use crate::buffer::Allocation;
use crate::context::Shared;
use crate::error::{Error, Result};
use relok_runtime::DeviceError;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

/// What a pending launch keeps alive.
#[derive(Debug)]
pub(crate) struct Pending {
    pub(crate) kernel: relok_runtime::Kernel,
    pub(crate) buffers: Vec<Arc<Allocation>>,
}

/// A kernel's exception that a synchronisation found on behalf of a buffer
/// the failing launch did not use: kept for [`Stream::synchronize`] or a
/// synchronisation for one of `buffers` (the failing kernel's launches'
/// buffers; weak, and never confused with a later allocation at the same
/// address, since a `Weak` keeps its allocation's address taken).
#[derive(Debug)]
struct Undelivered {
    error: Error,
    buffers: Vec<Weak<Allocation>>,
}

/// Fields drop in order: the pending launches' kernels and buffers, the
/// device's stream, then the context (which may close the device), so
/// nothing is freed after its device.
#[derive(Debug)]
pub(crate) struct StreamInner {
    pub(crate) pending: Mutex<Vec<Pending>>,
    undelivered: Mutex<Option<Undelivered>>,
    pub(crate) stream: std::result::Result<relok_runtime::Stream, DeviceError>,
    pub(crate) ctx: Arc<Shared>,
}

impl StreamInner {
    /// Waits for every launch enqueued so far. `for_buffer` is the buffer
    /// being read or written (`None`: the stream's own synchronisation):
    /// a kernel exception is this call's error only when the failing
    /// launch used that buffer; otherwise it is kept (see the module docs).
    pub(crate) fn synchronize(&self, for_buffer: Option<&Allocation>) -> Result<()> {
        let stream = self.stream.as_ref().map_err(|e| Error::StreamUnavailable(e.clone()))?;
        // Taken before the wait: every launch taken reached the device
        // before it (see `Kernel::launch`), so the wait covers it; a launch
        // enqueued meanwhile stays pending until the next synchronisation.
        let passed = std::mem::take(&mut *lock(&self.pending));
        let outcome = self.ctx.device.synchronize(&self.ctx.session, stream);
        let mut undelivered = lock(&self.undelivered);
        if let Err(e) = outcome {
            let error = crate::rust_kernel::rust_exception(&self.ctx, Error::from(e));
            let failing = match &error {
                Error::Exception { kernel, .. } | Error::Fault { kernel, .. } => kernel.clone(),
                // Not a kernel's (the device failed): whoever waits hears of it.
                _ => return Err(error),
            };
            // The first thrower since the last report stays the one reported.
            if undelivered.is_none() {
                let used = passed.iter().filter(|p| p.kernel.entry() == failing);
                let buffers = used.flat_map(|p| p.buffers.iter().map(Arc::downgrade)).collect();
                *undelivered = Some(Undelivered { error, buffers });
            }
        }
        // Released after the wait, outside the pending lock: a last
        // reference frees device memory.
        drop(passed);
        let reported = |u: &mut Undelivered| for_buffer.is_none_or(|b| u.buffers.iter().any(|w| std::ptr::eq(w.as_ptr(), b)));
        match undelivered.take_if(reported) {
            Some(u) => Err(u.error),
            None => Ok(()),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Drop for StreamInner {
    fn drop(&mut self) {
        if let Ok(stream) = &self.stream {
            // Nobody is left to hear of a failure; the wait is what matters.
            let _ = self.ctx.device.synchronize(&self.ctx.session, stream);
        }
    }
}

/// An ordered queue of launches on one device (see the module docs).
/// `Send + Sync`; streams of one context run concurrently where the device
/// can.
///
/// ```
/// let ctx = relok::Context::cpu();
/// let p = relok::Program::parse("kernel @k(v0: ptr<global, u32>) {\n    v1: u32 = thread_id.x\n    store v0[v1], v1\n    return\n}\n")?;
/// let k = ctx.kernel(&p, "k")?;
/// let mut out = ctx.zeros::<u32>(4)?;
/// let s = ctx.stream();
/// k.launch(&s, relok::Grid::new(1, 4), (&mut out,))?;
/// s.synchronize()?;
/// assert_eq!(out.download()?, [0, 1, 2, 3]);
/// # Ok::<(), relok::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Stream {
    pub(crate) inner: Arc<StreamInner>,
}

impl Stream {
    pub(crate) fn new(ctx: Arc<Shared>) -> Stream {
        let stream = ctx.device.stream();
        Stream { inner: Arc::new(StreamInner { pending: Mutex::default(), undelivered: Mutex::default(), stream, ctx }) }
    }

    /// Waits for every launch enqueued so far; the first kernel exception
    /// or fault since the last synchronisation is the error, and the
    /// stream is usable again either way.
    ///
    /// ```
    /// let ctx = relok::Context::cpu();
    /// let p = relok::Program::parse(concat!(
    ///     "import fn @relok_throw(v0: word)\n",
    ///     "kernel @boom() {\n    v0: word = ref \"boom\"\n    call @relok_throw(v0)\n    return\n}\n",
    /// ))?;
    /// let s = ctx.stream();
    /// ctx.kernel(&p, "boom")?.launch(&s, relok::Grid::new(1, 1), ())?;
    /// match s.synchronize() {
    ///     Err(relok::Error::Exception { message, .. }) => assert_eq!(message, "boom"),
    ///     other => panic!("{other:?}"),
    /// }
    /// s.synchronize()?; // reported once; the stream goes on
    /// # Ok::<(), relok::Error>(())
    /// ```
    pub fn synchronize(&self) -> Result<()> {
        self.inner.synchronize(None)
    }

    /// Launches waiting for the stream to pass them (since the last
    /// synchronisation).
    ///
    /// ```
    /// let s = relok::Context::cpu().stream();
    /// assert_eq!(s.pending(), 0);
    /// ```
    pub fn pending(&self) -> usize {
        lock(&self.inner.pending).len()
    }
}
