//! What every device shares about a launch: device addresses, kernel
//! arguments, the geometry and its limits, and the checks of both against a
//! kernel's signature that every device runs before anything reaches it.

use crate::error::LaunchError;
use relok_ir::{AddrSpace, Scalar, Type};

/// A device address: global memory of one device (a `wgpu` device packs a
/// buffer id and an offset into it).
#[derive(Copy, Clone, PartialEq, Eq, Debug, Hash)]
pub struct DevicePtr(pub u64);

impl DevicePtr {
    /// The address `bytes` further on.
    pub const fn offset(self, bytes: u64) -> DevicePtr {
        DevicePtr(self.0.wrapping_add(bytes))
    }
}

/// A kernel argument.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Hash)]
pub enum KernelArg {
    /// A scalar parameter: its bits zero-extended as in
    /// [`relok_ir::Op::Const`] (`word` parameters: `Scalar { ty: Word, bits }`).
    Scalar {
        /// The parameter's scalar type.
        ty: Scalar,
        /// The value's bits.
        bits: u64,
    },
    /// A `ptr<global, T>` (or `ptr<const, T>`) parameter.
    Ptr(DevicePtr),
}

impl KernelArg {
    /// A `u32` argument.
    pub const fn u32(x: u32) -> KernelArg {
        KernelArg::Scalar { ty: Scalar::U32, bits: x as u64 }
    }
    /// An `i32` argument.
    pub const fn i32(x: i32) -> KernelArg {
        KernelArg::Scalar { ty: Scalar::I32, bits: x as u32 as u64 }
    }
    /// A `u64` argument.
    pub const fn u64(x: u64) -> KernelArg {
        KernelArg::Scalar { ty: Scalar::U64, bits: x }
    }
    /// An `i64` argument.
    pub const fn i64(x: i64) -> KernelArg {
        KernelArg::Scalar { ty: Scalar::I64, bits: x as u64 }
    }
    /// An `f32` argument.
    pub fn f32(x: f32) -> KernelArg {
        KernelArg::Scalar { ty: Scalar::F32, bits: u64::from(x.to_bits()) }
    }
    /// An `f64` argument.
    pub fn f64(x: f64) -> KernelArg {
        KernelArg::Scalar { ty: Scalar::F64, bits: x.to_bits() }
    }
    /// A `bool` argument.
    pub const fn bool(x: bool) -> KernelArg {
        KernelArg::Scalar { ty: Scalar::Bool, bits: x as u64 }
    }
    /// A `word` argument.
    pub const fn word(x: u64) -> KernelArg {
        KernelArg::Scalar { ty: Scalar::Word, bits: x }
    }
}

/// Launch geometry and limits.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Hash)]
pub struct LaunchConfig {
    /// Blocks per grid along x, y, z (x up to 2^31 - 1, y and z up to 65535).
    pub grid: [u32; 3],
    /// Threads per block along x, y, z (at most 1024 in all, z at most 64).
    pub block: [u32; 3],
    /// Instructions the whole launch may execute.
    pub step_budget: u64,
}

impl LaunchConfig {
    /// The default step budget: 2^32 instructions.
    pub const DEFAULT_STEP_BUDGET: u64 = 1 << 32;

    /// Threads in all (blocks times threads per block), saturating at
    /// `u64::MAX` (the largest legal grid of 1024-thread blocks has 2^73).
    pub fn threads(&self) -> u64 {
        self.grid.iter().chain(&self.block).fold(1u64, |n, &d| n.saturating_mul(u64::from(d)))
    }

    /// A one-dimensional launch of `grid` blocks of `block` threads.
    pub const fn linear(grid: u32, block: u32) -> LaunchConfig {
        LaunchConfig { grid: [grid, 1, 1], block: [block, 1, 1], step_budget: Self::DEFAULT_STEP_BUDGET }
    }
}

impl Default for LaunchConfig {
    fn default() -> LaunchConfig {
        LaunchConfig::linear(1, 1)
    }
}

/// What a successful launch did.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Hash, Default)]
pub struct LaunchStats {
    /// Instructions executed.
    pub steps: u64,
    /// Threads launched.
    pub threads: u64,
}

/// Checks the geometry, and that the block is the kernel's `required`
/// shape where it has one ([`relok_ir::Function::block`]); returns the
/// number of threads.
pub fn check_config(kernel: &str, c: &LaunchConfig, required: Option<[u32; 3]>) -> Result<u64, LaunchError> {
    let bad = |reason: String| Err(LaunchError::BadLaunchConfig { kernel: kernel.to_owned(), reason });
    if c.grid.contains(&0) {
        return bad(format!("zero dimension in grid {:?}", c.grid));
    }
    if let Some(why) = relok_ir::block_shape_problem(c.block) {
        return bad(why);
    }
    if let Some(b) = required
        && b != c.block
    {
        return bad(format!(
            "the kernel requires blocks of {b:?} threads (its `block` shape), and the launch has {:?}",
            c.block
        ));
    }
    if c.grid[0] > i32::MAX as u32 || c.grid[1] > 65535 || c.grid[2] > 65535 {
        return bad(format!("grid {:?} exceeds (2^31-1, 65535, 65535)", c.grid));
    }
    Ok(c.threads())
}

/// Checks arguments against the kernel's parameters; returns their bits.
pub fn check_args(kernel: &str, params: &[Type], args: &[KernelArg]) -> Result<Vec<u64>, LaunchError> {
    if params.len() != args.len() {
        return Err(LaunchError::ArgCount { kernel: kernel.to_owned(), expected: params.len(), found: args.len() });
    }
    params
        .iter()
        .zip(args)
        .enumerate()
        .map(|(index, (ty, arg))| {
            let mismatch = |why: String| LaunchError::ArgType {
                kernel: kernel.to_owned(),
                index,
                param: format!("v{index}"),
                expected: ty.clone(),
                why,
            };
            match (ty, *arg) {
                (Type::Scalar(s), KernelArg::Scalar { ty: t, bits }) if *s == t => {
                    if t == Scalar::Word || relok_ir::typing::literal_fits(t, bits) {
                        Ok(bits)
                    } else {
                        Err(mismatch(format!("bits {bits:#x} do not fit {t}")))
                    }
                }
                (Type::Scalar(_), KernelArg::Scalar { ty: t, .. }) => {
                    Err(mismatch(format!("a {t} argument was given")))
                }
                (Type::Ptr(AddrSpace::Global | AddrSpace::Const, _), KernelArg::Ptr(p)) => Ok(p.0),
                (Type::Ptr(space, _), KernelArg::Ptr(_)) => {
                    Err(mismatch(format!("{space} pointers cannot be kernel arguments")))
                }
                (_, KernelArg::Ptr(_)) => Err(mismatch("a pointer argument was given".to_owned())),
                (_, KernelArg::Scalar { ty: t, .. }) => Err(mismatch(format!("a {t} argument was given"))),
            }
        })
        .collect()
}

/// Checks the launch's length arguments ([`relok_ir::LenParam`]): each
/// `(len, of)` pair of parameter indices says that argument `len` counts
/// elements of the pointer argument `of`, so it must be at most the
/// elements of `of`'s pointee from that pointer to the end of its buffer.
/// `bytes_from(p)` is the bytes from device address `p` to the end of the
/// allocation it points into, 0 when it points into none. `values` are
/// the arguments' bits ([`check_args`]). A device runs this wherever it
/// checks accesses (the cpu device always, a GPU in checked mode): an
/// index below a checked length is then an access in bounds.
pub fn check_lens(
    kernel: &str,
    params: &[Type],
    lens: &[(usize, usize)],
    values: &[u64],
    mut bytes_from: impl FnMut(u64) -> u64,
) -> Result<(), LaunchError> {
    for &(len, of) in lens {
        let (Some(&n), Some(&p), Some(Type::Ptr(_, elem))) = (values.get(len), values.get(of), params.get(of)) else {
            continue;
        };
        let size = elem.size().unwrap_or(1).max(1);
        let room = bytes_from(p) / u64::from(size);
        if n > room {
            return Err(LaunchError::ArgType {
                kernel: kernel.to_owned(),
                index: len,
                param: format!("v{len}"),
                expected: Type::Scalar(Scalar::U32),
                why: format!(
                    "the length of v{of} is {n}, more than the {room} {elem} elements from v{of} to the end of its buffer"
                ),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{LaunchConfig, check_config};

    #[test]
    fn the_largest_legal_grid_counts_its_threads_without_overflow() {
        let c = LaunchConfig { grid: [i32::MAX as u32, 65535, 65535], block: [1024, 1, 1], step_budget: 1 };
        assert_eq!(check_config("k", &c, None).unwrap(), u64::MAX);
        assert_eq!(LaunchConfig::linear(3, 4).threads(), 12);
        let too_big = LaunchConfig { grid: [u32::MAX, 1, 1], ..c };
        assert!(check_config("k", &too_big, None).is_err());
    }

    #[test]
    fn block_shapes_whose_product_would_wrap_are_refused_by_dimension() {
        // (2^31, 2^31, 16) multiplies to 2^66: 0 in u64, under any limit.
        for block in [[1 << 31, 1 << 31, 16], [u32::MAX; 3], [2048, 1, 1], [1, 2048, 1], [1, 1, 65], [1, 16, 128]] {
            let c = LaunchConfig { grid: [1, 1, 1], block, step_budget: 1 };
            let e = check_config("k", &c, None).unwrap_err().to_string();
            assert!(e.contains("exceeds (1024, 1024, 64)"), "{block:?}: {e}");
        }
        let c = LaunchConfig { grid: [1, 1, 1], block: [64, 16, 2], step_budget: 1 };
        assert!(check_config("k", &c, None).unwrap_err().to_string().contains("2048 threads, more than 1024"));
        let c = LaunchConfig { grid: [1, 1, 1], block: [16, 1, 64], step_budget: 1 };
        assert_eq!(check_config("k", &c, None).unwrap(), 1024);
    }

    #[test]
    fn a_kernel_with_a_block_shape_launches_with_that_shape_only() {
        let c = LaunchConfig { grid: [2, 1, 1], block: [16, 16, 1], step_budget: 1 };
        assert_eq!(check_config("k", &c, Some([16, 16, 1])).unwrap(), 512);
        for block in [[256, 1, 1], [16, 8, 1], [16, 16, 2]] {
            let e = check_config("mm", &LaunchConfig { block, ..c }, Some([16, 16, 1])).unwrap_err().to_string();
            assert!(e.contains("mm") && e.contains("requires blocks of [16, 16, 1]"), "{block:?}: {e}");
        }
    }
}
