//! Measurements for `relok bench launch`: a timing loop over a kernel
//! loaded on a [`WgpuDevice`], the hand-written dispatch loop relok's
//! launches are measured against.

use super::launch::Arguments;
use super::module::WgpuKernel;
use super::stream::RECORD_BYTES;
use super::{LAUNCHES_PER_SUBMIT, WgpuDevice};
use crate::error::LaunchError;
use crate::launch::{LaunchConfig, check_args, check_config};
use crate::lock;
use relok_compiler::wgsl::bindings;

/// Host time in microseconds of `launches` dispatches of `kernel` by a
/// hand-written loop with relok's batching — its pipeline and one bind
/// group made once, a compute pass per dispatch, a submit every
/// [`LAUNCHES_PER_SUBMIT`] — then of the wait for them: the floor
/// `relok bench launch` measures relok's launches against. The kernel
/// takes no arguments.
pub fn time_bare_dispatches(
    device: &WgpuDevice,
    kernel: &WgpuKernel,
    config: &LaunchConfig,
    launches: usize,
) -> Result<(f64, f64), LaunchError> {
    let err = |error| LaunchError::Device { kernel: kernel.entry.clone(), error };
    check_config(&kernel.entry, config, kernel.block)?;
    check_args(&kernel.entry, &kernel.params, &[])?;
    let pipeline = device.pipeline(kernel, config.block).map_err(err)?;
    let Arguments { bytes, .. } = device.arguments(kernel, &[], 0).map_err(err)?;
    let usage = ::wgpu::BufferUsages::STORAGE | ::wgpu::BufferUsages::COPY_DST | ::wgpu::BufferUsages::COPY_SRC;
    let record = device.buffer("bench exception", RECORD_BYTES, usage).map_err(err)?;
    let args = device
        .buffer("bench args", bytes.len() as u64, ::wgpu::BufferUsages::STORAGE | ::wgpu::BufferUsages::COPY_DST)
        .map_err(err)?;
    device.queue.write_buffer(&args, 0, &bytes);
    let heap = lock(&device.heap).buffer.clone();
    let group = device.device.create_bind_group(&::wgpu::BindGroupDescriptor {
        label: Some("bench"),
        layout: &kernel.layouts.group,
        entries: &[
            ::wgpu::BindGroupEntry { binding: bindings::EXCEPTION, resource: record.as_entire_binding() },
            ::wgpu::BindGroupEntry { binding: bindings::ARGS, resource: args.as_entire_binding() },
            ::wgpu::BindGroupEntry {
                binding: bindings::TABLE,
                resource: kernel.table.as_ref().map_or(&device.empty_table, |t| &t.buffer).as_entire_binding(),
            },
            ::wgpu::BindGroupEntry { binding: bindings::HEAP, resource: heap.as_entire_binding() },
        ],
    });
    let t = std::time::Instant::now();
    let mut encoder = None;
    for i in 0..launches {
        let e = encoder.get_or_insert_with(|| {
            device.device.create_command_encoder(&::wgpu::CommandEncoderDescriptor { label: Some("bench") })
        });
        {
            let mut pass = e.begin_compute_pass(&::wgpu::ComputePassDescriptor { label: None, timestamp_writes: None });
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &group, &[0]);
            pass.dispatch_workgroups(config.grid[0], config.grid[1], config.grid[2]);
        }
        if (i + 1) % LAUNCHES_PER_SUBMIT == 0
            && let Some(e) = encoder.take()
        {
            device.queue.submit([e.finish()]);
        }
    }
    if let Some(e) = encoder.take() {
        device.queue.submit([e.finish()]);
    }
    let launched = t.elapsed().as_secs_f64() * 1e6;
    device.wait().map_err(err)?;
    Ok((launched, t.elapsed().as_secs_f64() * 1e6 - launched))
}
