//! Launches (the `wgpu` module docs, "Streams"): a launch checked against
//! the geometry, its arguments and this adapter's limits, its arguments'
//! slots and bound buffers, and its recording into a stream's open batch;
//! [`WgpuDevice::launch`], an enqueue and a synchronisation.

use super::memory::split;
use super::module::WgpuKernel;
use super::stream::{BATCH_ARGS_BYTES, GroupKey, Pool, RECORD_BYTES, Record, WgpuStream};
use super::{LAUNCHES_PER_SUBMIT, WgpuDevice, driver};
use crate::backend::{Backend, Thrown, wrong_device};
use crate::error::{DeviceError, LaunchError};
use crate::launch::{DevicePtr, KernelArg, LaunchConfig, check_args, check_config, check_lens};
use crate::lock;
use relok_compiler::wgsl::bindings;
use relok_ir::Type;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// A launch's arguments as it binds them.
pub(super) struct Arguments {
    /// Its slots of the arguments buffer: the seed, two 32-bit slots per
    /// scalar, a zero.
    pub(super) bytes: Vec<u8>,
    /// Its buffer arguments with the offsets they are bound from.
    pub(super) bound: Vec<(::wgpu::Buffer, u64)>,
}

impl WgpuDevice {
    /// Launches a loaded kernel and waits for it: an enqueue on a stream of
    /// its own, then a synchronisation (see the module docs). The geometry
    /// and the arguments are checked as on the cpu device and against the
    /// adapter's limits; a buffer argument points into a buffer of this
    /// device at a multiple of `min_storage_buffer_offset_alignment`. An
    /// exception comes back as its message word, block and thread.
    pub fn launch(
        &self,
        kernel: &WgpuKernel,
        config: &LaunchConfig,
        args: &[KernelArg],
        rng_seed: u64,
    ) -> Result<Option<Thrown>, LaunchError> {
        let stream = self.new_stream().map_err(|error| LaunchError::Device { kernel: kernel.entry.clone(), error })?;
        self.record_launch(&stream, kernel, config, args, rng_seed)?;
        match self.synchronize_stream(&stream) {
            Ok(_) => Ok(None),
            Err(LaunchError::Exception { message_word, block, thread, values, .. }) => {
                Ok(Some(Thrown { message_word, block, thread, values }))
            }
            Err(e) => Err(e),
        }
    }

    /// A launch's arguments as it binds them.
    pub(super) fn arguments(
        &self,
        kernel: &WgpuKernel,
        values: &[u64],
        rng_seed: u64,
    ) -> Result<Arguments, DeviceError> {
        let align = self.buffer_offset_alignment();
        let mut scalars = Vec::new();
        let mut bound = Vec::new();
        let buffers = lock(&self.buffers);
        for (ty, &v) in kernel.params.iter().zip(values) {
            if matches!(ty, Type::Ptr(..)) {
                let (id, offset) = split(DevicePtr(v));
                let Some((b, bytes)) = buffers.get(&id) else {
                    return Err(driver("launch", format!("{v:#x} is not a pointer into a buffer of this device")));
                };
                if offset % align != 0 {
                    let message = format!(
                        "{v:#x} points {offset} bytes into its buffer: wgpu binds a buffer from an offset that is a multiple of this adapter's min_storage_buffer_offset_alignment ({align} bytes)"
                    );
                    return Err(driver("launch", message));
                }
                if offset > *bytes || offset >= b.size() {
                    return Err(driver("launch", format!("{v:#x} points past the end of its buffer of {bytes} bytes")));
                }
                bound.push((b.clone(), offset));
            } else {
                scalars.push(v);
            }
        }
        // The seed, the scalars, and last a zero the WGSL reads as
        // `relok_zero` (the binding's last slot: it is bound with its size)
        // to keep float products from being fused into adds (docs/wgpu.md).
        let slots = bindings::args_words(rng_seed, &scalars);
        Ok(Arguments { bytes: slots.iter().flat_map(|s| s.to_le_bytes()).collect(), bound })
    }

    /// Checks a launch and records it into `stream`'s open batch (see the
    /// module docs), submitting the batch when it is full.
    pub(super) fn record_launch(
        &self,
        stream: &WgpuStream,
        kernel: &WgpuKernel,
        config: &LaunchConfig,
        args: &[KernelArg],
        rng_seed: u64,
    ) -> Result<(), LaunchError> {
        let err = |error| LaunchError::Device { kernel: kernel.entry.clone(), error };
        if kernel.device != self.id {
            let message = format!("@{} was loaded on {}, not on this {}", kernel.entry, kernel.device, self.id);
            return Err(err(driver("launch", message)));
        }
        if stream.device != self.id {
            return Err(wrong_device(&kernel.entry, "the stream", stream.device, self.id));
        }
        check_config(&kernel.entry, config, kernel.block)?;
        self.check_limits(&kernel.entry, config)?;
        let values = check_args(&kernel.entry, &kernel.params, args)?;
        if !kernel.lens.is_empty() {
            let buffers = lock(&self.buffers);
            check_lens(&kernel.entry, &kernel.params, &kernel.lens, &values, |p| {
                let (id, offset) = split(DevicePtr(p));
                buffers.get(&id).map_or(0, |(_, bytes)| bytes.saturating_sub(offset))
            })?;
        }
        let pipeline = self.pipeline(kernel, config.block).map_err(err)?;
        let Arguments { bytes, bound } = self.arguments(kernel, &values, rng_seed).map_err(err)?;
        let len = bytes.len() as u64;
        let align = self.buffer_offset_alignment();
        // Held while the launch is recorded: the heap cannot grow (and its
        // growth submits this batch before it copies).
        let heap = lock(&self.heap);
        let shared = &stream.shared;
        let mut guard = lock(&shared.batch);
        let batch = &mut *guard;
        let record = match batch.records.get(&kernel.serial) {
            Some(r) => r.buffer.clone(),
            None => {
                let buffer = match Pool::take(&self.pool.records, |_| true) {
                    Some(b) => b,
                    None => {
                        let usage = ::wgpu::BufferUsages::STORAGE
                            | ::wgpu::BufferUsages::COPY_DST
                            | ::wgpu::BufferUsages::COPY_SRC;
                        self.buffer("relok exception", RECORD_BYTES, usage).map_err(err)?
                    }
                };
                let r = Record {
                    entry: kernel.entry.clone(),
                    kernel: Arc::downgrade(&kernel.alive),
                    buffer: buffer.clone(),
                    used: false,
                };
                batch.records.insert(kernel.serial, r);
                buffer
            }
        };
        let fits = batch
            .args
            .as_ref()
            .is_some_and(|(b, staged)| (staged.len() as u64).next_multiple_of(align) + len <= b.size());
        if !fits {
            shared.submit(batch);
            // Bind groups of the previous arguments buffer are not used again.
            batch.groups.clear();
            let args = match Pool::take(&self.pool.args, |_| len <= BATCH_ARGS_BYTES) {
                Some(b) => b,
                None => {
                    let usage = ::wgpu::BufferUsages::STORAGE | ::wgpu::BufferUsages::COPY_DST;
                    self.buffer("relok args", len.max(BATCH_ARGS_BYTES), usage).map_err(err)?
                }
            };
            batch.args = Some((args, Vec::new()));
        }
        let Some((args_buffer, staged)) = batch.args.as_mut() else {
            return Err(err(driver("launch", "the batch has no arguments buffer")));
        };
        let offset = (staged.len() as u64).next_multiple_of(align);
        let Ok(dynamic_offset) = u32::try_from(offset) else {
            return Err(err(driver("launch", "the batch's arguments buffer outgrew 32-bit offsets")));
        };
        // One bind group per (kernel, heap, buffers) and arguments buffer:
        // launches of a batch share it, each at its own dynamic offset.
        let key = GroupKey { kernel: kernel.serial, heap: heap.buffer.clone(), args: args_buffer.clone(), bound };
        let group = match batch.groups.get(&key) {
            Some(g) => g.clone(),
            None => {
                let group = self.scoped("createBindGroup", || {
                    let buffer = |buffer, offset, size| {
                        ::wgpu::BindingResource::Buffer(::wgpu::BufferBinding { buffer, offset, size })
                    };
                    let mut entries = vec![
                        ::wgpu::BindGroupEntry { binding: bindings::EXCEPTION, resource: record.as_entire_binding() },
                        ::wgpu::BindGroupEntry {
                            binding: bindings::ARGS,
                            resource: buffer(args_buffer, 0, std::num::NonZeroU64::new(len)),
                        },
                        ::wgpu::BindGroupEntry {
                            binding: bindings::TABLE,
                            resource: kernel
                                .table
                                .as_ref()
                                .map_or(&self.empty_table, |t| &t.buffer)
                                .as_entire_binding(),
                        },
                        ::wgpu::BindGroupEntry { binding: bindings::HEAP, resource: heap.buffer.as_entire_binding() },
                    ];
                    for (i, (b, offset)) in key.bound.iter().enumerate() {
                        entries.push(::wgpu::BindGroupEntry {
                            binding: bindings::buffer_binding(i),
                            resource: buffer(b, *offset, None),
                        });
                    }
                    self.device.create_bind_group(&::wgpu::BindGroupDescriptor {
                        label: Some(&kernel.entry),
                        layout: &kernel.layouts.group,
                        entries: &entries,
                    })
                });
                let group = group.map_err(err)?;
                batch.groups.insert(key, group.clone());
                group
            }
        };
        staged.resize(offset as usize, 0);
        staged.extend_from_slice(&bytes);
        // Errors in the pass surface when the encoder is finished (at the
        // batch's submission).
        let encoder = batch.encoder.get_or_insert_with(|| {
            self.device.create_command_encoder(&::wgpu::CommandEncoderDescriptor { label: Some("relok launches") })
        });
        {
            let mut pass = encoder.begin_compute_pass(&::wgpu::ComputePassDescriptor {
                label: Some(&kernel.entry),
                timestamp_writes: None,
            });
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &group, &[dynamic_offset]);
            pass.dispatch_workgroups(config.grid[0], config.grid[1], config.grid[2]);
        }
        if batch.recorded == 0 {
            batch.first.clone_from(&kernel.entry);
        }
        batch.recorded += 1;
        batch.threads = batch.threads.saturating_add(config.threads());
        if let Some(r) = batch.records.get_mut(&kernel.serial).filter(|r| !r.used) {
            r.used = true;
            batch.used.push(kernel.serial);
        }
        if batch.recorded >= LAUNCHES_PER_SUBMIT {
            shared.submit(batch);
        }
        drop(guard);
        drop(heap);
        self.stats.launches.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}
