//! Precompiles the application's kernels into `$OUT_DIR/kernels.bundle`:
//! for the cpu device, wgpu (WGSL) and CUDA GPUs (PTX for sm_90), and —
//! when `ptxas` is found (`RELOK_PTXAS` or the PATH) — cubins for sm_90, so
//! an H100/H200 loads machine code from the binary and compiles nothing.

fn main() -> Result<(), relok_build::BuildError> {
    let ptxas = relok_build::find_ptxas().is_some();
    let mut kernels = relok_build::Precompile::new()
        .file("../../examples/bench/scale.rk")
        .target(relok_build::CodeTarget::Cpu)
        .target(relok_build::CodeTarget::Wgsl)
        .target(relok_build::CodeTarget::Ptx { sm: 90 });
    if ptxas {
        kernels = kernels.cubin(90);
    }
    kernels.write_to_out_dir("kernels.bundle")?;
    Ok(())
}
