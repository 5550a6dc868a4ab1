//! [`Stream`]: an ordered queue of launches on one device.
//!
//! [`crate::Kernel::launch`] checks its arguments and enqueues without
//! waiting. A kernel exception (or, on the cpu device, a fault) belongs to
//! its stream, as in CUDA: it is reported once, at the stream's next
//! synchronisation point — [`Stream::synchronize`], or a download or write
//! of any buffer that a launch pending on the stream uses (such a read
//! waits for the whole stream) — with the message text, block and thread
//! of the first thrower since the previous synchronisation. The device
//! reports that first failure only, so relok cannot tell which buffers
//! the failing launch and the launches after it wrote: an error at any
//! synchronisation point says the stream's work since the last one is
//! suspect. The stream stays usable afterwards, and launches after the
//! failing one still ran (CUDA.jl's rule). Each pending launch keeps its
//! kernel and buffers alive until the stream passes it; a stream that
//! drops waits for its launches first (and their failures are lost).

use crate::core::{Shared, StreamInner, lock};
use crate::error::{Error, Result};
use relok_runtime::LaunchStats;
use std::sync::{Arc, Mutex};

impl StreamInner {
    /// Waits for every launch enqueued so far; the stream's kernel
    /// exception, if any (see the module docs).
    pub(crate) fn synchronize(&self) -> Result<()> {
        self.synchronize_stats().map(|_| ())
    }

    /// [`StreamInner::synchronize`], with what the launches it waited for
    /// did.
    pub(crate) fn synchronize_stats(&self) -> Result<LaunchStats> {
        let stream = self.stream.as_ref().map_err(|e| Error::StreamUnavailable(e.clone()))?;
        // Taken before the wait: every launch taken reached the device
        // before it (see `Kernel::launch`), so the wait covers it; a launch
        // enqueued meanwhile stays pending until the next synchronisation.
        let passed = std::mem::take(&mut *lock(&self.pending));
        let outcome = self.ctx.device.synchronize(&self.ctx.session, stream);
        // Released after the wait, outside the lock: a last reference frees
        // device memory.
        drop(passed);
        outcome.map_err(Error::from)
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
        Stream { inner: Arc::new(StreamInner { pending: Mutex::default(), stream, ctx }) }
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
        self.inner.synchronize()
    }

    /// [`Stream::synchronize`], returning what the launches since the last
    /// synchronisation did: the threads they ran and, on the cpu device,
    /// the instructions they executed (what [`crate::Grid::step_budget`]
    /// bounds per launch; GPUs count none: 0). An exception or fault is
    /// the error, as for `synchronize`.
    ///
    /// ```
    /// let ctx = relok::Context::cpu();
    /// let p = relok::Program::parse("kernel @k(v0: ptr<global, u32>) {\n    v1: u32 = thread_id.x\n    store v0[v1], v1\n    return\n}\n")?;
    /// let k = ctx.kernel(&p, "k")?;
    /// let mut out = ctx.zeros::<u32>(4)?;
    /// let s = ctx.stream();
    /// k.launch(&s, relok::Grid::new(1, 4), (&mut out,))?;
    /// k.launch(&s, relok::Grid::new(1, 4), (&mut out,))?;
    /// let stats = s.synchronize_stats()?;
    /// assert_eq!(stats.threads, 8);
    /// assert!(stats.steps > 0);
    /// assert_eq!(s.synchronize_stats()?.threads, 0); // nothing since
    /// # Ok::<(), relok::Error>(())
    /// ```
    pub fn synchronize_stats(&self) -> Result<LaunchStats> {
        self.inner.synchronize_stats()
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
