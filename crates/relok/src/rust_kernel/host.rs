//! `#[relok::host]` statics: the companion [`HostStatic`] a static gets,
//! named by its path, and the runtime global its bytes go to.

use super::staged::DevScalar;

/// A `#[relok::host] static` (see the module docs).
pub trait HostObject: Sync + std::fmt::Debug {
    /// The static's path (`crate::tables::LUT`): its identity.
    fn path(&self) -> &'static str;
    /// Its bytes now.
    fn bytes(&self) -> &'static [u8];
}

/// Plain old data a host static may hold (arrays of scalars).
pub trait HostData: 'static {
    /// The element scalar.
    type Elem: DevScalar;
    /// Elements.
    const LEN: u32;
    /// The bytes.
    fn bytes(&'static self) -> &'static [u8];
}

macro_rules! host_data {
    ($($t:ty),*) => {$(
        impl<const N: usize> HostData for [$t; N] {
            type Elem = $t;
            const LEN: u32 = N as u32;
            fn bytes(&'static self) -> &'static [u8] {
                bytemuck::cast_slice(self)
            }
        }
    )*};
}
host_data!(i32, u32, i64, u64, f32, f64);

/// The companion of `#[relok::host] static NAME: T`.
#[derive(Debug)]
pub struct HostStatic<T: 'static> {
    path: &'static str,
    value: &'static T,
}

impl<T: HostData + Sync + std::fmt::Debug> HostStatic<T> {
    /// The static at `path`.
    pub const fn new(path: &'static str, value: &'static T) -> HostStatic<T> {
        HostStatic { path, value }
    }
}

impl<T: HostData + Sync + std::fmt::Debug> HostObject for HostStatic<T> {
    fn path(&self) -> &'static str {
        self.path
    }
    fn bytes(&self) -> &'static [u8] {
        self.value.bytes()
    }
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
