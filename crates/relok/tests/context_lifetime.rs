//! A context is freed when its last handle drops, whatever it launched:
//! a context that launched a Rust kernel (`#[relok::kernel]`, kept loaded
//! per context) is freed as one that launched a `.rk` kernel is. A
//! counting global allocator measures the heap: on the cpu device a
//! context's device memory is heap memory, so a context kept alive keeps
//! at least the 4 MiB of the host static its kernel reads. One test in
//! this binary: nothing else allocates while it measures.

use relok::{Context, Grid};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes allocated and not yet freed, by every thread.
static LIVE: AtomicUsize = AtomicUsize::new(0);

struct Counting;

// SAFETY: every method passes its arguments unchanged to `System`, which
// upholds `GlobalAlloc`'s contract; the counter's updates neither allocate
// nor unwind.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller upholds `alloc`'s contract (non-zero size),
        // which is `System.alloc`'s.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` was allocated by `System` (every allocation goes
        // through this allocator to `System`) with this `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size, Ordering::Relaxed);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` was allocated by `System` with `layout`, and the
        // caller upholds `realloc`'s contract for `new_size`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const TABLE_LEN: usize = 1 << 20;

/// 4 MiB: what each context holds on its device once `read_table` ran.
#[relok::host]
static TABLE: [u32; TABLE_LEN] = [7; TABLE_LEN];

#[relok::kernel]
fn read_table(out: &mut [u32]) {
    let i = global_id_x();
    if i < out.len() {
        out[i] = TABLE[i];
    }
}

/// A fresh context that launches `read_table`, then drops everything.
fn launch_on_a_fresh_context() {
    let ctx = Context::builder().device("cpu").no_cache().build().expect("cpu");
    let mut out = ctx.zeros::<u32>(4).expect("zeros");
    let s = ctx.stream();
    read_table::launch(&s, Grid::new(1, 4), &mut out).expect("launch");
    s.synchronize().expect("runs");
    assert_eq!(out.download().expect("download"), [7; 4]);
}

#[test]
fn dropping_a_context_that_launched_a_rust_kernel_frees_it() {
    // The first launch builds the kernel's IR, kept for the process.
    launch_on_a_fresh_context();
    let before = LIVE.load(Ordering::Relaxed);
    for _ in 0..8 {
        launch_on_a_fresh_context();
    }
    let grown = LIVE.load(Ordering::Relaxed).saturating_sub(before);
    let table_bytes = size_of_val(&TABLE);
    assert!(
        grown < table_bytes,
        "8 contexts dropped, the heap grew by {grown} bytes: a context is kept alive ({table_bytes} bytes of host static each)"
    );
}
