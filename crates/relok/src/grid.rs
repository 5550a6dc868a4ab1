//! [`Grid`]: the shape of a launch — blocks, threads per block, and the
//! cpu device's step budget.

/// Three dimensions, from `n`, `(x, y)`, `(x, y, z)` or `[x, y, z]`
/// (missing dimensions are 1).
///
/// ```
/// assert_eq!(relok::Dim3::from(4).0, [4, 1, 1]);
/// assert_eq!(relok::Dim3::from((2, 3)).0, [2, 3, 1]);
/// ```
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct Dim3(pub [u32; 3]);

impl From<u32> for Dim3 {
    fn from(x: u32) -> Dim3 {
        Dim3([x, 1, 1])
    }
}

impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Dim3 {
        Dim3([x, y, 1])
    }
}

impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Dim3 {
        Dim3([x, y, z])
    }
}

impl From<[u32; 3]> for Dim3 {
    fn from(d: [u32; 3]) -> Dim3 {
        Dim3(d)
    }
}

/// A launch's geometry: `blocks` blocks of `threads` threads each.
///
/// Every device checks the same limits before a launch (no zero
/// dimension; at most 1024 threads per block, 64 along z; at most
/// 2^31 - 1 blocks along x and 65535 along y and z; a GPU may allow
/// less): a geometry outside them is [`crate::Error::Geometry`].
///
/// ```
/// let g = relok::Grid::cover(1000, 256);
/// assert_eq!(g.blocks, [4, 1, 1]);
/// assert_eq!(g.threads, [256, 1, 1]);
/// let g = relok::Grid::new((8, 8), (16, 16));
/// assert_eq!(g.blocks, [8, 8, 1]);
/// ```
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct Grid {
    /// Blocks along x, y, z.
    pub blocks: [u32; 3],
    /// Threads per block along x, y, z.
    pub threads: [u32; 3],
    /// Instructions a launch may execute on the cpu device before it stops
    /// with a fault (an endless loop ends there; GPUs do not count).
    pub step_budget: u64,
}

impl Grid {
    /// The cpu device's default step budget: 2^32 instructions.
    ///
    /// ```
    /// assert_eq!(relok::Grid::DEFAULT_STEP_BUDGET, 1 << 32);
    /// assert_eq!(relok::Grid::new(1, 1).step_budget, relok::Grid::DEFAULT_STEP_BUDGET);
    /// ```
    pub const DEFAULT_STEP_BUDGET: u64 = relok_runtime::LaunchConfig::DEFAULT_STEP_BUDGET;

    /// `blocks` blocks of `threads` threads.
    ///
    /// ```
    /// let g = relok::Grid::new(2, 64);
    /// assert_eq!((g.blocks, g.threads), ([2, 1, 1], [64, 1, 1]));
    /// ```
    pub fn new(blocks: impl Into<Dim3>, threads: impl Into<Dim3>) -> Grid {
        Grid { blocks: blocks.into().0, threads: threads.into().0, step_budget: Grid::DEFAULT_STEP_BUDGET }
    }

    /// Enough blocks of `threads` threads for one thread per element of
    /// `n` (at least one block; the kernel checks its index against `n`).
    ///
    /// ```
    /// assert_eq!(relok::Grid::cover(1, 256).blocks, [1, 1, 1]);
    /// assert_eq!(relok::Grid::cover(513, 256).blocks, [3, 1, 1]);
    /// assert_eq!(relok::Grid::cover(0, 256).blocks, [1, 1, 1]);
    /// ```
    pub fn cover(n: usize, threads: u32) -> Grid {
        let blocks = if threads == 0 { 1 } else { (n as u64).div_ceil(u64::from(threads)).max(1) };
        Grid::new(u32::try_from(blocks).unwrap_or(u32::MAX), threads)
    }

    /// The same geometry with another step budget.
    ///
    /// ```
    /// assert_eq!(relok::Grid::new(1, 1).with_step_budget(1000).step_budget, 1000);
    /// ```
    pub fn with_step_budget(self, steps: u64) -> Grid {
        Grid { step_budget: steps, ..self }
    }

    pub(crate) fn config(&self) -> relok_runtime::LaunchConfig {
        relok_runtime::LaunchConfig { grid: self.blocks, block: self.threads, step_budget: self.step_budget }
    }
}
