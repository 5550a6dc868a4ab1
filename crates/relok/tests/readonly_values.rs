//! Host values are read-only to kernels (issue 16, item 4): a kernel that
//! writes into a constant equal to `examples/reloc/lookup.rk`'s table (the
//! same host value: values are shared per device by content) faults, and
//! `lookup` reads its table unchanged afterwards — on the cpu device (its
//! copy is sealed), on wgpu (the WGSL checks heap writes against the
//! seal bitmap; lavapipe in CI, `RELOK_REQUIRE_WGPU=1` makes its absence a
//! failure) and on cuda (checked PTX checks writes through a word against
//! the device's seal table; where a GPU is present, `RELOK_REQUIRE_CUDA=1`
//! makes its absence a failure).

mod common;

use common::gpu_context;
use relok::{Context, Grid, Program, Strategy};

/// `@smash` writes 999 into element 5 of a constant whose bytes equal
/// lookup's table.
fn smash_source(lookup: &str) -> String {
    let table = lookup.lines().find(|l| l.starts_with("const @table")).expect("lookup.rk declares @table");
    format!(
        "{table}\n\nkernel @smash(v0: u32) {{\n    v1: word = ref @table\n    v2: ptr<global, u32> = wordptr v1\n    v3: u32 = const 5\n    v4: u32 = const 999\n    store v2[v3], v4\n    return\n}}\n"
    )
}

#[test]
fn a_kernel_cannot_change_the_table_another_kernel_reads_on_cpu() {
    table_survives(&Context::cpu());
}

#[test]
fn a_kernel_cannot_change_the_table_another_kernel_reads_on_wgpu() {
    if let Some(ctx) = gpu_context("wgpu", Strategy::Table) {
        table_survives(&ctx);
    }
}

#[test]
fn a_kernel_cannot_change_the_table_another_kernel_reads_on_cuda() {
    if let Some(ctx) = gpu_context("cuda", Strategy::Table) {
        table_survives(&ctx);
    }
}

fn table_survives(ctx: &Context) {
    let path = common::repo().join("examples/reloc/lookup.rk");
    let lookup_src = std::fs::read_to_string(path).expect("examples/reloc/lookup.rk");
    let lookup = ctx.kernel(&Program::parse(&lookup_src).expect("parses"), "lookup").expect("lookup");
    let smash = ctx.kernel(&Program::parse(&smash_source(&lookup_src)).expect("parses"), "smash").expect("smash");
    let run_lookup = || {
        let x = ctx.upload(&(0u32..8).collect::<Vec<_>>()).expect("upload");
        let mut out = ctx.zeros::<u32>(8).expect("zeros");
        let stream = ctx.stream();
        lookup.launch(&stream, Grid::cover(8, 8), (8u32, &x, &mut out)).expect("enqueue");
        stream.synchronize().expect("lookup runs");
        out.download().expect("download")
    };
    let before = run_lookup();
    assert_eq!(before, [3, 10, 31, 66, 115, 178, 255, 346]);
    let stream = ctx.stream();
    let result = smash.launch(&stream, Grid::cover(1, 1), (0u32,)).and_then(|()| stream.synchronize());
    let err = result.expect_err("a write into a host value faults");
    assert!(
        err.to_string().contains("write to read-only memory (a constant or a host value)"),
        "{} : {err}",
        ctx.device_name()
    );
    assert_eq!(run_lookup(), before, "lookup's table changed under it on {}", ctx.device_name());
}
