//! Metal and DX12 without a Mac or a Windows machine (docs/wgpu.md, "Metal
//! and DX12"): every kernel the WGSL backend writes — every example and
//! every `test run` / `test roundtrip` file test, under table and bake — is
//! taken the way wgpu 30 takes it to those targets: wgpu-core parses and
//! validates the WGSL, then wgpu-hal, when it makes the compute pipeline,
//! sets the block-size overrides and writes MSL (Metal) or HLSL (DX12) with
//! naga. The options below are wgpu-hal 30.0.2's (`metal/device.rs`:
//! `create_pipeline_layout`, `load_shader`; `dx12/device.rs`:
//! `create_pipeline_layout`, `load_shader`; `dx12/adapter.rs`: the shader
//! model), applied to the bind group layout the wgpu device makes from
//! `relok_compiler::wgsl::bindings`. Any error fails the test; a few outputs
//! are committed under `tests/out/msl/` and `tests/out/hlsl/` (`BLESS=1`
//! rewrites them).
//!
//! What this cannot check: Apple's Metal compiler and DXC/FXC, which
//! compile these texts on the user's machine.

use naga::back::{hlsl, msl};
use relok_compiler::CompileError;
use relok_compiler::artifact::{CodeTarget, CompileOptions, compile};
use relok_compiler::stencil::Stencil;
use relok_compiler::wgsl::{bindings, limits};
use relok_ir::Strategy;
use sha2::{Digest, Sha256};

mod common;
use common::{fake_word, inputs, repo};

/// The block shape the pipelines are made for (the device makes one per
/// launch shape; the shape only sets the overrides).
const BLOCK: [(&str, f64); 3] = [("relok_block_x", 64.0), ("relok_block_y", 2.0), ("relok_block_z", 1.0)];

/// Every MSL version wgpu-hal's Metal backend picks, by OS (macOS 10.11 →
/// 1.1 … macOS 15 → 3.2, macOS 26 → 4.0; 1.0 before).
const MSL_VERSIONS: [(u8, u8); 12] =
    [(1, 0), (1, 1), (1, 2), (2, 0), (2, 1), (2, 2), (2, 3), (2, 4), (3, 0), (3, 1), (3, 2), (4, 0)];

/// Every HLSL shader model wgpu-hal's DX12 backend picks: 5.1 with FXC
/// (what wgpu's default `Dx12Compiler::Auto` falls back to without
/// `dxcompiler.dll`), 6.0–6.9 with DXC (the lower of the device's and
/// DXC's highest).
const SHADER_MODELS: [hlsl::ShaderModel; 11] = [
    hlsl::ShaderModel::V5_1,
    hlsl::ShaderModel::V6_0,
    hlsl::ShaderModel::V6_1,
    hlsl::ShaderModel::V6_2,
    hlsl::ShaderModel::V6_3,
    hlsl::ShaderModel::V6_4,
    hlsl::ShaderModel::V6_5,
    hlsl::ShaderModel::V6_6,
    hlsl::ShaderModel::V6_7,
    hlsl::ShaderModel::V6_8,
    hlsl::ShaderModel::V6_9,
];

/// The versions the committed snapshots are written for: MSL 3.2 (macOS
/// 15), shader model 5.1 (FXC, wgpu's default without DXC).
const SNAPSHOT_MSL: (u8, u8) = (3, 2);
const SNAPSHOT_SM: hlsl::ShaderModel = hlsl::ShaderModel::V5_1;

/// A message that reaches the terminal even when the test passes (libtest
/// hides a passing test's `eprintln!`).
fn note(msg: &str) {
    let _ = std::io::Write::write_all(&mut std::io::stderr(), format!("note: {msg}\n").as_bytes());
}

/// A kernel as the WGSL backend wrote it.
struct Written {
    /// `file @kernel strategy`.
    name: String,
    /// The compute entry point.
    entry: String,
    /// Its buffer parameters.
    buffers: usize,
    wgsl: String,
}

/// Every kernel of every input under table and bake: those written, and
/// those the WGSL backend refuses (by name).
fn written() -> (Vec<Written>, Vec<String>) {
    let (mut out, mut refused) = (Vec::new(), Vec::new());
    for (file, m) in inputs() {
        for (_, k) in m.kernels() {
            let stencil = Stencil::new(&m, &k.name).expect("stencil");
            let buffers = k.params.iter().filter(|&&p| matches!(k.values[p].ty, relok_ir::Type::Ptr(..))).count();
            for s in [Strategy::Table, Strategy::Bake] {
                let words: Option<relok_compiler::lower::WordResolver<'_>> =
                    if s == Strategy::Bake { Some(&fake_word) } else { None };
                let name = format!("{file} @{} {s}", k.name);
                match compile(&stencil, CodeTarget::Wgsl, s, CompileOptions::default(), words) {
                    Ok(a) => out.push(Written {
                        name,
                        entry: a.entry.clone(),
                        buffers,
                        wgsl: String::from_utf8(a.code).expect("UTF-8"),
                    }),
                    Err(CompileError::Wgsl(e)) => {
                        assert!(e.to_string().contains("is not supported by the WGSL backend"), "{name}: {e}");
                        refused.push(format!("{name}: {e}"));
                    }
                    // Over a memory limit every target enforces.
                    Err(CompileError::MemoryLimit(e)) => refused.push(format!("{name}: {e}")),
                    Err(e) => panic!("{name}: {e}"),
                }
            }
        }
    }
    (out, refused)
}

/// What wgpu-core does with the WGSL (parse; validate with every flag and,
/// as relok asks for no shader feature, no capability), then what
/// wgpu-hal does first when it makes the pipeline: the overrides processed
/// for the entry point.
fn prepare(wgsl: &str, entry: &str) -> Result<(naga::Module, naga::valid::ModuleInfo), String> {
    let entry = &relok_compiler::wgsl::entry_point(entry);
    let module = naga::front::wgsl::parse_str(wgsl).map_err(|e| e.emit_to_string(wgsl))?;
    let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::empty())
        .validate(&module)
        .map_err(|e| format!("{e:?}"))?;
    let constants: naga::back::PipelineConstants = BLOCK.iter().map(|&(k, v)| (k.to_owned(), v)).collect();
    let (m, i) = naga::back::pipeline_constants::process_overrides(
        &module,
        &info,
        Some((naga::ShaderStage::Compute, entry)),
        &constants,
    )
    .map_err(|e| format!("pipeline constants: {e:?}"))?;
    Ok((m.into_owned(), i.into_owned()))
}

/// wgpu's runtime checks for a module made with `create_shader_module`
/// (`ShaderRuntimeChecks::checked()`): bounds checks, loop bounding,
/// integer division checks all on.
const CHECKED: bool = true;

/// wgpu-hal's Metal `create_pipeline_layout` for relok's one bind group:
/// each storage buffer takes the next buffer slot in binding order
/// (writable unless read-only), no immediates, then the sizes buffer
/// (relok's bindings are runtime-sized arrays).
fn msl_resources(buffers: usize) -> msl::EntryPointResources {
    let mut resources = msl::BindingMap::default();
    let mut slot = 0u8;
    for b in bindings::bindings(buffers) {
        let target = msl::BindTarget { buffer: Some(slot), mutable: !b.read_only, ..Default::default() };
        resources.insert(naga::ResourceBinding { group: bindings::GROUP, binding: b.binding }, target);
        slot += 1;
    }
    msl::EntryPointResources { resources, immediates_buffer: None, sizes_buffer: Some(slot) }
}

/// wgpu-hal's Metal `load_shader` options for entry `entry`.
fn msl_options(
    entry: &str,
    resources: msl::EntryPointResources,
    lang_version: (u8, u8),
) -> (msl::Options, msl::PipelineOptions) {
    let entry = &relok_compiler::wgsl::entry_point(entry);
    let policy =
        if CHECKED { naga::proc::BoundsCheckPolicy::Restrict } else { naga::proc::BoundsCheckPolicy::Unchecked };
    let options = msl::Options {
        lang_version,
        inline_samplers: Vec::new(),
        spirv_cross_compatibility: false,
        fake_missing_bindings: false,
        per_entry_point_map: msl::EntryPointResourceMap::from([(entry.to_owned(), resources)]),
        bounds_check_policies: naga::proc::BoundsCheckPolicies {
            index: policy,
            buffer: policy,
            image_load: policy,
            binding_array: naga::proc::BoundsCheckPolicy::Unchecked,
        },
        // The wgpu device asks for zero-initialised workgroup memory.
        zero_initialize_workgroup_memory: true,
        force_loop_bounding: CHECKED,
        // wgpu's defaults; only task shaders read them.
        task_dispatch_limits: Some(naga::back::TaskDispatchLimits {
            max_mesh_workgroups_per_dim: 0,
            max_mesh_workgroups_total: 0,
        }),
        mesh_shader_primitive_indices_clamp: CHECKED,
        emit_int_div_checks: CHECKED,
        ray_query_initialization_tracking: CHECKED,
    };
    let pipeline = msl::PipelineOptions {
        entry_point: Some((naga::ShaderStage::Compute, entry.to_owned())),
        allow_and_force_point_size: false,
        vertex_pulling_transform: true,
        vertex_buffer_mappings: Vec::new(),
        // Only binding arrays (a layout entry with a count) are in it.
        binding_array_length_map: Default::default(),
    };
    (options, pipeline)
}

/// The MSL wgpu writes for `entry` of `module`, and the Metal function's
/// name.
fn to_msl(
    module: &naga::Module,
    info: &naga::valid::ModuleInfo,
    entry: &str,
    resources: msl::EntryPointResources,
    lang: (u8, u8),
) -> Result<(String, String), String> {
    let (options, pipeline) = msl_options(entry, resources, lang);
    let (text, ti) =
        msl::write_string(module, info, &options, &pipeline).map_err(|e| format!("MSL {lang:?}: {e:?}"))?;
    let name = ti
        .entry_point_names
        .first()
        .cloned()
        .ok_or("MSL: no entry point")?
        .map_err(|e| format!("MSL {lang:?}: {e}"))?;
    Ok((text, name))
}

/// wgpu-hal's DX12 `create_pipeline_layout` for relok's one bind group, in
/// binding order: a read-only storage buffer is the next SRV (`t`), a
/// writable one the next UAV (`u`); the arguments binding, the one with a
/// dynamic offset, takes index 0 of the root constants that carry the
/// offsets (`b0`); then the special constants (`b1`: wgpu-core always
/// asks for them: number of workgroups, first vertex/instance). No
/// immediates, no samplers.
fn hlsl_options(buffers: usize, shader_model: hlsl::ShaderModel) -> hlsl::Options {
    let (mut srv, mut uav, mut cbv) =
        (hlsl::BindTarget::default(), hlsl::BindTarget::default(), hlsl::BindTarget::default());
    let mut binding_map = hlsl::BindingMap::default();
    let mut dynamic = 0;
    for b in bindings::bindings(buffers) {
        let bt = if b.read_only { &mut srv } else { &mut uav };
        let dynamic_storage_buffer_offsets_index = (b.binding == bindings::ARGS).then(|| {
            dynamic += 1;
            dynamic - 1
        });
        binding_map.insert(
            naga::ResourceBinding { group: bindings::GROUP, binding: b.binding },
            hlsl::BindTarget { binding_array_size: None, dynamic_storage_buffer_offsets_index, ..*bt },
        );
        bt.register += 1;
    }
    let mut dynamic_storage_buffer_offsets_targets = hlsl::DynamicStorageBufferOffsetsTargets::new();
    dynamic_storage_buffer_offsets_targets
        .insert(bindings::GROUP, hlsl::OffsetsBindTarget { space: cbv.space, register: cbv.register, size: dynamic });
    cbv.register += 1;
    let sampler = |register| hlsl::BindTarget {
        space: 0,
        register,
        binding_array_size: None,
        dynamic_storage_buffer_offsets_index: None,
        restrict_indexing: false,
    };
    hlsl::Options {
        shader_model,
        binding_map,
        fake_missing_bindings: false,
        special_constants_binding: Some(cbv),
        immediates_target: None,
        dynamic_storage_buffer_offsets_targets,
        zero_initialize_workgroup_memory: true,
        restrict_indexing: CHECKED,
        sampler_heap_target: hlsl::SamplerHeapBindTargets {
            standard_samplers: sampler(0),
            comparison_samplers: sampler(2048),
        },
        sampler_buffer_binding_map: hlsl::SamplerIndexBufferBindingMap::default(),
        external_texture_binding_map: hlsl::ExternalTextureBindingMap::default(),
        force_loop_bounding: CHECKED,
        task_dispatch_limits: Some(naga::back::TaskDispatchLimits {
            max_mesh_workgroups_per_dim: 0,
            max_mesh_workgroups_total: 0,
        }),
        mesh_shader_primitive_indices_clamp: true,
        ray_query_initialization_tracking: true,
    }
}

/// The HLSL wgpu writes for `entry` of `module`, and the entry's name.
fn to_hlsl(
    module: &naga::Module,
    info: &naga::valid::ModuleInfo,
    entry: &str,
    options: &hlsl::Options,
) -> Result<(String, String), String> {
    let entry = &relok_compiler::wgsl::entry_point(entry);
    let pipeline = hlsl::PipelineOptions { entry_point: Some((naga::ShaderStage::Compute, entry.to_owned())) };
    let mut text = String::new();
    let mut w = hlsl::Writer::new(&mut text, options, &pipeline);
    let mut ri = w.write(module, info, None).map_err(|e| format!("HLSL {:?}: {e:?}", options.shader_model))?;
    assert_eq!(ri.entry_point_names.len(), 1, "wgpu-hal asserts one entry point");
    let name = ri.entry_point_names.pop().expect("one").map_err(|e| format!("HLSL {:?}: {e}", options.shader_model))?;
    Ok((text, name))
}

/// The bindings whose variables entry `entry` uses (naga writes only
/// those), as wgpu-hal reads them from the module info.
fn used_bindings(module: &naga::Module, info: &naga::valid::ModuleInfo, entry: &str) -> Vec<u32> {
    let entry = &relok_compiler::wgsl::entry_point(entry);
    let ep = module.entry_points.iter().position(|e| e.name == *entry).expect("the entry point");
    let uses = info.get_entry_point(ep);
    module
        .global_variables
        .iter()
        .filter(|(h, _)| !uses[*h].is_empty())
        .filter_map(|(_, v)| v.binding.map(|b| b.binding))
        .collect()
}

/// `(variable, slot)` of every resource declared in `text`: the word
/// before `marker` on a line, and what follows it up to `)` or `,`.
/// naga's namer appends `_` to a name ending in a digit (`p0` → `p0_`).
fn declared(text: &str, marker: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| {
            let (head, tail) = l.split_once(marker)?;
            let name = head.split_whitespace().last()?.trim_end_matches('_').to_owned();
            let slot = tail.split([')', ',']).next()?.to_owned();
            Some((name, slot))
        })
        .collect()
}

/// Every translation of one kernel, checked: MSL for every version, HLSL
/// for every shader model; each names the entry and declares exactly the
/// bindings the entry uses, each where wgpu-hal's layout puts it. Returns
/// the snapshot versions' texts.
fn translate(k: &Written) -> Result<(String, String), String> {
    let (module, info) = prepare(&k.wgsl, &k.entry)?;
    let count = bindings::binding_count(k.buffers);
    let all = bindings::bindings(k.buffers);
    let used: Vec<&bindings::Binding> = {
        let u = used_bindings(&module, &info, &k.entry);
        all.iter().filter(|b| u.contains(&b.binding)).collect()
    };
    if used.is_empty() {
        return Err("the entry uses no binding".into());
    }
    let sorted = |mut v: Vec<(String, String)>| {
        v.sort();
        v
    };
    // Metal: binding i in buffer slot i, then the sizes of the
    // runtime-sized ones (all but the exception record) in the next slot.
    let mut want_msl: Vec<(String, String)> = used.iter().map(|b| (b.var.to_string(), b.binding.to_string())).collect();
    if used.iter().any(|b| b.binding != bindings::EXCEPTION) {
        want_msl.push(("_buffer_sizes".into(), count.to_string()));
    }
    let want_msl = sorted(want_msl);
    if count >= limits::METAL_BUFFER_SLOTS {
        return Err(format!("the sizes buffer in slot {count}, past Metal's {}", limits::METAL_BUFFER_SLOTS));
    }
    // DX12: read-only ones as SRVs t0.., the others as UAVs u0.., in
    // binding order.
    let register = |b: &bindings::Binding| {
        let (kind, ro) = if b.read_only { ("t", true) } else { ("u", false) };
        format!("{kind}{}", all.iter().take_while(|o| o.binding != b.binding).filter(|o| o.read_only == ro).count())
    };
    let want_hlsl = sorted(used.iter().map(|b| (b.var.to_string(), register(b))).collect());
    let mut snapshot = (String::new(), String::new());
    for lang in MSL_VERSIONS {
        let (text, name) = to_msl(&module, &info, &k.entry, msl_resources(k.buffers), lang)?;
        // wgpu-hal asks the library for the function naga names (`un_i32`
        // becomes `un_i32_`: names ending in a digit get a `_`).
        if name.trim_end_matches('_') != relok_compiler::wgsl::entry_point(&k.entry)
            || !text.contains(&format!("kernel void {name}("))
        {
            return Err(format!("MSL {lang:?}: no Metal function `{name}` for `{}`", k.entry));
        }
        let got = sorted(declared(&text, " [[buffer("));
        if got != want_msl {
            return Err(format!("MSL {lang:?}: buffers {got:?}, expected {want_msl:?}"));
        }
        if lang == SNAPSHOT_MSL {
            snapshot.0 = text;
        }
    }
    for sm in SHADER_MODELS {
        let options = hlsl_options(k.buffers, sm);
        let (text, name) = to_hlsl(&module, &info, &k.entry, &options)?;
        if name.trim_end_matches('_') != relok_compiler::wgsl::entry_point(&k.entry)
            || !text.contains(&format!("void {name}("))
        {
            return Err(format!("HLSL {sm:?}: no entry function `{name}` for `{}`", k.entry));
        }
        let got = sorted(declared(&text, " : register("));
        if got != want_hlsl {
            return Err(format!("HLSL {sm:?}: registers {got:?}, expected {want_hlsl:?}"));
        }
        // The arguments' dynamic offset in b0, the special constants
        // (where `num_workgroups` is read from: without them naga would
        // read SV_GroupID) in b1; the block shape.
        if !text.contains("__dynamic_buffer_offsets0: register(b0, space0)")
            || !text.contains("_NagaConstants: register(b1)")
        {
            return Err(format!("HLSL {sm:?}: the constant buffers are not b0 (offsets) and b1 (special constants)"));
        }
        // The overrides' shape, or the kernel's own (`block(x, y, z)`).
        let shape = k.wgsl.split_once("@workgroup_size(").and_then(|(_, rest)| rest.split_once(')')).map(|(s, _)| s);
        let threads = match shape {
            Some(s) if !s.starts_with("relok_block") => format!("[numthreads({s})]"),
            _ => "[numthreads(64, 2, 1)]".to_owned(),
        };
        if !text.contains(&threads) {
            return Err(format!("HLSL {sm:?}: not {threads}"));
        }
        if sm == SNAPSHOT_SM {
            snapshot.1 = text;
        }
    }
    Ok(snapshot)
}

#[test]
fn every_written_kernel_translates_to_msl_and_hlsl() {
    let (all, refused) = written();
    let mut failed = Vec::new();
    for k in &all {
        match translate(k) {
            Ok((msl, hlsl)) => {
                // Byte-stable within a process (a fresh parse, fresh writers).
                assert_eq!(translate(k).as_ref().ok(), Some(&(msl, hlsl)), "{}: not byte-stable", k.name);
            }
            Err(e) => failed.push(format!("{}: {e}", k.name)),
        }
    }
    assert!(failed.is_empty(), "{} of {} kernels failed:\n{}", failed.len(), all.len(), failed.join("\n"));
    // The inputs are there, and every kernel is either written or refused
    // by name (tests/wgsl.rs pins which).
    let kernels: usize = inputs().iter().map(|(_, m)| m.kernels().count()).sum();
    assert!(all.len() >= 100, "only {} kernels written", all.len());
    assert_eq!(all.len() + refused.len(), 2 * kernels);
    let table = all.iter().filter(|k| k.name.ends_with(" table")).count();
    note(&format!(
        "{} kernels x (table, bake) = {}: {} written and translated ({table} table, {} bake) to MSL {} versions and HLSL {} shader models; {} refused by the WGSL backend:\n  {}",
        kernels,
        2 * kernels,
        all.len(),
        all.len() - table,
        MSL_VERSIONS.len(),
        SHADER_MODELS.len(),
        refused.len(),
        refused.join("\n  ")
    ));
}

/// Every written kernel fits Metal's and wgpu's limits on storage buffers;
/// those past WebGPU's default are listed (the device asks for its
/// adapter's own limits, so they run wherever the adapter allows them).
#[test]
fn every_written_kernel_fits_metal() {
    let (all, _) = written();
    let mut past_default = Vec::new();
    for k in &all {
        limits::check_storage_buffers(&k.entry, k.buffers, limits::METAL, "Metal")
            .unwrap_or_else(|e| panic!("{}: {e}", k.name));
        assert_eq!(limits::storage_buffers(k.buffers), u64::from(bindings::binding_count(k.buffers)), "{}", k.name);
        if limits::check_storage_buffers(&k.entry, k.buffers, limits::WEBGPU_DEFAULT, "wgpu's defaults").is_err() {
            past_default.push(format!("{} ({} buffers)", k.name, k.buffers));
        }
    }
    note(&format!("past WebGPU's default of {} storage buffers: {past_default:?}", limits::WEBGPU_DEFAULT));
}

/// A kernel with `buffers` buffer parameters, each stored to.
fn wide_kernel(buffers: usize) -> Written {
    let params: Vec<String> = (0..buffers).map(|i| format!("v{i}: ptr<global, u32>")).collect();
    let stores: String = (0..buffers).map(|i| format!("    store v{i}[v{buffers}], v{buffers}\n")).collect();
    let src =
        format!("kernel @wide({}) {{\n    v{buffers}: u32 = thread_id.x\n{stores}    return\n}}\n", params.join(", "));
    let m = relok_ir::VerifiedModule::new(relok_ir::parse(&src).unwrap_or_else(|e| panic!("{e}\n{src}")))
        .expect("verifies");
    relok_ir::verify(&m).unwrap_or_else(|e| panic!("{e}\n{src}"));
    let stencil = Stencil::new(&m, "wide").expect("stencil");
    let a = compile(&stencil, CodeTarget::Wgsl, Strategy::Table, CompileOptions::default(), None)
        .expect("no count is refused when compiling");
    Written {
        name: format!("@wide, {buffers} buffers"),
        entry: a.entry,
        buffers,
        wgsl: String::from_utf8(a.code).expect("UTF-8"),
    }
}

/// At Metal's limit (25 buffer parameters, 29 storage buffers, the sizes
/// buffer in slot 29) a kernel translates; one more is written as WGSL (a
/// Vulkan adapter may take it) but fails the check the wgpu device makes
/// against a Metal adapter's limit, naming the kernel and the count.
#[test]
fn metals_limit_is_checked_by_count() {
    let most = limits::max_buffer_params(limits::METAL) as usize;
    let k = wide_kernel(most);
    translate(&k).unwrap_or_else(|e| panic!("{}: {e}", k.name));
    assert!(k.wgsl.contains(&format!("@binding({}) var<storage, read_write> p{}", limits::METAL - 1, most - 1)));
    limits::check_storage_buffers(&k.entry, k.buffers, limits::METAL, "Metal").expect("fits");
    let over = wide_kernel(most + 1);
    translate(&over).unwrap_or_else(|e| panic!("{}: {e}", over.name));
    let e = limits::check_storage_buffers(&over.entry, over.buffers, limits::METAL, "this adapter (Apple M2, metal)")
        .expect_err("over Metal's limit");
    assert!(e.to_string().starts_with("@wide binds 30 storage buffers (relok's 4 and 26 buffer parameters), more than the 29 per shader stage of this adapter (Apple M2, metal)"), "{e}");
}

/// The harness fails where wgpu would: a binding the layout does not map
/// is an error (wgpu never fakes missing bindings), so a kernel whose WGSL
/// and bindings disagreed would fail this test, not a user's Mac.
#[test]
fn a_binding_wgpu_does_not_map_fails() {
    let k = wide_kernel(2);
    let (module, info) = prepare(&k.wgsl, &k.entry).expect("valid");
    let p1 = naga::ResourceBinding { group: bindings::GROUP, binding: bindings::buffer_binding(1) };
    to_msl(&module, &info, &k.entry, msl_resources(1), SNAPSHOT_MSL).expect_err("a layout for one buffer");
    let mut resources = msl_resources(2);
    resources.resources.remove(&p1);
    to_msl(&module, &info, &k.entry, resources, SNAPSHOT_MSL).expect_err("p1 has no slot");
    to_msl(&module, &info, &k.entry, msl_resources(2), SNAPSHOT_MSL).expect("every binding has a slot");
    let mut options = hlsl_options(2, SNAPSHOT_SM);
    options.binding_map.remove(&p1);
    to_hlsl(&module, &info, &k.entry, &options).expect_err("p1 has no register");
    to_hlsl(&module, &info, &k.entry, &hlsl_options(2, SNAPSHOT_SM)).expect("every binding has a register");
}

/// The kernels whose MSL and HLSL are committed.
const SNAPSHOTS: [(&str, &str, Strategy); 3] = [
    ("examples/saxpy.rk", "saxpy", Strategy::Table),
    ("examples/reloc/symbols.rk", "classify", Strategy::Table),
    ("examples/reloc/boxed.rk", "unbox", Strategy::Bake),
];

fn snapshot(file: &str, kernel: &str, s: Strategy) -> (String, String) {
    let m = relok_ir::VerifiedModule::new(
        relok_ir::parse(&std::fs::read_to_string(repo().join(file)).expect("read")).expect("parses"),
    )
    .expect("verifies");
    let stencil = Stencil::new(&m, kernel).expect("stencil");
    let words: Option<relok_compiler::lower::WordResolver<'_>> =
        if s == Strategy::Bake { Some(&fake_word) } else { None };
    let a = compile(&stencil, CodeTarget::Wgsl, s, CompileOptions::default(), words).expect("compiles");
    let buffers = a.param_types().expect("params").iter().filter(|t| matches!(t, relok_ir::Type::Ptr(..))).count();
    let k = Written {
        name: format!("{kernel}-{s}"),
        entry: a.entry,
        buffers,
        wgsl: String::from_utf8(a.code).expect("UTF-8"),
    };
    translate(&k).unwrap_or_else(|e| panic!("{}: {e}", k.name))
}

/// Committed MSL and HLSL of a few kernels: any change to what wgpu would
/// hand Metal or DX12 shows up in review. `BLESS=1` rewrites them.
#[test]
fn expected_msl_and_hlsl_are_unchanged() {
    let bless = std::env::var_os("BLESS").is_some();
    let mut changed = Vec::new();
    for (file, kernel, s) in SNAPSHOTS {
        let (msl, hlsl) = snapshot(file, kernel, s);
        for (path, got) in
            [(format!("tests/out/msl/{kernel}-{s}.metal"), msl), (format!("tests/out/hlsl/{kernel}-{s}.hlsl"), hlsl)]
        {
            let path = repo().join(path);
            if bless {
                std::fs::create_dir_all(path.parent().expect("folder")).expect("mkdir");
                std::fs::write(&path, &got).expect("write");
                continue;
            }
            match std::fs::read_to_string(&path) {
                Ok(want) if want == got => {}
                _ => changed.push(path.display().to_string()),
            }
        }
    }
    assert!(changed.is_empty(), "MSL or HLSL changed (review, then run with BLESS=1): {changed:?}");
}

/// A digest of every kernel's MSL and HLSL at the snapshot versions.
fn digest() -> String {
    let (all, _) = written();
    let mut h = Sha256::new();
    for k in &all {
        let (msl, hlsl) = translate(k).unwrap_or_else(|e| panic!("{}: {e}", k.name));
        for t in [&k.name, &msl, &hlsl] {
            h.update((t.len() as u64).to_le_bytes());
            h.update(t.as_bytes());
        }
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

const DIGEST_VAR: &str = "RELOK_TEST_PRINT_DIGEST";

/// Byte-stable across processes: two fresh processes (this test binary
/// run again, with its own hash seeds and allocations) write every kernel's
/// MSL and HLSL with the same digest as this one.
#[test]
fn outputs_are_byte_stable_across_processes() {
    let here = digest();
    if std::env::var_os(DIGEST_VAR).is_some() {
        let _ = std::io::Write::write_all(&mut std::io::stdout(), format!("digest {here}\n").as_bytes());
        return;
    }
    for _ in 0..2 {
        let out = std::process::Command::new(std::env::current_exe().expect("test binary"))
            .args(["--exact", "outputs_are_byte_stable_across_processes", "--nocapture", "--test-threads", "1"])
            .env(DIGEST_VAR, "1")
            .output()
            .expect("runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let stdout = String::from_utf8_lossy(&out.stdout);
        let theirs = stdout
            .lines()
            .find_map(|l| l.split_once("digest ").map(|(_, d)| d.trim()))
            .unwrap_or_else(|| panic!("no digest in:\n{stdout}"));
        assert_eq!(theirs, here, "another process wrote other MSL or HLSL");
    }
}
