//! The runtime library's throws (`@relok_throw`, `@relok_throw_with`,
//! [`crate::link`]) on WGSL, written once, out of line.
//!
//! Inlined, every throw site — a Rust kernel has one per bounds check, and
//! more in each unrolled copy of a loop — held the whole record's writing
//! (about 60 lines of WGSL), which made a Rust kernel's WGSL several times
//! its `.rk` twin's and its first pipeline slow to create (docs/wgpu.md,
//! "Cold compiles"). So for WGSL the optimiser keeps the library's two
//! throws as functions (`crate::passes::inline_keeping`), each call
//! followed by the `exit` the throw ends in; the writer writes each used
//! throw as a WGSL function of its own (the block and thread ids passed
//! in: WGSL's built-ins belong to the entry point), and a call of one as
//! the call, then the `exit` after it as `return`. Recording is the library's protocol, as
//! [`super::record_fault`] writes it: the first thread claims the flag
//! 0 → 1 (`atomicMax`), writes the message word and its ids and, for
//! `@relok_throw_with`, the two values, then adds 1 to the flag (flag 2:
//! the record has values).
//!
//! Only the library's own definitions are kept so
//! ([`crate::link::library_throws`]): a function of the same name that is
//! not the library's text is inlined as any other.

/// The WGSL function of throw `name`: the message word, then (for
/// `relok_throw_with`) the two values, then the block and thread ids.
pub(crate) fn declaration(name: &str) -> String {
    let with = name == "relok_throw_with";
    let values = crate::state::EXCEPTION_LAYOUT.values.offset / 4;
    let mut then = String::new();
    let mut params = "m: vec2<u32>".to_owned();
    if with {
        params.push_str(", x: vec2<u32>, y: vec2<u32>");
        for (k, v) in ["x.x", "x.y", "y.x", "y.y"].into_iter().enumerate() {
            then.push_str(&format!("        atomicStore(&relok_exception[{}], {v});\n", values + k as u32));
        }
        then.push_str("        atomicAdd(&relok_exception[0], 1u);\n");
    }
    let mut s = format!("fn {name}({params}, b: vec3<u32>, t: vec3<u32>) {{\n");
    s.push_str(&super::record_fault_then("m.x", "m.y", &then));
    s.push_str("}\n\n");
    s
}
