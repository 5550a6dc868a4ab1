//! Constructs outside the Rust kernel subset, and wrong uses of a kernel:
//! each is a compile error at the offending span, with the message in its
//! `tests/ui/*.stderr` (`TRYBUILD=overwrite` regenerates them after a
//! deliberate change of wording).

#[test]
fn unsupported_constructs_are_spanned_compile_errors() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
