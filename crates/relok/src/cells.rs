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
}

/// What every host static's runtime global starts with ([`global_name`]).
const GLOBAL_PREFIX: &str = "relok_host";
/// What comes before each segment of the path in it.
const SEGMENT: &str = "__";

/// The runtime global of the host static at `path`: `relok_host` then the
/// path's segments, `::` written `__`.
pub fn global_name(path: &str) -> String {
    let mut name = String::from(GLOBAL_PREFIX);
    for seg in path.split("::") {
        name.push_str(SEGMENT);
        name.extend(seg.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }));
    }
    name
}

/// Whether `name` is of the form [`global_name`] gives (`relok_host__…`).
pub(crate) fn is_global_name(name: &str) -> bool {
    name.strip_prefix(GLOBAL_PREFIX).is_some_and(|rest| rest.starts_with(SEGMENT))
}
