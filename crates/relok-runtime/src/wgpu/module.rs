//! Loading (the `wgpu` module docs, "Loading"): an artifact checked,
//! its words delivered, its shader module created and, for `table`, its
//! table buffer written; the bind-group and pipeline layouts by number of
//! buffer parameters, and a kernel's pipelines per block shape.

use super::{WgpuDevice, driver};
use crate::backend::{deliver_words, load_once};
use crate::error::{DeviceError, ProgramError};
use crate::load::{LoadRequest, Validated};
use crate::lock;
use crate::memory::{DeviceId, DeviceMemory};
use crate::session::Session;
use relok_compiler::artifact::{Artifact, CodeTarget};
use relok_compiler::wgsl::bindings;
use relok_ir::{Strategy, Type};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The next kernel serial (names a kernel's exception record on a stream).
static NEXT_KERNEL: AtomicU64 = AtomicU64::new(1);

#[derive(Debug)]
pub(super) struct Layouts {
    pub(super) group: ::wgpu::BindGroupLayout,
    pub(super) pipeline: ::wgpu::PipelineLayout,
}

/// A kernel's table buffer, counted among the device's live allocations
/// while it lives.
#[derive(Debug)]
pub(super) struct TableBuffer {
    pub(super) buffer: ::wgpu::Buffer,
    /// The device's count of live table buffers.
    count: Arc<AtomicU64>,
}

impl TableBuffer {
    fn new(buffer: ::wgpu::Buffer, count: &Arc<AtomicU64>) -> TableBuffer {
        count.fetch_add(1, Ordering::Relaxed);
        TableBuffer { buffer, count: Arc::clone(count) }
    }
}

impl Drop for TableBuffer {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A kernel loaded on one wgpu device with its words delivered.
#[derive(Debug)]
pub struct WgpuKernel {
    pub(super) entry: String,
    pub(super) device: DeviceId,
    pub(super) params: Vec<Type>,
    /// The length parameters a launch checks (`relok_ir::LenParam`), as
    /// (length, pointer) parameter indices: a checked kernel's (none
    /// unchecked, whose code checks no access).
    pub(super) lens: Vec<(usize, usize)>,
    /// The block shape every launch must have (`relok_ir::Function::block`).
    pub(super) block: Option<[u32; 3]>,
    module: ::wgpu::ShaderModule,
    pub(super) layouts: Arc<Layouts>,
    pub(super) table: Option<TableBuffer>,
    /// By block shape (the WGSL's override constants).
    pipelines: Mutex<HashMap<[u32; 3], ::wgpu::ComputePipeline>>,
    /// Unique in the process: names the kernel's exception record on a
    /// stream.
    pub(super) serial: u64,
    /// Held by the kernel only: a stream's record of a kernel whose
    /// `alive` is gone goes back to the pool.
    pub(super) alive: Arc<()>,
    /// The words, in manifest (rank) order.
    pub words: Vec<u64>,
}

impl WgpuKernel {
    /// The entry's name.
    pub fn entry(&self) -> &str {
        &self.entry
    }

    /// Whether the kernel has a table buffer (`table` with records).
    pub fn has_table(&self) -> bool {
        self.table.is_some()
    }
}

impl WgpuDevice {
    /// The kernel of `request` loaded with the session's words: the one
    /// already loaded while anyone holds it, else a new one
    /// ([`Backend::load`](crate::Backend::load)).
    pub(super) fn load_kernel(
        &self,
        session: &Session,
        request: &LoadRequest<'_>,
    ) -> Result<Arc<WgpuKernel>, ProgramError> {
        let LoadRequest { artifact, validated, .. } = *request;
        load_once(&self.loaded, self.device_id(), session, artifact, || self.load_new(session, artifact, validated))
    }

    /// Loads a WGSL artifact on this device with its words delivered (see
    /// the module docs), validating it first unless `validated` says the
    /// kernel cache did: a new kernel, not kept in the map of loaded ones
    /// ([`Backend::load`](crate::Backend::load) is the way in).
    fn load_new(
        &self,
        session: &Session,
        artifact: &Artifact,
        validated: Validated,
    ) -> Result<WgpuKernel, ProgramError> {
        if artifact.target != CodeTarget::Wgsl {
            return Err(driver("load", format!("artifact for {}, not WGSL", artifact.target.name())).into());
        }
        if artifact.strategy == Strategy::Patch {
            return Err(driver("load", "patching is impossible on wgpu; use table or bake").into());
        }
        let started = std::time::Instant::now();
        if validated == Validated::No {
            artifact.validate()?;
        }
        // The kernel's storage buffers against this adapter's limit (the
        // device asked for the adapter's own), before anything reaches the
        // device: an error naming the kernel and the count, not wgpu's
        // bind group layout error.
        let params = artifact.param_types()?;
        let buffers = params.iter().filter(|t| matches!(t, Type::Ptr(..))).count();
        let limit_of = format!("this adapter ({}, {})", self.info.name, self.info.backend.to_str());
        let limit = self.limits.max_storage_buffers_per_shader_stage;
        relok_compiler::wgsl::limits::check_storage_buffers(&artifact.entry, buffers, limit, &limit_of)
            .map_err(|e| ProgramError::Compile(e.into()))?;
        const {
            assert!(
                ::wgpu::Limits::defaults().max_storage_buffers_per_shader_stage
                    == relok_compiler::wgsl::limits::WEBGPU_DEFAULT
            )
        };
        let words = deliver_words(session, self, &artifact.values, &artifact.manifest)?;
        let resolved = started.elapsed();
        let code =
            std::str::from_utf8(&artifact.code).map_err(|e| driver("load", format!("WGSL is not UTF-8: {e}")))?;
        let module = self.scoped("createShaderModule", || {
            self.device.create_shader_module(::wgpu::ShaderModuleDescriptor {
                label: Some(&artifact.entry),
                source: ::wgpu::ShaderSource::Wgsl(code.into()),
            })
        })?;
        self.stats.modules.fetch_add(1, Ordering::Relaxed);
        let moduled = started.elapsed();
        let layouts = self.layouts(buffers)?;
        let table = match artifact.strategy {
            Strategy::Table if !words.is_empty() => {
                let bytes = crate::backend::table_bytes(&words);
                let t = self.buffer(
                    "relok table",
                    bytes.len() as u64,
                    ::wgpu::BufferUsages::STORAGE | ::wgpu::BufferUsages::COPY_DST,
                )?;
                self.queue.write_buffer(&t, 0, &bytes);
                Some(TableBuffer::new(t, &self.tables))
            }
            _ => None,
        };
        tracing::debug!(
            "wgpu load of @{}: words {:?}, shader module {:?}, layouts and buffers {:?}",
            artifact.entry,
            resolved,
            moduled - resolved,
            started.elapsed() - moduled
        );
        Ok(WgpuKernel {
            entry: artifact.entry.clone(),
            device: self.id,
            params,
            lens: if artifact.compile_options().is_some_and(|o| o.checked) {
                artifact.len_params()?
            } else {
                Vec::new()
            },
            block: artifact.abi.block,
            module,
            layouts,
            table,
            pipelines: Mutex::default(),
            serial: NEXT_KERNEL.fetch_add(1, Ordering::Relaxed),
            alive: Arc::new(()),
            words,
        })
    }

    /// The layouts of kernels with `buffers` buffer parameters.
    fn layouts(&self, buffers: usize) -> Result<Arc<Layouts>, DeviceError> {
        if let Some(l) = lock(&self.layouts).get(&buffers) {
            return Ok(Arc::clone(l));
        }
        // Exactly the bindings the WGSL declares.
        let entries: Vec<::wgpu::BindGroupLayoutEntry> = bindings::bindings(buffers)
            .iter()
            .map(|b| ::wgpu::BindGroupLayoutEntry {
                binding: b.binding,
                visibility: ::wgpu::ShaderStages::COMPUTE,
                ty: ::wgpu::BindingType::Buffer {
                    ty: ::wgpu::BufferBindingType::Storage { read_only: b.read_only },
                    // Each launch's arguments are at their own offset of the
                    // batch's buffer: one bind group serves a whole batch.
                    has_dynamic_offset: b.binding == bindings::ARGS,
                    min_binding_size: None,
                },
                count: None,
            })
            .collect();
        let l = self.scoped("createPipelineLayout", || {
            let group = self.device.create_bind_group_layout(&::wgpu::BindGroupLayoutDescriptor {
                label: Some("relok"),
                entries: &entries,
            });
            let pipeline = self.device.create_pipeline_layout(&::wgpu::PipelineLayoutDescriptor {
                label: Some("relok"),
                bind_group_layouts: &[Some(&group)],
                immediate_size: 0,
            });
            Layouts { group, pipeline }
        })?;
        let l = Arc::new(l);
        Ok(Arc::clone(lock(&self.layouts).entry(buffers).or_insert(l)))
    }

    /// The kernel's pipeline for `block`, made (through the pipeline cache)
    /// on first use.
    pub(super) fn pipeline(
        &self,
        kernel: &WgpuKernel,
        block: [u32; 3],
    ) -> Result<::wgpu::ComputePipeline, DeviceError> {
        if let Some(p) = lock(&kernel.pipelines).get(&block) {
            return Ok(p.clone());
        }
        let constants = [
            ("relok_block_x", f64::from(block[0])),
            ("relok_block_y", f64::from(block[1])),
            ("relok_block_z", f64::from(block[2])),
            (relok_compiler::wgsl::LOOP_BUDGET_OVERRIDE, f64::from(self.loop_limit().unwrap_or(u32::MAX))),
        ];
        let entry_point = relok_compiler::wgsl::entry_point(&kernel.entry);
        let p = self.scoped("createComputePipeline", || {
            self.device.create_compute_pipeline(&::wgpu::ComputePipelineDescriptor {
                label: Some(&kernel.entry),
                layout: Some(&kernel.layouts.pipeline),
                module: &kernel.module,
                entry_point: Some(&entry_point),
                compilation_options: ::wgpu::PipelineCompilationOptions {
                    constants: &constants,
                    zero_initialize_workgroup_memory: true,
                },
                cache: self.pipeline_cache.as_ref(),
            })
        })?;
        self.stats.pipelines.fetch_add(1, Ordering::Relaxed);
        self.stats.cache_dirty.store(true, Ordering::Relaxed);
        lock(&kernel.pipelines).insert(block, p.clone());
        Ok(p)
    }
}
