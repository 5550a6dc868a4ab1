//! The driver's floor under a first launch: each step of loading and
//! launching relok's `scale` kernel (`examples/bench/scale.rk` compiled for
//! table, as the warm path of `relok bench start` loads it) made with bare
//! driver calls in a new process — no relok runtime, no store, no checks
//! of its own — timed one by one. What relok adds to a warm first launch
//! is its figure minus this one (docs/benchmarks.md).
//!
//! ```text
//! relok compile examples/bench/scale.rk --target ptx -o scale.ptx   # checked (the default)
//! ptxas -arch=sm_90 -o scale.cubin scale.ptx
//! driver_floor scale.cubin checked      # or `unchecked` for a cubin compiled without checks
//! ```
//!
//! It mirrors the device's state when a relok kernel loads: the context,
//! one stream (non-blocking here; relok's are default streams, which
//! changes nothing measured), and the allocation and copies the device
//! makes when it opens. Prints one line: each step in µs and their total.
#![expect(clippy::print_stdout, reason = "the one line is this program's output")]

use cudarc::driver::{CudaContext, result, sys};
use std::ffi::{CString, c_void};
use std::time::Instant;

/// A driver error as `call: error`.
fn fail(call: &'static str) -> impl Fn(cudarc::driver::DriverError) -> String {
    move |e| format!("{call}: {e:?}")
}

fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: driver_floor CUBIN checked|unchecked")?;
    let checked = match args.next().as_deref() {
        Some("checked") => true,
        Some("unchecked") => false,
        _ => return Err("usage: driver_floor CUBIN checked|unchecked".into()),
    };
    let cubin = std::fs::read(&path).map_err(|e| format!("{path}: {e}"))?;
    let ctx = CudaContext::new(0).map_err(fail("cuCtxCreate"))?;
    ctx.bind_to_thread().map_err(fail("cuCtxSetCurrent"))?;
    let stream = result::stream::create(result::stream::StreamKind::NonBlocking).map_err(fail("cuStreamCreate"))?;
    let mut laps: Vec<(&str, f64)> = Vec::new();
    // SAFETY: every pointer below is an allocation of this bound context,
    // used within its size; `cubin` outlives the load; the launch's
    // parameters match the kernel's PTX signature (state by value, n, x, y
    // and, checked, two lengths and the seal table) and outlive the call,
    // which copies them; the stream is this context's.
    unsafe {
        let ready = result::malloc_sync(8).map_err(fail("cuMemAlloc"))?;
        result::memcpy_htod_sync(ready, &[1u8; 8]).map_err(fail("cuMemcpyHtoD"))?;
        let mut back = [0u8; 8];
        result::memcpy_dtoh_sync(&mut back, ready).map_err(fail("cuMemcpyDtoH"))?;
        let mut last = Instant::now();
        let mut lap = |name: &'static str| {
            let now = Instant::now();
            laps.push((name, (now - last).as_secs_f64() * 1e6));
            last = now;
        };
        let module = result::module::load_data(cubin.as_ptr().cast()).map_err(fail("cuModuleLoadData"))?;
        lap("module");
        let name = CString::new("scale").map_err(|e| e.to_string())?;
        let f = result::module::get_function(module, name).map_err(fail("cuModuleGetFunction"))?;
        lap("function");
        sys::cuFuncLoad(f).result().map_err(fail("cuFuncLoad"))?;
        lap("func load");
        let value = result::malloc_sync(4).map_err(fail("cuMemAlloc"))?;
        result::memcpy_htod_sync(value, &[2.0f32]).map_err(fail("cuMemcpyHtoD"))?;
        lap("value");
        let table = result::malloc_sync(8).map_err(fail("cuMemAlloc"))?;
        result::memcpy_htod_sync(table, &[value]).map_err(fail("cuMemcpyHtoD"))?;
        lap("table");
        let record = result::malloc_sync(64).map_err(fail("cuMemAlloc"))?;
        result::memset_d8_sync(record, 0, 64).map_err(fail("cuMemsetD8"))?;
        lap("record");
        let x: Vec<f32> = (0..1024).map(|i| i as f32).collect();
        let dx = result::malloc_sync(4096).map_err(fail("cuMemAlloc"))?;
        result::memcpy_htod_sync(dx, &x).map_err(fail("cuMemcpyHtoD"))?;
        let dy = result::malloc_sync(4096).map_err(fail("cuMemAlloc"))?;
        lap("upload");
        let mut state = [table, record, 0u64];
        let (mut n, mut px, mut py, mut lx, mut ly, mut seals) = (1024u32, dx, dy, 4096u64, 4096u64, 0u64);
        let mut params: Vec<*mut c_void> =
            vec![state.as_mut_ptr().cast(), (&raw mut n).cast(), (&raw mut px).cast(), (&raw mut py).cast()];
        if checked {
            params.extend([(&raw mut lx).cast(), (&raw mut ly).cast(), (&raw mut seals).cast()]);
        }
        result::launch_kernel(f, (4, 1, 1), (256, 1, 1), 0, stream, &mut params).map_err(fail("cuLaunchKernel"))?;
        lap("launch");
        result::stream::synchronize(stream).map_err(fail("cuStreamSynchronize"))?;
        lap("wait");
        let mut y = vec![0f32; 1024];
        result::memcpy_dtoh_sync(&mut y, dy).map_err(fail("cuMemcpyDtoH"))?;
        lap("download");
        if y.iter().zip(&x).any(|(y, x)| *y != 2.0 * x) {
            return Err("wrong result".into());
        }
    }
    let total: f64 = laps.iter().map(|l| l.1).sum();
    let steps: Vec<String> = laps.iter().map(|(n, us)| format!("{n} {us:.1}")).collect();
    println!("{} total {total:.1} | {}", if checked { "checked" } else { "unchecked" }, steps.join(" | "));
    Ok(())
}
