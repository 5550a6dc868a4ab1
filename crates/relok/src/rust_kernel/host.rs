//! `#[relok::host]` statics: the companion [`HostStatic`] a static gets,
//! named by its path, and the runtime global its bytes go to.

use super::staged::DevScalar;
use crate::cells::HostObject;

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
host_data!(u8, i8, u16, i16, i32, u32, i64, u64, f32, f64);

/// The companion of `#[relok::host] static NAME: T`.
#[derive(Debug)]
pub struct HostStatic<T: 'static> {
    path: &'static str,
    location: &'static str,
    value: &'static T,
}

impl<T: HostData + Sync + std::fmt::Debug> HostStatic<T> {
    /// The static at `path`, defined at `location` (`file:line`).
    pub const fn new(path: &'static str, location: &'static str, value: &'static T) -> HostStatic<T> {
        HostStatic { path, location, value }
    }
}

impl<T: HostData + Sync + std::fmt::Debug> HostObject for HostStatic<T> {
    fn path(&self) -> &'static str {
        self.path
    }
    fn bytes(&self) -> &'static [u8] {
        self.value.bytes()
    }
    fn location(&self) -> &'static str {
        self.location
    }
}
