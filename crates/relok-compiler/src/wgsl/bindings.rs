//! The interface between WGSL code and the device that runs it
//! (docs/wgpu.md): the ONE place that says which binding holds what and how
//! the arguments buffer is laid out. The writer declares and reads exactly
//! these, [`super::check_code`] checks an artifact against them, and a wgpu
//! device binds and fills them (the tests below check the written WGSL
//! against this description, as `state.rs`'s tests check the kernel state
//! against its host struct).
//!
//! Every binding is a storage buffer of bind group [`GROUP`]:
//!
//! | binding | WGSL variable | what |
//! |---|---|---|
//! | [`EXCEPTION`] (0) | `relok_exception: array<atomic<u32>, 20>` | the launch's exception record ([`EXCEPTION_LAYOUT`] as 32-bit halves) |
//! | [`ARGS`] (1) | `relok_args: array<u32>` | the seed and the scalar arguments, in 32-bit slots ([`scalar_slot`]) |
//! | [`TABLE`] (2) | `relok_table: array<vec2<u32>>` | the relocation table (`table`), one word per record in rank order |
//! | [`HEAP`] (3) | `relok_heap: array<u32>` | the device's object heap: a host object's word is its byte offset here |
//! | [`buffer_binding`]`(i)` (4 + i) | `p<i>: array<u32>` | the kernel's i-th pointer (buffer) parameter, bound whole |
//!
//! The heap and the buffers hold plain `u32` words, or `atomic<u32>` words
//! in code that makes an atomic access to them ([`Binding::atomic_ty`];
//! WGSL accesses an `atomic<u32>` only atomically, so the whole array is
//! atomic then). The exception record is always atomic: only the fault
//! path touches it, through compare-and-swap.
//!
//! The arguments buffer, in 32-bit slots: `rng_seed` in slots
//! [`SEED_SLOT`] and [`SEED_SLOT`]` + 1` (low, high); then two slots per
//! scalar parameter in parameter order ([`scalar_slot`]; a 32-bit value in
//! the first, a 64-bit one low then high); last, one zero slot, which the
//! code reads as `relok_zero`, a zero the driver cannot see through
//! ([`args_len`], [`args_words`]).

use crate::state::EXCEPTION_LAYOUT;
use std::borrow::Cow;

/// The bind group of every binding.
pub const GROUP: u32 = 0;
/// The binding of the launch's exception record (read-write).
pub const EXCEPTION: u32 = 0;
/// The binding of the arguments buffer (read-only).
pub const ARGS: u32 = 1;
/// The binding of the relocation table (read-only).
pub const TABLE: u32 = 2;
/// The binding of the device's object heap (read-write).
pub const HEAP: u32 = 3;
/// The binding of the first buffer parameter; the others follow.
pub const FIRST_BUFFER: u32 = 4;

/// The WGSL variable bound at [`EXCEPTION`].
pub const EXCEPTION_VAR: &str = "relok_exception";
/// The WGSL variable bound at [`ARGS`].
pub const ARGS_VAR: &str = "relok_args";
/// The WGSL variable bound at [`TABLE`].
pub const TABLE_VAR: &str = "relok_table";
/// The WGSL variable bound at [`HEAP`].
pub const HEAP_VAR: &str = "relok_heap";

/// 32-bit words of the exception record ([`EXCEPTION_LAYOUT`]).
pub const EXCEPTION_WORDS: u32 = EXCEPTION_LAYOUT.size / 4;

/// The binding of the kernel's `i`-th buffer (pointer) parameter.
pub const fn buffer_binding(i: usize) -> u32 {
    FIRST_BUFFER + i as u32
}

/// How many bindings a kernel with `buffers` buffer parameters has: they
/// are numbered `0..binding_count(buffers)`.
pub const fn binding_count(buffers: usize) -> u32 {
    buffer_binding(buffers)
}

/// The WGSL variable bound to the `i`-th buffer parameter.
pub fn buffer_var(i: usize) -> String {
    format!("p{i}")
}

/// One binding as the WGSL declares it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Binding {
    /// Its number in [`GROUP`].
    pub binding: u32,
    /// Whether the code only reads it (`var<storage, read>`).
    pub read_only: bool,
    /// The WGSL variable.
    pub var: Cow<'static, str>,
    /// The variable's WGSL type in code that makes no atomic access to it.
    pub ty: Cow<'static, str>,
    /// The type code that makes an atomic access to it declares instead
    /// (`array<atomic<u32>>`), where one may: the heap and the buffers.
    pub atomic_ty: Option<&'static str>,
}

impl Binding {
    /// The WGSL declaration in code without atomic accesses to it, e.g.
    /// `@group(0) @binding(1) var<storage, read> relok_args: array<u32>;`.
    pub fn declaration(&self) -> String {
        self.declaration_as(false)
    }

    /// The WGSL declaration in code that makes (`atomic`) or does not make
    /// atomic accesses to it: [`Binding::atomic_ty`] or [`Binding::ty`].
    pub fn declaration_as(&self, atomic: bool) -> String {
        let access = if self.read_only { "read" } else { "read_write" };
        let ty = match self.atomic_ty {
            Some(t) if atomic => t,
            _ => &self.ty,
        };
        format!("@group({GROUP}) @binding({}) var<storage, {access}> {}: {ty};", self.binding, self.var)
    }

    /// Whether `line` declares this binding (either way it may be
    /// declared).
    pub fn accepts(&self, line: &str) -> bool {
        line == self.declaration_as(false) || (self.atomic_ty.is_some() && line == self.declaration_as(true))
    }
}

/// The type of a word array that atomics touch.
const ATOMIC_WORDS: &str = "array<atomic<u32>>";

/// Every binding of a kernel with `buffers` buffer parameters, in binding
/// order.
pub fn bindings(buffers: usize) -> Vec<Binding> {
    let fixed = |binding, read_only, var: &'static str, ty: Cow<'static, str>, atomic_ty| Binding {
        binding,
        read_only,
        var: var.into(),
        ty,
        atomic_ty,
    };
    let mut out = vec![
        fixed(EXCEPTION, false, EXCEPTION_VAR, format!("array<atomic<u32>, {EXCEPTION_WORDS}>").into(), None),
        fixed(ARGS, true, ARGS_VAR, "array<u32>".into(), None),
        fixed(TABLE, true, TABLE_VAR, "array<vec2<u32>>".into(), None),
        fixed(HEAP, false, HEAP_VAR, "array<u32>".into(), Some(ATOMIC_WORDS)),
    ];
    out.extend((0..buffers).map(|i| Binding {
        binding: buffer_binding(i),
        read_only: false,
        var: buffer_var(i).into(),
        ty: "array<u32>".into(),
        atomic_ty: Some(ATOMIC_WORDS),
    }));
    out
}

/// The first of the two slots of `rng_seed` (low, then high).
pub const SEED_SLOT: usize = 0;
/// Slots per scalar parameter (a 32-bit value uses the first).
pub const SLOTS_PER_SCALAR: usize = 2;

/// The first slot of the kernel's `i`-th scalar parameter.
pub const fn scalar_slot(i: usize) -> usize {
    SEED_SLOT + 2 + SLOTS_PER_SCALAR * i
}

/// Slots of the arguments buffer of a kernel with `scalars` scalar
/// parameters: the seed, theirs, and the trailing zero.
pub const fn args_len(scalars: usize) -> usize {
    scalar_slot(scalars) + 1
}

/// The arguments buffer's slots for a launch with `seed` and the scalar
/// arguments' bits `scalars` (zero-extended, in parameter order).
pub fn args_words(seed: u64, scalars: &[u64]) -> Vec<u32> {
    let mut out = vec![0; args_len(scalars.len())];
    let mut put = |slot: usize, bits: u64| {
        out[slot] = bits as u32;
        out[slot + 1] = (bits >> 32) as u32;
    };
    put(SEED_SLOT, seed);
    for (i, &bits) in scalars.iter().enumerate() {
        put(scalar_slot(i), bits);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::artifact::{CodeTarget, CompileOptions, compile};
    use crate::stencil::Stencil;
    use relok_ir::Strategy;

    /// Pointer and scalar parameters interleaved, every scalar type, the
    /// seed and a float product (which reads the trailing zero).
    const K: &str = "\
kernel @k(v0: u32, v1: ptr<global, u32>, v2: f64, v3: ptr<global, f32>, v4: i32, v5: bool, v6: f32, v7: u64, v8: ptr<global, u64>) {
    v9: u64 = state.rng_seed
    v10: u32 = const 0
    store v8[v10], v9
    v11: f32 = mul v6, v6
    store v3[v10], v11
    return
}
";

    fn wgsl(strategy: Strategy) -> String {
        let m = relok_ir::VerifiedModule::new(relok_ir::parse(K).unwrap()).expect("verifies");
        relok_ir::verify(&m).unwrap();
        let s = Stencil::new(&m, "k").unwrap();
        let words = |_: &crate::reloc::Target| Ok(0);
        let a = compile(
            &s,
            CodeTarget::Wgsl,
            strategy,
            CompileOptions { optimize: false, ..CompileOptions::default() },
            Some(&words),
        )
        .unwrap();
        String::from_utf8(a.code).unwrap()
    }

    #[test]
    fn written_wgsl_declares_exactly_these_bindings() {
        for s in CodeTarget::Wgsl.strategies() {
            let text = wgsl(*s);
            let declared: Vec<&str> = text.lines().filter(|l| l.starts_with("@group(")).collect();
            let expected: Vec<String> = bindings(3).iter().map(Binding::declaration).collect();
            assert_eq!(declared, expected, "{s}");
            let params: Vec<relok_ir::Type> =
                ["u32", "ptr<global, u32>", "f64", "ptr<global, f32>", "i32", "bool", "f32", "u64", "ptr<global, u64>"]
                    .iter()
                    .map(|t| relok_ir::parse_type(t).unwrap())
                    .collect();
            assert_eq!(super::super::check_code(&text, "k", &params), Ok(()), "{s}");
            let two_buffers = &params[..params.len() - 1];
            assert!(super::super::check_code(&text, "k", two_buffers).is_err(), "{s}");
        }
    }

    #[test]
    fn written_wgsl_reads_the_argument_slots() {
        let text = wgsl(Strategy::Table);
        let a = ARGS_VAR;
        let (s0, s1) = (SEED_SLOT, SEED_SLOT + 1);
        // Scalars in parameter order, skipping the buffers.
        let reads = [
            ("v0", format!("{a}[{}]", scalar_slot(0))),
            ("v2", format!("vec2<u32>({a}[{}], {a}[{}])", scalar_slot(1), scalar_slot(1) + 1)),
            ("v4", format!("bitcast<i32>({a}[{}])", scalar_slot(2))),
            ("v5", format!("{a}[{}] != 0u", scalar_slot(3))),
            ("v6", format!("bitcast<f32>({a}[{}])", scalar_slot(4))),
            ("v7", format!("vec2<u32>({a}[{}], {a}[{}])", scalar_slot(5), scalar_slot(5) + 1)),
            ("v9", format!("vec2<u32>({a}[{s0}], {a}[{s1}])")),
        ];
        for (v, e) in reads {
            assert!(
                text.lines()
                    .any(|l| l.trim_start().starts_with(&format!("let {v}: ")) && l.ends_with(&format!(" = {e};"))),
                "{v} = {e}:\n{text}"
            );
        }
        // Buffers by their variable, the zero from the last slot.
        assert!(text.contains(&format!(" {}[", buffer_var(2))), "{text}");
        assert!(text.contains(&format!("let relok_zero: u32 = {a}[arrayLength(&{a}) - 1u];")), "{text}");
    }

    #[test]
    fn args_words_follow_the_slots() {
        let w = args_words(0x1111_2222_3333_4444, &[7, 0x5555_6666_7777_8888]);
        assert_eq!(w.len(), args_len(2));
        assert_eq!(&w[SEED_SLOT..SEED_SLOT + 2], [0x3333_4444, 0x1111_2222]);
        assert_eq!(&w[scalar_slot(0)..scalar_slot(0) + 2], [7, 0]);
        assert_eq!(&w[scalar_slot(1)..scalar_slot(1) + 2], [0x7777_8888, 0x5555_6666]);
        assert_eq!(w.last(), Some(&0), "the trailing zero");
        assert_eq!(args_len(0), 3);
    }

    #[test]
    fn the_exception_binding_holds_the_exception_record() {
        assert_eq!(EXCEPTION_WORDS * 4, EXCEPTION_LAYOUT.size);
        assert_eq!(bindings(0)[EXCEPTION as usize].ty, "array<atomic<u32>, 20>");
        // Numbered densely from 0, the fixed ones first.
        let b = bindings(2);
        assert!(b.iter().enumerate().all(|(i, b)| b.binding == i as u32));
        assert_eq!(b.len() as u32, binding_count(2));
        assert_eq!([EXCEPTION, ARGS, TABLE, HEAP, FIRST_BUFFER], [0, 1, 2, 3, 4]);
    }
}
