//! What the facade's device tests share: a message that is always shown,
//! one test at a time on the GPUs, and the contexts to test.

#![allow(dead_code, reason = "each test binary uses part of it")]

use relok::{Context, Error, Strategy};

/// A message that reaches the terminal even when the test passes (libtest
/// captures `eprintln!`): what was skipped is always said.
pub fn note(msg: &str) {
    let _ = std::io::Write::write_all(&mut std::io::stderr(), format!("note: {msg}\n").as_bytes());
}

/// Held by every test: one test at a time uses the GPUs. On NVIDIA's
/// Vulkan driver (580), several wgpu devices driven from concurrent threads
/// of one process hung (docs/wgpu.md, "Known problems"); one at a time they
/// pass.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Takes the GPUs for the calling test.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The contexts to test under `strategy`, the cpu device first
/// (`RELOK_TEST_DEVICES=wgpu`, `=cuda` or `=cuda,wgpu` narrows the GPUs
/// tried; see [`gpu_context`] for each).
pub fn contexts(strategy: Strategy) -> Vec<Context> {
    let mut out = vec![Context::builder().device("cpu").strategy(strategy).no_cache().build().expect("cpu opens")];
    let wanted = std::env::var("RELOK_TEST_DEVICES").unwrap_or_else(|_| "cuda,wgpu".to_owned());
    for spec in ["wgpu", "cuda"] {
        if !wanted.split(',').any(|w| w.trim() == spec) {
            note(&format!("skipping the {spec} device: not in RELOK_TEST_DEVICES={wanted}"));
            continue;
        }
        out.extend(gpu_context(spec, strategy));
    }
    out
}

/// A context on GPU device `spec` (`wgpu` or `cuda`) under `strategy`, or
/// `None`, said on stderr, when there is none or it does not offer the
/// strategy; `RELOK_REQUIRE_WGPU=1` / `RELOK_REQUIRE_CUDA=1` make a missing
/// one a failure.
pub fn gpu_context(spec: &str, strategy: Strategy) -> Option<Context> {
    let required = std::env::var(format!("RELOK_REQUIRE_{}", spec.to_uppercase())).is_ok_and(|v| v == "1");
    match Context::builder().device(spec).strategy(strategy).no_cache().build() {
        Ok(ctx) => Some(ctx),
        Err(Error::Compile(relok_runtime::ProgramError::Unsupported { .. })) => {
            note(&format!("skipping the {spec} device under {strategy}: it does not offer that strategy"));
            None
        }
        Err(e) if required => panic!("{spec} is required here: {e}"),
        Err(e) => {
            note(&format!("skipping the {spec} device: {e}"));
            None
        }
    }
}
