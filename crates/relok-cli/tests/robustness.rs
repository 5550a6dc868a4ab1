//! Malformed input never panics: random mutations of every example go
//! through the parser and, when they parse, the verifier and a launch on the
//! cpu device; huge sizes and absurd launches are clear errors.

use relok_cli::args::SplitMix64;
use relok_cli::examples::EXAMPLES;
use relok_runtime::{CpuDevice, KernelArg, LaunchConfig};

/// One random edit of `src`: delete, insert, replace or duplicate a span of
/// characters, swap two lines, or truncate.
fn mutate(src: &str, rng: &mut SplitMix64) -> String {
    let chars: Vec<char> = src.chars().collect();
    let n = chars.len().max(1);
    let at = (rng.next_u64() % n as u64) as usize;
    let len = 1 + (rng.next_u64() % 8) as usize;
    let end = (at + len).min(chars.len());
    const ALPHABET: &[char] =
        &['v', '0', '9', ':', ',', '{', '}', '[', ']', ';', '@', '%', '-', '.', ' ', '\n', 'x', 'é'];
    let pick = |r: u64| ALPHABET[(r % ALPHABET.len() as u64) as usize];
    let mut out: Vec<char> = chars.clone();
    match rng.next_u64() % 6 {
        0 => {
            out.drain(at.min(out.len())..end);
        }
        1 => {
            let c = pick(rng.next_u64());
            out.insert(at.min(out.len()), c);
        }
        2 => {
            if at < out.len() {
                out[at] = pick(rng.next_u64());
            }
        }
        3 => {
            let piece: Vec<char> = chars[at.min(chars.len())..end].to_vec();
            let to = (rng.next_u64() % n as u64) as usize;
            out.splice(to.min(out.len())..to.min(out.len()), piece);
        }
        4 => {
            let mut lines: Vec<&str> = src.lines().collect();
            if lines.len() > 1 {
                let a = (rng.next_u64() % lines.len() as u64) as usize;
                let b = (rng.next_u64() % lines.len() as u64) as usize;
                lines.swap(a, b);
            }
            return lines.join("\n");
        }
        _ => out.truncate(at),
    }
    out.into_iter().collect()
}

#[test]
fn mutated_examples_never_panic_the_front_end_or_the_device() {
    let device = CpuDevice::new(0);
    let mut rng = SplitMix64(0x5eed);
    let (mut parsed, mut verified) = (0, 0);
    for example in EXAMPLES {
        for round in 0..600 {
            let mut text = example.source.to_string();
            for _ in 0..=(round % 3) {
                text = mutate(&text, &mut rng);
            }
            let Ok(module) = relok_ir::parse(&text) else { continue };
            parsed += 1;
            if relok_ir::verify(&module).is_err() {
                continue;
            }
            verified += 1;
            // A mutated kernel that still verifies must launch or fail cleanly.
            for (_, f) in module.kernels() {
                let args: Vec<KernelArg> = f
                    .params
                    .iter()
                    .map(|&p| match f.ty(p).as_scalar() {
                        Some(ty) => KernelArg::Scalar { ty, bits: 3 },
                        None => KernelArg::Ptr(device.alloc(64).expect("small allocation")),
                    })
                    .collect();
                let config = LaunchConfig { grid: [2, 1, 1], block: [16, 2, 1], step_budget: 200_000 };
                let _ = device.launch(&module, &f.name, &config, &args);
            }
        }
    }
    // The mutations must exercise the later stages too, or the test is weak.
    assert!(parsed > 100, "only {parsed} mutants parsed");
    assert!(verified > 20, "only {verified} mutants verified");
}

#[test]
fn huge_sizes_are_errors() {
    let too_big_shared = "kernel @k() {\n    shared %s: [f32; 4294967295]\n    return\n}\n";
    let m = relok_ir::parse(too_big_shared).expect("parses");
    assert!(relok_ir::verify(&m).is_err());
    let too_long = "kernel @k() {\n    local %s: [f32; 4294967296]\n    return\n}\n";
    let e = relok_ir::parse(too_long).expect_err("array length overflows u32");
    assert_eq!(e.span.line, 2);
    let deep = format!("kernel @k() {{\n{}{}}}\n", "loop {\n".repeat(10_000), "}\n".repeat(10_000));
    assert!(relok_ir::parse(&deep).is_err());

    let device = CpuDevice::new(0);
    let m = relok_ir::parse("kernel @k() {\n    return\n}\n").expect("parses");
    for (grid, block) in
        [([u32::MAX, u32::MAX, u32::MAX], [1, 1, 1]), ([1, 1, 1], [2048, 1, 1]), ([0, 1, 1], [1, 1, 1])]
    {
        let config = LaunchConfig { grid, block, ..LaunchConfig::default() };
        assert!(device.launch(&m, "k", &config, &[]).is_err(), "grid {grid:?} block {block:?} accepted");
    }
    assert!(device.alloc(u64::MAX).is_err());
}
