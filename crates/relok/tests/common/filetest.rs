//! The file tests' `test run` files (`tests/filetests/run_*.rk`, format in
//! `crates/relok-cli/src/filetest.rs`) run through the facade: each
//! `; run:` line launches its kernel with its arguments on contexts of one
//! device, one context per strategy, and checks the arguments afterwards
//! or the failure's message.
//!
//! As the CLI's runner: a line runs under each of its strategies (all, or
//! `strategy=S`) that a context is given for, and is skipped (counted)
//! when none is; on a GPU the `fault:` lines are skipped (counted): faults
//! beyond checked mode's are the cpu device's to check. On wgpu an `f32`
//! buffer also matches what WGSL lets a driver return instead (a zero of
//! either sign, a zero for a subnormal, and the line's `wgpu_ulps=N` more
//! ulp); elsewhere every comparison is bit for bit.

use super::repo;
use super::values::{Value, parse, parse_all};
use relok::{Context, DeviceKind, Grid, Program};
use relok_ir::Strategy;

/// The `; run:` lines whose expectation is a `fault:` (skipped on a GPU):
/// `crates/relok-cli/src/filetest.rs`'s `FAULT_LINES`, which its
/// `tests/filetests.rs` checks against the files.
pub const FAULT_LINES: usize = 27;

/// The `; run:` lines of `strategy=patch` and no fault (skipped on wgpu):
/// the CLI's `PATCH_ONLY_LINES`.
pub const PATCH_ONLY_LINES: usize = 0;

/// Runs the `test run` file `name` with contents `text` on `contexts` (one
/// device, a context per strategy): the number of run lines skipped, or
/// every failure.
pub fn run_file(name: &str, text: &str, contexts: &[Context]) -> Result<usize, Vec<String>> {
    let header = text
        .lines()
        .take_while(|l| {
            let l = l.trim();
            l.is_empty() || l.starts_with(';') || l.starts_with("test ")
        })
        .count();
    let kinds: Vec<&str> =
        text.lines().take(header).filter_map(|l| l.trim().strip_prefix("test ")).map(str::trim).collect();
    if kinds != ["run"] {
        return Err(vec![format!("{name}: the facade's runner runs `test run` files only, not {kinds:?}")]);
    }
    // The `test` line is not kernel text: blanked, keeping the line numbers.
    let source: String = text
        .split_inclusive('\n')
        .enumerate()
        .map(|(i, l)| if i < header && l.trim().starts_with("test ") { "\n" } else { l })
        .collect();
    let program = Program::parse_named(name, &source).map_err(|e| vec![format!("{name}: {e}")])?;
    let runs: Vec<(usize, &str)> = source
        .lines()
        .enumerate()
        .filter_map(|(i, l)| l.trim().strip_prefix("; run:").map(|r| (i + 1, r.trim())))
        .collect();
    if runs.is_empty() {
        return Err(vec![format!("{name}: no `; run:` lines")]);
    }
    let gpu = contexts.first().is_some_and(|c| c.device_kind() != DeviceKind::Cpu);
    let (mut skipped, mut failures) = (0, Vec::new());
    for (line, run) in runs {
        if gpu && run.split_once("=>").is_some_and(|(_, e)| e.trim().starts_with("fault:")) {
            skipped += 1;
            continue;
        }
        match run_line(&program, run, contexts) {
            Ok(ran) => skipped += usize::from(!ran),
            Err(e) => failures.push(format!("{name}: test run: line {line}: {e}")),
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

/// `N`, `XxY` or `XxYxZ`.
fn dims(s: &str) -> Result<[u32; 3], String> {
    let mut d = [1u32; 3];
    let parts: Vec<&str> = s.split('x').collect();
    if parts.len() > 3 {
        return Err(format!("bad dimensions `{s}`"));
    }
    for (d, p) in d.iter_mut().zip(parts) {
        *d = p.parse().map_err(|_| format!("bad dimensions `{s}`"))?;
    }
    Ok(d)
}

/// Runs one line on each context of its strategies; `false` when none
/// was given (the line is skipped).
fn run_line(program: &Program, run: &str, contexts: &[Context]) -> Result<bool, String> {
    let (call, expect) = run.split_once("=>").ok_or("expected `=> expectations`")?;
    let call = call.trim().strip_prefix('@').ok_or("expected `@kernel(args)`")?;
    let (open, close) = (call.find('(').ok_or("expected `(`")?, call.rfind(')').ok_or("expected `)`")?);
    let kernel = &call[..open];
    let module = program.module();
    let func = module.func_by_name(kernel).map(|id| &module.funcs[id]).ok_or(format!("no function @{kernel}"))?;
    let args = parse_all(func, &split_top(&call[open + 1..close]))?;
    let (mut grid, mut block, mut budget) = ([1; 3], [1; 3], Grid::DEFAULT_STEP_BUDGET);
    let mut strategies = Strategy::ALL.to_vec();
    let mut wgpu_ulps = 0;
    for opt in call[close + 1..].split_whitespace() {
        let (key, value) = opt.split_once('=').ok_or(format!("expected key=value, found `{opt}`"))?;
        match key {
            "grid" => grid = dims(value)?,
            "block" => block = dims(value)?,
            "budget" => budget = value.parse().map_err(|_| format!("bad budget `{value}`"))?,
            "strategy" => strategies = vec![Strategy::from_name(value).ok_or(format!("unknown strategy `{value}`"))?],
            "wgpu_ulps" => wgpu_ulps = value.parse().map_err(|_| format!("bad wgpu_ulps `{value}`"))?,
            _ => return Err(format!("unknown option `{key}`")),
        }
    }
    let grid = Grid::new(grid, block).with_step_budget(budget);
    let mut ran = false;
    for ctx in contexts.iter().filter(|c| strategies.contains(&c.strategy())) {
        ran = true;
        let outcome = ctx.kernel(program, kernel).and_then(|k| super::values::launch(ctx, &k, grid, &args));
        let wgsl = (ctx.device_kind() == DeviceKind::Wgpu).then_some(wgpu_ulps);
        check(func, &args, expect, outcome, wgsl).map_err(|e| format!("strategy {}: {e}", ctx.strategy()))?;
    }
    Ok(ran)
}

/// Compares one launch's outcome with the line's expectations.
fn check(
    func: &relok_ir::Function,
    args: &[Value],
    expect: &str,
    outcome: Result<Vec<Value>, relok::Error>,
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
    let got = outcome.map_err(|e| e.to_string())?;
    let wants = split_top(expect);
    if wants.len() != args.len() {
        return Err(format!("{} expectations for {} arguments", wants.len(), args.len()));
    }
    for (i, ((want, got), &p)) in wants.iter().zip(&got).zip(&func.params).enumerate() {
        if *want == "_" {
            continue;
        }
        let want_value = parse(func.ty(p), want).map_err(|e| format!("expectation {}: {e}", i + 1))?;
        if &want_value != got && !wgsl_ulps.is_some_and(|ulps| f32_within_wgsl(&want_value, got, ulps)) {
            return Err(format!("argument {} is {}, expected {want}", i + 1, got.show(64)));
        }
    }
    Ok(())
}

/// Whether `got` is an `f32` buffer equal to `want` as far as WGSL
/// promises (see the module docs).
pub fn f32_within_wgsl(want: &Value, got: &Value, ulps: u32) -> bool {
    let (Value::Buffer(relok_ir::Scalar::F32, w), Value::Buffer(relok_ir::Scalar::F32, g)) = (want, got) else {
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

/// `tests/filetests/<file>`'s kernels without its run lines.
pub fn kernels_of(file: &str) -> String {
    let path = repo().join("tests/filetests").join(file);
    let source = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    source.lines().filter(|l| !l.starts_with("; run:") && *l != "test run").map(|l| format!("{l}\n")).collect()
}

/// `run_faults.rk`'s global out-of-bounds lines as `error:` lines naming
/// access and size: the cpu device (under every strategy) and `gpu` (its
/// contexts, in checked mode, the default) fail alike, an in-bounds line
/// between them still runs, and the device stays usable (the last line).
pub fn checked_mode_faults_as_the_cpu_device(gpu: &[Context]) {
    let lines = [
        "; run: @oob_load(4, zeros:4) => error: out-of-bounds global read of 4 bytes at 0x",
        "; run: @oob_load(3, [1, 2, 3, 4]) => _, [4, 2, 3, 4]",
        "; run: @oob_store(zeros:4) block=8 => error: out-of-bounds global write of 4 bytes at 0x",
        "; run: @oob_atomic(zeros:2) block=3 => error: out-of-bounds global atomic of 8 bytes at 0x",
        "; run: @oob_store(zeros:8) block=8 => [0, 1, 2, 3, 4, 5, 6, 7]",
        // A u8 buffer of whole words: checked by the byte.
        "; run: @oob_byte(8, zeros:8) => error: out-of-bounds global read of 1 bytes at 0x",
        "; run: @oob_byte(7, [1, 2, 3, 4, 5, 6, 7, 8]) => _, [8, 2, 3, 4, 5, 6, 7, 8]",
    ];
    let kernels = format!("{}\n{}", kernels_of("run_faults.rk"), kernels_of("run_storage_types.rk"));
    let text = format!("test run\n{}\n{kernels}", lines.join("\n"));
    let cpu = super::cpu_contexts();
    for contexts in [&cpu[..], gpu] {
        assert_eq!(run_file("checked.rk", &text, contexts), Ok(0), "on {}", contexts[0].device_name());
    }
}
