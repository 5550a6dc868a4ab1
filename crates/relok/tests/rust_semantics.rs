//! Rust kernels compute what the Rust says (issue 31, "the macro must
//! never compute something other than what the Rust says"): each test
//! here was a wrong result without an error, or a crash, before its fix.
//! Refusals at compile time are in `crates/relok-macros/tests/ui/`.
//!
//! - device functions of one name in two modules are two functions;
//! - host statics whose paths once spelled one global name are two
//!   cells (`p__a::b::T` and `p::a::b::T`, `café` and `cafè`); two
//!   statics of one explicit name are refused, naming both;
//! - `#[cfg]` on a kernel's statements, and `debug_assert!`, are decided
//!   as rustc decides them;
//! - `x[i] = v` evaluates `v` before `i`, as Rust does;
//! - a `usize` `const` above `u32::MAX` is refused, never truncated;
//! - mutually recursive generic device functions are a typed error
//!   naming the cycle, never a stack overflow.

mod common;

use common::{contexts, serial};
use relok::{Context, Error, Grid, Strategy};

fn cpu() -> Context {
    Context::builder().device("cpu").no_cache().build().expect("cpu")
}

// 1. One name, two modules.

mod a {
    #[relok::device]
    pub fn f(x: u32) -> u32 {
        x + 1
    }
}

mod b {
    #[relok::device]
    pub fn f(x: u32) -> u32 {
        x * 10
    }

    /// A generic one of the same name as well.
    #[relok::device]
    pub fn g<T: relok::Number>(x: T) -> T {
        x + x
    }
}

mod c {
    #[relok::device]
    pub fn g<T: relok::Number>(x: T) -> T {
        x * x
    }
}

#[relok::kernel]
fn two_fs(x: &[u32], out: &mut [u32]) {
    let i = relok::global_id_x();
    if i == 0 {
        out[0] = a::f(x[0]);
        out[1] = b::f(x[0]);
        out[2] = b::g(x[0]);
        out[3] = c::g(x[0]);
    }
}

#[test]
fn device_functions_of_one_name_in_two_modules_are_two_functions() {
    let _g = serial();
    for ctx in contexts(Strategy::Table) {
        let x = ctx.upload(&[5u32]).expect("upload");
        let mut out = ctx.zeros::<u32>(4).expect("zeros");
        let s = ctx.stream();
        two_fs::launch(&s, Grid::new(1, 1), &x, &mut out).expect("launch");
        s.synchronize().expect("runs");
        assert_eq!(out.download().expect("download"), [6, 50, 10, 25], "{}", ctx.device_name());
    }
    let text = relok_ir::print(two_fs::program().expect("builds").module());
    assert_eq!(text.matches("fn @_R").count(), 2, "two IR device functions (the generic ones are staged):\n{text}");
}

// 2. Host statics: the path → cell map is injective.

#[expect(non_snake_case, reason = "the path `p__a::b::T` once spelled the cell of `p::a::b::T`")]
mod p__a {
    pub mod b {
        #[relok::host]
        pub static T: [u32; 2] = [1, 2];
    }
}

mod p {
    pub mod a {
        pub mod b {
            #[relok::host]
            pub static T: [u32; 2] = [3, 4];
        }
    }
}

mod café {
    #[relok::host]
    pub static T: [u32; 2] = [5, 6];
}

mod cafè {
    #[relok::host]
    pub static T: [u32; 2] = [7, 8];
}

#[relok::kernel]
fn four_tables(out: &mut [u32]) {
    let i = relok::global_id_x();
    if i < 2 {
        out[i] = p__a::b::T[i];
        out[i + 2] = p::a::b::T[i];
        out[i + 4] = café::T[i];
        out[i + 6] = cafè::T[i];
    }
}

#[test]
fn host_statics_whose_paths_spelled_one_cell_are_two_cells() {
    let _g = serial();
    for ctx in contexts(Strategy::Table) {
        let mut out = ctx.zeros::<u32>(8).expect("zeros");
        let s = ctx.stream();
        four_tables::launch(&s, Grid::new(1, 2), &mut out).expect("launch");
        s.synchronize().expect("runs");
        assert_eq!(out.download().expect("download"), [1, 2, 3, 4, 5, 6, 7, 8], "{}", ctx.device_name());
    }
    assert_ne!(relok::__kernel::global_name("p__a::b::T"), relok::__kernel::global_name("p::a::b::T"));
    assert_ne!(relok::__kernel::global_name("café::T"), relok::__kernel::global_name("cafè::T"));
}

mod one_name {
    #[relok::host(name = "tests.rust_semantics.SAME")]
    pub static FIRST: [u32; 2] = [1, 2];

    #[relok::host(name = "tests.rust_semantics.SAME")]
    pub static SECOND: [u32; 2] = [3, 4];
}

#[relok::kernel]
fn reads_both(out: &mut [u32]) {
    let i = relok::global_id_x();
    if i < 2 {
        out[i] = one_name::FIRST[i] + one_name::SECOND[i];
    }
}

#[relok::kernel]
fn reads_first(out: &mut [u32]) {
    let i = relok::global_id_x();
    if i < 2 {
        out[i] = one_name::FIRST[i];
    }
}

#[relok::kernel]
fn reads_second(out: &mut [u32]) {
    let i = relok::global_id_x();
    if i < 2 {
        out[i] = one_name::SECOND[i];
    }
}

#[test]
fn two_host_statics_of_one_explicit_name_are_refused_naming_both() {
    let _g = serial();
    let here = file!();
    let first = format!("{here}:{}", line_of("pub static FIRST"));
    let second = format!("{here}:{}", line_of("pub static SECOND"));
    // In one kernel: refused when it is built.
    match reads_both::program() {
        Err(Error::KernelBuild { kernel, reason }) => {
            assert_eq!(kernel, "reads_both");
            assert!(reason.contains("\"tests.rust_semantics.SAME\""), "{reason}");
            assert!(reason.contains(&first) && reason.contains(&second), "{reason}");
        }
        other => panic!("expected the conflict, got {other:?}"),
    }
    // In two kernels on one context: the second to load is refused; on
    // another context it is fine.
    let ctx = cpu();
    let mut out = ctx.zeros::<u32>(2).expect("zeros");
    let s = ctx.stream();
    reads_first::launch(&s, Grid::new(1, 2), &mut out).expect("launch");
    s.synchronize().expect("runs");
    assert_eq!(out.download().expect("download"), [1, 2]);
    match reads_second::launch(&s, Grid::new(1, 2), &mut out) {
        Err(e @ Error::HostStaticConflict { .. }) => {
            let text = e.to_string();
            assert!(text.contains(&first) && text.contains(&second), "{text}");
        }
        other => panic!("expected the conflict, got {other:?}"),
    }
    let other = cpu();
    let mut out = other.zeros::<u32>(2).expect("zeros");
    let s = other.stream();
    reads_second::launch(&s, Grid::new(1, 2), &mut out).expect("launch");
    s.synchronize().expect("runs");
    assert_eq!(out.download().expect("download"), [3, 4]);
}

/// The line (1-based) of the first line of this file holding `needle`.
fn line_of(needle: &str) -> usize {
    include_str!("rust_semantics.rs").lines().position(|l| l.contains(needle)).expect("in this file") + 1
}

// 3. `#[cfg]` on statements.

#[relok::kernel]
fn configured(out: &mut [u32]) {
    let i = relok::global_id_x();
    if i == 0 {
        #[cfg(any())]
        {
            out[0] = 1;
        }
        #[cfg(not(any()))]
        {
            out[1] = 2;
        }
        #[cfg(debug_assertions)]
        out[2] = 3;
        #[cfg(not(debug_assertions))]
        out[2] = 4;
        #[cfg(any())]
        let k = 10u32;
        #[cfg(not(any()))]
        let k = 20u32;
        out[3] = k;
        #[cfg(any())]
        return;
        out[4] = 5;
        #[cfg(any())]
        panic!("compiled out");
        #[cfg(any())]
        out[6] = 7;
        #[cfg(any())]
        out[6] += 7;
        #[cfg(not(any()))]
        out[7] = 8;
        debug_assert!(out[0] == 1, "only in debug builds");
        out[5] = 6;
    }
}

#[test]
fn cfg_on_a_kernels_statements_is_decided_as_rustc_decides_it() {
    let _g = serial();
    let debug = cfg!(debug_assertions);
    for ctx in contexts(Strategy::Table) {
        let mut out = ctx.zeros::<u32>(8).expect("zeros");
        let s = ctx.stream();
        configured::launch(&s, Grid::new(1, 1), &mut out).expect("launch");
        let r = s.synchronize();
        assert_eq!(r.is_err(), debug, "debug_assert! runs only with debug assertions: {r:?}");
        let want = if debug { [0, 2, 3, 20, 5, 0, 0, 8] } else { [0, 2, 4, 20, 5, 6, 0, 8] };
        assert_eq!(out.download().expect("download"), want, "{}", ctx.device_name());
    }
}

// 5. The value before the place.

/// Appends `k` to `log` (`log[0]` counts the entries) and returns `k`.
#[relok::device]
fn note(log: &mut [u32], k: u32) -> usize {
    let n = log[0] as usize;
    log[n + 1] = k;
    log[0] = log[0] + 1;
    k as usize
}

#[relok::kernel]
fn order(log: &mut [u32], out: &mut [u32]) {
    let i = relok::global_id_x();
    if i == 0 {
        out[note(log, 1)] = note(log, 2) as u32;
        out[note(log, 3)] += note(log, 4) as u32;
        let mut a = [0u32; 8];
        a[note(log, 5)] = note(log, 6) as u32;
        out[5] = a[5];
    }
}

#[test]
fn an_assignment_evaluates_the_value_before_the_place_as_rust_does() {
    let _g = serial();
    // What Rust computes, on the host.
    let mut log = [0u32; 7];
    let mut out = [0u32; 6];
    let note = |log: &mut [u32; 7], k: u32| -> usize {
        let n = log[0] as usize;
        log[n + 1] = k;
        log[0] += 1;
        k as usize
    };
    out[note(&mut log, 1)] = note(&mut log, 2) as u32;
    out[note(&mut log, 3)] += note(&mut log, 4) as u32;
    let mut a = [0u32; 8];
    a[note(&mut log, 5)] = note(&mut log, 6) as u32;
    out[5] = a[5];
    assert_eq!(log, [6, 2, 1, 4, 3, 6, 5]);
    for ctx in contexts(Strategy::Table) {
        let mut dlog = ctx.zeros::<u32>(7).expect("zeros");
        let mut dout = ctx.zeros::<u32>(6).expect("zeros");
        let s = ctx.stream();
        order::launch(&s, Grid::new(1, 1), &mut dlog, &mut dout).expect("launch");
        s.synchronize().expect("runs");
        assert_eq!(dlog.download().expect("download"), log, "{}", ctx.device_name());
        assert_eq!(dout.download().expect("download"), out, "{}", ctx.device_name());
    }
}

// 7. A `usize` constant above `u32::MAX`.

const BIG: usize = 5_000_000_000;

#[relok::kernel]
fn big_index(out: &mut [u32]) {
    let i = relok::global_id_x();
    if i < BIG {
        out[0] = 1;
    }
}

#[test]
fn a_usize_const_above_u32_max_is_refused_not_truncated() {
    match big_index::program() {
        Err(Error::KernelBuild { kernel, reason }) => {
            assert_eq!(kernel, "big_index");
            assert!(reason.contains("does not fit the device's usize"), "{reason}");
        }
        other => panic!("expected the refusal, got {other:?}"),
    }
}

// 8. Mutual recursion through generic device functions.

#[relok::device]
fn ping<T: relok::Number>(x: T) -> T {
    pong(x)
}

#[relok::device]
fn pong<T: relok::Number>(x: T) -> T {
    ping(x)
}

#[relok::kernel]
fn bounces(x: &mut [u32]) {
    let i = relok::global_id_x();
    if i < x.len() {
        x[i] = ping(x[i]);
    }
}

#[test]
fn mutually_recursive_generic_device_functions_are_a_typed_error_naming_the_cycle() {
    match bounces::program() {
        Err(Error::KernelBuild { kernel, reason }) => {
            assert_eq!(kernel, "bounces");
            let m = module_path!();
            assert!(
                reason.contains(&format!("recursion is not supported: {m}::ping → {m}::pong → {m}::ping")),
                "{reason}"
            );
        }
        other => panic!("expected the refusal, got {other:?}"),
    }
    let ctx = cpu();
    let mut x = ctx.zeros::<u32>(1).expect("zeros");
    let err = bounces::launch(&ctx.stream(), Grid::new(1, 1), &mut x).expect_err("refused at launch too");
    assert!(matches!(err, Error::KernelBuild { .. }), "{err:?}");
}
