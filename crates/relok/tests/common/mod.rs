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
/// tried; `RELOK_REQUIRE_WGPU=1` / `RELOK_REQUIRE_CUDA=1` make a missing one
/// a failure; a device without the strategy is skipped, said on stderr).
pub fn contexts(strategy: Strategy) -> Vec<Context> {
    let mut out = vec![Context::builder().device("cpu").strategy(strategy).no_cache().build().expect("cpu opens")];
    let wanted = std::env::var("RELOK_TEST_DEVICES").unwrap_or_else(|_| "cuda,wgpu".to_owned());
    let required = |var: &str| std::env::var(var).is_ok_and(|v| v == "1");
    for (spec, required) in [("wgpu", required("RELOK_REQUIRE_WGPU")), ("cuda", required("RELOK_REQUIRE_CUDA"))] {
        if !wanted.split(',').any(|w| w.trim() == spec) {
            note(&format!("skipping the {spec} device: not in RELOK_TEST_DEVICES={wanted}"));
            continue;
        }
        match Context::builder().device(spec).strategy(strategy).no_cache().build() {
            Ok(ctx) => out.push(ctx),
            Err(Error::Compile(relok_runtime::ProgramError::Unsupported { .. })) => {
                note(&format!("skipping the {spec} device under {strategy}: it does not offer that strategy"));
            }
            Err(e) if required => panic!("{spec} is required here: {e}"),
            Err(e) => note(&format!("skipping the {spec} device: {e}")),
        }
    }
    out
}
