//! The WGSL backend over every example and every `test run` / `test
//! roundtrip` file test under table and bake: what it writes is valid WGSL
//! (naga parses and validates it) and byte-stable; what it refuses, it
//! refuses by name; `patch` is refused.

use relok_compiler::artifact::{compile, CodeTarget, CompileOptions};
use relok_compiler::stencil::Stencil;
use relok_compiler::CompileError;
use relok_ir::Strategy;

mod common;
use common::{fake_word, inputs, repo};

fn validate(wgsl: &str) -> Result<(), String> {
    let module = naga::front::wgsl::parse_str(wgsl).map_err(|e| e.emit_to_string(wgsl))?;
    naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::empty())
        .validate(&module)
        .map(|_| ())
        .map_err(|e| format!("{e:?}"))
}

#[test]
fn written_wgsl_validates_and_refusals_name_the_operation() {
    let (mut valid, mut refused) = (Vec::new(), Vec::new());
    let mut invalid = Vec::new();
    for (file, m) in inputs() {
        for (_, k) in m.kernels() {
            let stencil = Stencil::new(&m, &k.name).expect("stencil");
            for s in [Strategy::Table, Strategy::Bake] {
                let words: Option<relok_compiler::lower::WordResolver<'_>> = if s == Strategy::Bake { Some(&fake_word) } else { None };
                let name = format!("{file} @{} {s}", k.name);
                match compile(&stencil, CodeTarget::Wgsl, s, CompileOptions::default(), words) {
                    Ok(a) => {
                        let text = String::from_utf8(a.code.clone()).expect("UTF-8");
                        let again = compile(&stencil, CodeTarget::Wgsl, s, CompileOptions::default(), words).expect("again");
                        assert_eq!(a.code, again.code, "{name}: not byte-stable");
                        match validate(&text) {
                            Ok(()) => valid.push(name),
                            Err(e) => invalid.push(format!("{name}:\n{e}\n{text}")),
                        }
                    }
                    Err(CompileError::Wgsl(e)) => {
                        assert!(e.to_string().contains("is not supported by the WGSL backend"), "{name}: {e}");
                        refused.push(name);
                    }
                    Err(e) => panic!("{name}: {e}"),
                }
            }
        }
    }
    assert!(invalid.is_empty(), "{} invalid WGSL modules; the first:\n{}", invalid.len(), invalid[0]);
    // Every example that uses only 32-bit values and words is written.
    for ex in ["saxpy.rk @saxpy", "reduce.rk @reduce", "histogram.rk @histogram", "matmul.rk @matmul", "scan.rk @scan", "symbols.rk @classify", "lookup.rk @lookup", "boxed.rk @unbox", "scale.rk @scale"] {
        for s in ["table", "bake"] {
            assert!(valid.iter().any(|v| v == &format!("{ex} {s}")), "{ex} {s} was not written: refused {refused:?}");
        }
    }
    assert!(valid.len() > 60, "{} valid, {} refused", valid.len(), refused.len());
}

#[test]
fn patch_is_refused_with_the_reason() {
    let m = relok_ir::parse(&std::fs::read_to_string(repo().join("examples/reloc/symbols.rk")).expect("read")).expect("parses");
    let s = Stencil::new(&m, "classify").expect("stencil");
    let e = compile(&s, CodeTarget::Wgsl, Strategy::Patch, CompileOptions::default(), None).expect_err("patch refused");
    assert!(e.to_string().contains("patching is impossible on wgpu"), "{e}");
}
