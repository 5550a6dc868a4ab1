//! A fresh compile is what a loader accepts: every example and file test,
//! for every target, every strategy the target supports, checked and
//! unchecked, compiles to an artifact that `Artifact::validate` passes.
//! The runtime relies on it: a device does not validate again what the
//! kernel cache compiled or validated (docs/cache.md).

use relok_compiler::artifact::{CodeTarget, CompileOptions, compile};
use relok_compiler::stencil::Stencil;
use relok_ir::Strategy;

mod common;
use common::{fake_word, inputs};

#[test]
fn every_fresh_compile_validates() {
    let mut validated = 0;
    for (file, m) in inputs() {
        for (_, k) in m.kernels() {
            let stencil = Stencil::new(&m, &k.name).expect("stencil");
            for target in [CodeTarget::Cpu, CodeTarget::Ptx { sm: 90 }, CodeTarget::Wgsl] {
                for &s in target.strategies() {
                    for checked in [false, true] {
                        let words: Option<relok_compiler::lower::WordResolver<'_>> =
                            if s == Strategy::Bake { Some(&fake_word) } else { None };
                        let options = CompileOptions { checked, ..CompileOptions::default() };
                        // A kernel a backend refuses (by name) has nothing to load.
                        let Ok(a) = compile(&stencil, target, s, options, words) else { continue };
                        let what = format!("{file} @{} for {}/{s}, checked {checked}", k.name, target.name());
                        assert_eq!(a.validate(), Ok(()), "{what}");
                        validated += 1;
                    }
                }
            }
        }
    }
    // Every input under most of the combinations: the loop ran.
    assert!(validated > 300, "only {validated} artifacts validated");
}
