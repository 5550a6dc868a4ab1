//! Every example kernel runs on the cpu device and matches its Rust
//! reference; every example file is in canonical form.

use relok_runtime::KernelCache;
use relok_cli::demo::run_example;
use relok_cli::examples::EXAMPLES;
use relok_cli::launch::Target;
use relok_ir::Strategy;
use relok_runtime::cpu::CpuDevice;
use relok_runtime::{Device, Session};

#[test]
fn examples_match_their_rust_reference() {
    let device = Device::Cpu(CpuDevice::new(0));
    let session = Session::new();
    assert_eq!(EXAMPLES.len(), 9);
    for strategy in Strategy::ALL {
        let target = Target { device: &device, session: &session, cache: &KernelCache::uncached(), strategy };
        for example in EXAMPLES {
            let outcome = run_example(&target, example).unwrap_or_else(|e| panic!("{}: {e}", example.name));
            assert!(outcome.matches, "{} ({strategy}): result differs from the Rust reference", example.name);
        }
    }
}

#[test]
fn examples_are_canonical_text_apart_from_comment_lines() {
    for example in EXAMPLES {
        let module = relok_ir::parse(example.source).unwrap_or_else(|e| panic!("{}: {e}", example.file));
        let code: String =
            example.source.split_inclusive('\n').filter(|l| !l.trim_start().starts_with(';')).collect();
        assert_eq!(relok_ir::print(&module), code, "{} is not canonical (see relok fmt)", example.file);
    }
}

#[test]
fn a_wrong_reference_would_be_caught() {
    // The comparison is real: perturb one output element and it fails.
    let device = Device::Cpu(CpuDevice::new(1));
    let session = Session::new();
    let target = Target { device: &device, session: &session, cache: &KernelCache::uncached(), strategy: Strategy::Table };
    let example = &EXAMPLES[0];
    let mut outcome = run_example(&target, example).expect("saxpy runs");
    if let relok_cli::args::ArgValue::Buffer(_, bits) = &mut outcome.args[example.output] {
        bits[0] ^= 1;
    }
    let inputs_after = outcome.args;
    assert!(outcome.matches);
    let module = relok_ir::parse(example.source).expect("parses");
    let func = &module.funcs[module.func_by_name(example.kernel).expect("kernel")];
    let inputs = relok_cli::args::parse_args(func, example.args).expect("valid");
    assert_ne!((example.reference)(&inputs), inputs_after);
}
