//! Measurements for `relok bench cuda` and `relok bench launch`: timing
//! loops over a kernel loaded on a [`CudaDevice`], with relok's launches
//! and with bare driver launches, the floor they are measured against.

use super::launch::kernel_params;
use super::{CudaDevice, CudaKernel, driver};
use crate::backend::Backend;
use crate::error::{DeviceError, LaunchError};
use crate::launch::{KernelArg, LaunchConfig, check_config};
use crate::lock;
use cudarc::driver::{result, sys};
use relok_compiler::state::KernelState;

/// GPU time in milliseconds of each of `iters` launches of `kernel`
/// (events recorded around each launch on the default stream).
pub fn time_launches(
    device: &CudaDevice,
    kernel: &CudaKernel,
    config: &LaunchConfig,
    args: &[KernelArg],
    iters: usize,
) -> Result<Vec<f64>, LaunchError> {
    check_config(&kernel.entry, config, kernel.block)?;
    let mut values = device.launch_values(kernel, args)?;
    let err = |error| LaunchError::Device { kernel: kernel.entry.clone(), error };
    device.bind().map_err(err)?;
    let flags = sys::CUevent_flags::CU_EVENT_DEFAULT;
    let start = result::event::create(flags).map_err(driver("cuEventCreate")).map_err(err)?;
    let end = result::event::create(flags).map_err(driver("cuEventCreate")).map_err(err)?;
    let mut out = Vec::with_capacity(iters);
    let mut run = || -> Result<(), DeviceError> {
        for _ in 0..iters {
            // SAFETY: live events of this context, default stream.
            unsafe { result::event::record(start, std::ptr::null_mut()) }.map_err(driver("cuEventRecord"))?;
            device.run(kernel, config, &mut values, 0)?;
            // SAFETY: as above.
            unsafe { result::event::record(end, std::ptr::null_mut()) }.map_err(driver("cuEventRecord"))?;
            // SAFETY: as above; both events were recorded.
            unsafe { result::event::synchronize(end) }.map_err(driver("cuEventSynchronize"))?;
            // SAFETY: as above.
            let ms = unsafe { result::event::elapsed(start, end) }.map_err(driver("cuEventElapsedTime"))?;
            out.push(f64::from(ms));
        }
        Ok(())
    };
    let r = run();
    // SAFETY: created above, destroyed once.
    unsafe {
        let _ = result::event::destroy(start);
        let _ = result::event::destroy(end);
    }
    r.map_err(err)?;
    Ok(out)
}

/// Host time in microseconds of each of `iters` bare launches of the
/// kernel's function (cuLaunchKernel + cuCtxSynchronize; the
/// parameters, with a checked kernel's buffer lengths, built once
/// before the loop; no exception record read): the floor relok's
/// per-launch overhead is measured against.
pub fn time_raw_launches(
    device: &CudaDevice,
    kernel: &CudaKernel,
    config: &LaunchConfig,
    args: &[KernelArg],
    iters: usize,
) -> Result<Vec<f64>, LaunchError> {
    let mut values = device.launch_values(kernel, args)?;
    let err = |error| LaunchError::Device { kernel: kernel.entry.clone(), error };
    device.bind().map_err(err)?;
    let mut record = lock(&kernel.exception);
    // Never read here: whatever these launches write is cleared when
    // the record goes back to the pool.
    record.unread = true;
    let mut state = KernelState { reloc_table: kernel.table_word(), exception: record.device, rng_seed: 0 };
    let mut params = kernel_params(&mut state, &mut values);
    let mut out = Vec::with_capacity(iters);
    for _ in 0..iters {
        let t = std::time::Instant::now();
        // SAFETY: `values` were checked against the ABI above, `state`
        // and `values` outlive the call, the context is bound above.
        unsafe { kernel.launch_and_wait(config, &mut params) }.map_err(err)?;
        out.push(t.elapsed().as_secs_f64() * 1e6);
    }
    Ok(out)
}

/// Host time in microseconds of `iters` bare launches of the kernel's
/// function enqueued on one new stream without waiting (`cuLaunchKernel`
/// in a loop with its parameters built once, no relok checks), then the
/// wait for them, in microseconds: the floor `relok bench launch`
/// measures relok's asynchronous launches against.
pub fn time_bare_async_launches(
    device: &CudaDevice,
    kernel: &CudaKernel,
    config: &LaunchConfig,
    args: &[KernelArg],
    iters: usize,
) -> Result<(f64, f64), LaunchError> {
    // The geometry still: the code may rely on the kernel's block shape.
    check_config(&kernel.entry, config, kernel.block)?;
    let mut values = device.launch_values(kernel, args)?;
    let err = |error| LaunchError::Device { kernel: kernel.entry.clone(), error };
    let stream = Backend::new_stream(device).map_err(err)?;
    let mut record = lock(&kernel.exception);
    // Never read here: whatever these launches write is cleared when
    // the record goes back to the pool.
    record.unread = true;
    let mut state = KernelState { reloc_table: kernel.table_word(), exception: record.device, rng_seed: 0 };
    let mut params = kernel_params(&mut state, &mut values);
    let [gx, gy, gz] = config.grid;
    let [bx, by, bz] = config.block;
    let t = std::time::Instant::now();
    for _ in 0..iters {
        // SAFETY: `values` were checked against the ABI above, `state`
        // and `values` outlive the calls (the driver copies them), the
        // context was bound by `new_stream`, the stream is its.
        unsafe { result::launch_kernel(kernel.function, (gx, gy, gz), (bx, by, bz), 0, stream.raw, &mut params) }
            .map_err(driver("cuLaunchKernel"))
            .map_err(err)?;
    }
    let launched = t.elapsed().as_secs_f64() * 1e6;
    // SAFETY: the stream is alive (dropped below).
    unsafe { result::stream::synchronize(stream.raw) }.map_err(driver("cuStreamSynchronize")).map_err(err)?;
    Ok((launched, t.elapsed().as_secs_f64() * 1e6 - launched))
}
