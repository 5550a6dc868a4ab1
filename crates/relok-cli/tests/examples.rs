//! Every example kernel runs on the cpu device and matches its Rust
//! reference; every example file is in canonical form.

use relok_cli::args::ArgValue;
use relok_cli::demo::run_example;
use relok_cli::examples::{EXAMPLES, Example};
use relok_cli::launch::Target;
use relok_ir::Strategy;
use relok_runtime::KernelCache;
use relok_runtime::cpu::CpuDevice;
use relok_runtime::{Device, Session};
use std::sync::atomic::{AtomicUsize, Ordering};

#[test]
fn examples_match_their_rust_reference() {
    let device = Device::Cpu(CpuDevice::new(0));
    let session = Session::new();
    assert_eq!(EXAMPLES.len(), 11);
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
        let code: String = example.source.split_inclusive('\n').filter(|l| !l.trim_start().starts_with(';')).collect();
        assert_eq!(relok_ir::print(&module), code, "{} is not canonical (see relok fmt)", example.file);
    }
}

/// Which example [`wrong_reference`] perturbs (a plain `fn` cannot capture it).
static WRONG: AtomicUsize = AtomicUsize::new(0);

/// The reference of `EXAMPLES[WRONG]` with one bit of its output's first
/// element flipped.
fn wrong_reference(inputs: &[ArgValue]) -> Vec<ArgValue> {
    let example = &EXAMPLES[WRONG.load(Ordering::SeqCst)];
    let mut want = (example.reference)(inputs);
    match &mut want[example.output] {
        // One bit: the last of an exact comparison, a high one (far beyond
        // any tolerance) for the math examples.
        ArgValue::Buffer(_, bits) => {
            bits[0] ^= if example.tolerance == relok_cli::examples::Tolerance::EXACT { 1 } else { 1 << 30 }
        }
        ArgValue::Scalar(_, bits) => *bits ^= 1,
        ArgValue::Symbol(name) => name.push('!'),
    }
    want
}

#[test]
fn a_wrong_reference_would_be_caught() {
    // The comparison `run_example` (and so the demo and the test above)
    // makes is real: the same run against a reference one bit off, or an
    // exception with another message, is reported as a mismatch.
    let device = Device::Cpu(CpuDevice::new(1));
    let session = Session::new();
    let target =
        Target { device: &device, session: &session, cache: &KernelCache::uncached(), strategy: Strategy::Table };
    let (mut results, mut exceptions) = (0, 0);
    for (i, example) in EXAMPLES.iter().enumerate() {
        WRONG.store(i, Ordering::SeqCst);
        let wrong: &'static Example = Box::leak(Box::new(match example.exception {
            Some(_) => Example { exception: Some("another message"), ..*example },
            None => Example { reference: wrong_reference, ..*example },
        }));
        let right = run_example(&target, example).unwrap_or_else(|e| panic!("{}: {e}", example.name));
        assert!(right.matches, "{}: the example itself matches", example.name);
        let outcome = run_example(&target, wrong).unwrap_or_else(|e| panic!("{}: {e}", example.name));
        assert!(!outcome.matches, "{}: a wrong reference was not caught", example.name);
        *if example.exception.is_some() { &mut exceptions } else { &mut results } += 1;
    }
    assert_eq!((results, exceptions), (10, 1), "both kinds of comparison were tried");
}
