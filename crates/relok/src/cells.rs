//! The runtime globals relok writes itself for Rust kernels, named in one
//! place: each `#[relok::host]` static's cell ([`global_name`]); and
//! [`HostObject`], what a host static is to the code that delivers its
//! bytes. The builder (`rust_kernel/`) names these cells in the IR, the
//! program's glue (`program/rust.rs`) fills and reads them; this module
//! imports nothing of the facade.

/// A `#[relok::host] static` (see the module docs).
pub trait HostObject: Sync + std::fmt::Debug {
    /// The static's path (`crate::tables::LUT`): its identity.
    fn path(&self) -> &'static str;
    /// Its bytes now.
    fn bytes(&self) -> &'static [u8];
    /// Where it is defined (`file:line`), for messages.
    fn location(&self) -> &'static str;
}

/// Whether `a` and `b` are one static (one companion, at one address).
pub(crate) fn same_static(a: &dyn HostObject, b: &dyn HostObject) -> bool {
    std::ptr::addr_eq(std::ptr::from_ref(a), std::ptr::from_ref(b))
}

/// What every host static's runtime global starts with ([`global_name`]).
const GLOBAL_PREFIX: &str = "relok_host_";

/// An injective spelling of a `::`-separated name (a Rust path, or a
/// host static's explicit `name = "…"`) in `[A-Za-z0-9_]`: each segment
/// as the length of its escaped text, then that text, where an ASCII
/// letter or digit stays itself (a digit that starts the segment
/// excepted), `_` is written `__` and any other character `_<hex>_` (its
/// code point). So `p__a::b::T` and `p::a::b::T`, or `café` and `cafè`,
/// are told apart: two names give one spelling only when they are equal.
///
/// ```
/// use relok::__kernel::mangle_path;
/// assert_eq!(mangle_path("a::f"), "1a1f");
/// assert_ne!(mangle_path("p__a::b::T"), mangle_path("p::a::b::T"));
/// assert_ne!(mangle_path("café"), mangle_path("cafè"));
/// ```
pub fn mangle_path(path: &str) -> String {
    let mut out = String::new();
    for seg in path.split("::") {
        let mut esc = String::new();
        for (k, c) in seg.chars().enumerate() {
            if c.is_ascii_alphabetic() || (c.is_ascii_digit() && k > 0) {
                esc.push(c);
            } else if c == '_' {
                esc.push_str("__");
            } else {
                esc.push_str(&format!("_{:x}_", u32::from(c)));
            }
        }
        out.push_str(&esc.len().to_string());
        out.push_str(&esc);
    }
    out
}

/// The runtime global of the host static at `path`: `relok_host_` then
/// the path's [`mangle_path`] (injective: two statics share a cell only
/// when their identities are equal).
pub fn global_name(path: &str) -> String {
    format!("{GLOBAL_PREFIX}{}", mangle_path(path))
}

/// The IR name of the `#[relok::device]` function at `path`
/// (`module_path!()::name`): `_R` then the path's [`mangle_path`], so
/// functions of one name in two modules are two functions.
pub fn device_name(path: &str) -> String {
    format!("_R{}", mangle_path(path))
}

/// Whether `name` is of the form [`global_name`] gives (`relok_host_…`).
pub(crate) fn is_global_name(name: &str) -> bool {
    name.starts_with(GLOBAL_PREFIX)
}
