//! File-based tests in the cranelift style.
//!
//! A test file is kernel text whose header (the leading lines that are
//! blank, start with `;`, or start with `test `) names what to check:
//!
//! - `test verify`: the text must fail to parse or verify, and the errors
//!   must be exactly the annotated ones. Annotate the offending line with a
//!   comment `; error: TEXT`; every error reported on that line must contain
//!   TEXT, and every annotated line must get at least one error.
//! - `test roundtrip`: the body (everything after the header) is in canonical
//!   form: it parses, verifies, and prints back byte for byte.
//! - `test run`: each `; run:` line launches a kernel on the given device and
//!   checks its arguments afterwards:
//!
//!   ```text
//!   ; run: @saxpy(4, 2.0, [1.0, 2.0, 3.0, 4.0], [1.0, 1.0, 1.0, 1.0]) block=4 => _, _, _, [3.0, 5.0, 7.0, 9.0]
//!   ; run: @oob(zeros:4) block=8 => fault: out-of-bounds
//!   ```
//!
//!   Arguments use the `relok run --arg` syntax; `grid=` and `block=` take
//!   `N`, `XxY` or `XxYxZ` (default 1); `budget=N` sets the step budget;
//!   `wgpu_ulps=N` (see below).
//!   Every line runs under each strategy (bake, patch, table: the kernel is
//!   linked, optimised and lowered first); `strategy=S` runs only one.
//!   After `=>` come either one expectation per argument (`_` to skip one, a
//!   literal or a list to compare exactly) or `fault: TEXT` / `error: TEXT`:
//!   the launch must fail with a message containing TEXT.
//!
//! A file may name several kinds (`test roundtrip` and `test run`).
//!
//! On wgpu a line runs under bake and table only (`patch` cannot work
//! there); a line of `strategy=patch` is skipped and counted.
//!
//! On wgpu an `f32` buffer also matches what WGSL lets a driver return
//! instead: a zero of either sign and a zero for a subnormal; a line's
//! `wgpu_ulps=N` allows N ulp more there (the math library's divisions and
//! sums with constants, docs/ir.md). The cpu device and CUDA compare bit
//! for bit.
//!
//! On a GPU (`RELOK_TEST_DEVICE=cuda` or `wgpu`) the `fault:` lines are skipped and
//! counted: checked mode reports global out-of-bounds accesses and endless
//! loops there (the facade's `crates/relok/tests/cuda.rs` and `wgpu.rs` run
//! those lines against the cpu device's faults, and `wgpu.rs` runs every
//! other run line through the facade too), but not every fault the cpu device reports
//! (shared and local arrays, barrier divergence, the step budget, races).
//! Faults are the cpu device's to check.

use crate::args::{ArgValue, format_buffer, parse_arg, parse_args, parse_dims};
use crate::launch::{Target, run_kernel};
use relok_ir::Strategy;
use relok_runtime::Device;
use relok_runtime::KernelCache;
use relok_runtime::LaunchConfig;
use relok_runtime::Session;

/// The `; run:` lines whose expectation is a `fault:`: skipped on a GPU,
/// where faults are undefined behaviour (see the module docs).
/// Adding one means changing this count (`tests/filetests.rs` checks it
/// against the files).
pub const FAULT_LINES: usize = 27;

/// The `; run:` lines of `strategy=patch` (and no fault): skipped on wgpu,
/// which cannot patch.
pub const PATCH_ONLY_LINES: usize = 0;

/// How many run lines `device` skips: none on the cpu device (the oracle
/// runs every line), the documented kinds on a GPU.
pub fn expected_skips(device: &Device) -> usize {
    if device.as_cpu().is_some() {
        return 0;
    }
    FAULT_LINES + if device.strategies().contains(&Strategy::Patch) { 0 } else { PATCH_ONLY_LINES }
}

/// Runs the test file `name` with contents `text`: the number of `; run:`
/// lines skipped on this device (see the module docs and [`expected_skips`]),
/// or every failure.
pub fn run_file(name: &str, text: &str, device: &Device) -> Result<usize, Vec<String>> {
    let header: Vec<&str> = text
        .lines()
        .take_while(|l| {
            let l = l.trim();
            l.is_empty() || l.starts_with(';') || l.starts_with("test ")
        })
        .collect();
    let kinds: Vec<&str> = header.iter().filter_map(|l| l.trim().strip_prefix("test ")).map(str::trim).collect();
    if kinds.is_empty() {
        return Err(vec![format!("{name}: no `test` line in the header")]);
    }
    // The `test ...` lines are not kernel text: blank them (keeping the line
    // numbers) before parsing the whole file.
    let source: String = text
        .split_inclusive('\n')
        .enumerate()
        .map(|(i, l)| {
            if i < header.len() && l.trim().starts_with("test ") {
                if l.ends_with('\n') { "\n" } else { "" }
            } else {
                l
            }
        })
        .collect();
    let mut failures = Vec::new();
    let mut skipped = 0;
    for kind in kinds {
        let result = match kind {
            "verify" => check_verify(&source),
            "roundtrip" => check_roundtrip(text, header.len()),
            "run" => check_run(&source, device).map(|n| skipped += n),
            other => Err(vec![format!("unknown test kind `{other}`")]),
        };
        if let Err(errs) = result {
            failures.extend(errs.into_iter().map(|e| format!("{name}: test {kind}: {e}")));
        }
    }
    if failures.is_empty() { Ok(skipped) } else { Err(failures) }
}

/// `(line, message)` of every parse or verify error.
fn errors_of(text: &str) -> Vec<(u32, String)> {
    match relok_ir::parse(text) {
        Err(e) => vec![(e.span.line, e.message)],
        Ok(m) => match relok_ir::verify(&m) {
            Ok(_) => Vec::new(),
            Err(errs) => errs.errors.iter().map(|e| (e.span.line, e.to_string())).collect(),
        },
    }
}

fn check_verify(text: &str) -> Result<(), Vec<String>> {
    let expected: Vec<(u32, &str)> = text
        .lines()
        .enumerate()
        .filter_map(|(i, l)| l.find("; error:").map(|at| (i as u32 + 1, l[at + "; error:".len()..].trim())))
        .collect();
    if expected.is_empty() {
        return Err(vec!["no `; error:` annotations".into()]);
    }
    let actual = errors_of(text);
    let mut failures = Vec::new();
    for (line, message) in &actual {
        match expected.iter().find(|(l, _)| l == line) {
            Some((_, want)) if message.contains(want) => {}
            Some((_, want)) => failures.push(format!("line {line}: error `{message}` does not contain `{want}`")),
            None => failures.push(format!("line {line}: unexpected error `{message}`")),
        }
    }
    for (line, want) in &expected {
        if !actual.iter().any(|(l, _)| l == line) {
            failures.push(format!("line {line}: expected an error containing `{want}`, got none"));
        }
    }
    if failures.is_empty() { Ok(()) } else { Err(failures) }
}

fn check_roundtrip(text: &str, header_lines: usize) -> Result<(), Vec<String>> {
    let body: String = text.split_inclusive('\n').skip(header_lines).collect();
    let module = relok_ir::parse(&body).map_err(|e| vec![format!("does not parse: {e}")])?;
    if let Err(errs) = relok_ir::verify(&module) {
        return Err(errs.errors.iter().map(|e| format!("does not verify: {e}")).collect());
    }
    let printed = relok_ir::print(&module);
    if printed != body {
        let line = printed
            .lines()
            .zip(body.lines())
            .position(|(a, b)| a != b)
            .map_or(printed.lines().count().min(body.lines().count()) + 1, |i| i + 1);
        return Err(vec![format!(
            "printing the parsed body differs from it at body line {line}:\n--- printed ---\n{printed}--- body ---\n{body}"
        )]);
    }
    if relok_ir::parse(&printed).as_ref() != Ok(&module) {
        return Err(vec!["parsing the printed text gives another module".into()]);
    }
    Ok(())
}

fn check_run(text: &str, device: &Device) -> Result<usize, Vec<String>> {
    let module = relok_ir::parse(text).map_err(|e| vec![format!("does not parse: {e}")])?;
    let module = relok_ir::VerifiedModule::new(module)
        .map_err(|errs| errs.errors.iter().map(|e| format!("does not verify: {e}")).collect::<Vec<_>>())?;
    let runs: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .filter_map(|(i, l)| l.trim().strip_prefix("; run:").map(|r| (i + 1, r.trim())))
        .collect();
    if runs.is_empty() {
        return Err(vec!["no `; run:` lines".into()]);
    }
    let gpu = device.as_cpu().is_none();
    let (skip, runs): (Vec<_>, Vec<_>) = runs
        .into_iter()
        .partition(|(_, run)| gpu && run.split_once("=>").is_some_and(|(_, e)| e.trim().starts_with("fault:")));
    let (mut skipped, mut failures) = (skip.len(), Vec::new());
    for (line, run) in runs {
        match check_run_line(&module, run, device) {
            Ok(ran) => skipped += usize::from(!ran),
            Err(e) => failures.push(format!("line {line}: {e}")),
        }
    }
    if failures.is_empty() { Ok(skipped) } else { Err(failures) }
}

/// Splits at top-level commas (not inside `[...]`).
fn split_top(s: &str) -> Vec<&str> {
    let (mut depth, mut start, mut out) = (0i32, 0, Vec::new());
    for (i, c) in s.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    if !s[start..].trim().is_empty() || !out.is_empty() {
        out.push(s[start..].trim());
    }
    out
}

/// Runs one `; run:` line under each of its strategies the device supports;
/// `false` when it supports none of them (the line is skipped).
fn check_run_line(module: &relok_ir::VerifiedModule, run: &str, device: &Device) -> Result<bool, String> {
    let (call, expect) = run.split_once("=>").ok_or("expected `=> expectations`")?;
    let call = call.trim().strip_prefix('@').ok_or("expected `@kernel(args)`")?;
    let open = call.find('(').ok_or("expected `(` after the kernel name")?;
    let close = call.rfind(')').ok_or("expected `)` after the arguments")?;
    let kernel = &call[..open];
    let func = module.func_by_name(kernel).map(|id| &module.funcs[id]).ok_or(format!("no kernel @{kernel}"))?;
    let args = parse_args(func, &split_top(&call[open + 1..close]))?;
    let mut config = LaunchConfig::default();
    let mut strategies = Strategy::ALL.to_vec();
    let mut wgpu_ulps = 0;
    for opt in call[close + 1..].split_whitespace() {
        let (key, value) = opt.split_once('=').ok_or(format!("expected key=value, found `{opt}`"))?;
        match key {
            "grid" => config.grid = parse_dims(value)?,
            "block" => config.block = parse_dims(value)?,
            "budget" => config.step_budget = value.parse().map_err(|_| format!("bad budget `{value}`"))?,
            "strategy" => strategies = vec![Strategy::from_name(value).ok_or(format!("unknown strategy `{value}`"))?],
            "wgpu_ulps" => wgpu_ulps = value.parse().map_err(|_| format!("bad wgpu_ulps `{value}`"))?,
            _ => return Err(format!("unknown option `{key}`")),
        }
    }
    strategies.retain(|s| device.strategies().contains(s));
    let session = Session::new();
    for &strategy in &strategies {
        let target = Target { device, session: &session, cache: &KernelCache::uncached(), strategy };
        let wgsl = (device.target() == relok_compiler::artifact::CodeTarget::Wgsl).then_some(wgpu_ulps);
        check_outcome(func, &args, expect, run_kernel(&target, module, kernel, &config, &args), wgsl)
            .map_err(|e| format!("strategy {strategy}: {e}"))?;
    }
    Ok(!strategies.is_empty())
}

/// Compares one launch's outcome with the line's expectations.
fn check_outcome(
    func: &relok_ir::Function,
    args: &[ArgValue],
    expect: &str,
    outcome: Result<crate::launch::RunOutput, crate::launch::RunError>,
    wgsl_ulps: Option<u32>,
) -> Result<(), String> {
    let expect = expect.trim();
    if let Some(want) = expect.strip_prefix("fault:").or_else(|| expect.strip_prefix("error:")) {
        return match outcome {
            Ok(_) => Err(format!("expected a failure containing `{}`, the launch succeeded", want.trim())),
            Err(e) if e.to_string().contains(want.trim()) => Ok(()),
            Err(e) => Err(format!("failure `{e}` does not contain `{}`", want.trim())),
        };
    }
    let out = outcome.map_err(|e| e.to_string())?;
    let wants = split_top(expect);
    if wants.len() != args.len() {
        return Err(format!("{} expectations for {} arguments", wants.len(), args.len()));
    }
    for (i, ((want, got), &p)) in wants.iter().zip(&out.args).zip(&func.params).enumerate() {
        if *want == "_" {
            continue;
        }
        let want_value = parse_arg(i + 1, func.ty(p), want).map_err(|e| format!("expectation: {e}"))?;
        if &want_value != got && !wgsl_ulps.is_some_and(|ulps| f32_within_wgsl(&want_value, got, ulps)) {
            return Err(format!("argument {} is {}, expected {want}", i + 1, show(got)));
        }
    }
    Ok(())
}

/// Whether `got` is an `f32` buffer equal to `want` as far as WGSL
/// promises: a driver may ignore a zero's sign and flush a subnormal to
/// zero; and within `ulps` (the line's `wgpu_ulps`, for the math library,
/// whose divisions and sums with constants a driver may round differently:
/// docs/ir.md's wgpu column).
fn f32_within_wgsl(want: &ArgValue, got: &ArgValue, ulps: u32) -> bool {
    let (ArgValue::Buffer(relok_ir::Scalar::F32, w), ArgValue::Buffer(relok_ir::Scalar::F32, g)) = (want, got) else {
        return false;
    };
    w.len() == g.len()
        && w.iter().zip(g).all(|(&w, &g)| {
            let (w, g) = (f32::from_bits(w as u32), f32::from_bits(g as u32));
            w == g
                || (w.is_nan() && g.is_nan())
                || (w.is_subnormal() && g == 0.0)
                || (w.is_finite()
                    && g.is_finite()
                    && w.is_sign_negative() == g.is_sign_negative()
                    && w.to_bits().abs_diff(g.to_bits()) <= ulps)
        })
}

fn show(a: &ArgValue) -> String {
    match a {
        ArgValue::Buffer(t, bits) => format_buffer(*t, bits, 64),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wgsl_f32_allowances_are_zero_signs_flushed_subnormals_and_the_lines_ulps() {
        let buf =
            |v: &[f32]| ArgValue::Buffer(relok_ir::Scalar::F32, v.iter().map(|x| u64::from(x.to_bits())).collect());
        let within = |w: &[f32], g: &[f32]| f32_within_wgsl(&buf(w), &buf(g), 2);
        assert!(within(&[0.0, 1e-45, 1.0, f32::NAN], &[-0.0, 0.0, f32::from_bits(1.0f32.to_bits() + 2), f32::NAN]));
        assert!(!within(&[1.0], &[f32::from_bits(1.0f32.to_bits() + 3)]), "three ulp");
        assert!(
            !f32_within_wgsl(&buf(&[1.0]), &buf(&[f32::from_bits(1.0f32.to_bits() + 1)]), 0),
            "exact without wgpu_ulps"
        );
        assert!(f32_within_wgsl(&buf(&[0.0, 1e-45]), &buf(&[-0.0, 0.0]), 0), "zero signs and flushes need no ulps");
        assert!(!within(&[1e-45], &[-1e-45]), "a subnormal's sign");
        assert!(!within(&[1.0, 2.0], &[1.0]), "lengths");
        assert!(!within(&[f32::INFINITY], &[f32::MAX]), "an infinity");
        let ints = ArgValue::Buffer(relok_ir::Scalar::U32, vec![1]);
        assert!(!f32_within_wgsl(&ints, &ArgValue::Buffer(relok_ir::Scalar::U32, vec![2]), 2), "not f32");
    }

    #[test]
    fn splits_at_top_level_commas() {
        assert_eq!(split_top("1, [2, 3], zeros:4"), vec!["1", "[2, 3]", "zeros:4"]);
        assert_eq!(split_top(""), Vec::<&str>::new());
        assert_eq!(parse_dims("2x3"), Ok([2, 3, 1]));
        assert!(parse_dims("2x3x4x5").is_err());
    }
}
