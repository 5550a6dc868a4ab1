//! `relok devices`: what `--device` can name on this machine — the cpu
//! device, each CUDA GPU, each wgpu adapter (narrowed by
//! `RELOK_WGPU_ADAPTER`) — and which one `best` picks
//! (`Device::best_spec`).

use serde::Serialize;

/// One device `--device` can name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Listed {
    /// What to pass to `--device`.
    pub spec: String,
    /// What it is.
    pub what: String,
    /// Whether `best` picks it.
    pub best: bool,
}

/// Every device of this machine, in `--device` order.
pub fn list() -> Vec<Listed> {
    let listed = |spec: String, what: String| Listed { spec, what, best: false };
    let mut out = vec![listed("cpu:0".into(), "the reference interpreter (cpu:N: more, each its own memory)".into())];
    #[cfg(feature = "cuda")]
    for n in 0..relok_runtime::cuda::device_count() {
        let what = relok_runtime::cuda::CudaDevice::open(n)
            .map_or_else(|e| format!("a CUDA GPU that does not open: {e}"), |d| format!("{}, sm_{}", d.name(), d.sm()));
        out.push(listed(format!("cuda:{n}"), what));
    }
    #[cfg(feature = "wgpu")]
    for a in relok_runtime::wgpu::list_adapters() {
        let kind = if a.hardware { "GPU" } else { "software" };
        out.push(listed(format!("wgpu:{}", a.ordinal), format!("{}, {}, {kind}", a.name, a.backend)));
    }
    let best = relok_runtime::Device::best_spec();
    for d in &mut out {
        d.best = d.spec == best;
    }
    out
}
