//! [`Global`]: a runtime global a Rust kernel updates with atomics — one
//! cell per device, zero when a context first uses it, readable from the
//! host with [`crate::Context::global_value`].

use std::marker::PhantomData;

/// A runtime global named `name` holding one `T` per device (the IR's
/// `ref global name`): declared once as a `static`, used by Rust kernels
/// through atomics (`atomic_add(&HITS, 1)`), read from the host per
/// context.
///
/// ```
/// static HITS: relok::Global<u32> = relok::Global::new("doc_hits");
///
/// #[relok::kernel]
/// fn hit(x: &[u32]) {
///     let i = relok::global_id_x();
///     if i < x.len() && x[i] > 2 {
///         atomic_add(&HITS, 1);
///     }
/// }
///
/// fn main() -> Result<(), relok::Error> {
///     let ctx = relok::Context::builder().device("cpu").no_cache().build()?;
///     let x = ctx.upload(&[1u32, 5, 3, 2])?;
///     let s = ctx.stream();
///     hit::launch(&s, relok::Grid::cover(4, 64), &x)?;
///     hit::launch(&s, relok::Grid::cover(4, 64), &x)?;
///     s.synchronize()?;
///     assert_eq!(ctx.global_value(&HITS)?, 4);
///     Ok(())
/// }
/// ```
#[derive(Debug)]
pub struct Global<T> {
    name: &'static str,
    _t: PhantomData<fn() -> T>,
}

impl<T> Global<T> {
    /// The global `name` (`[A-Za-z0-9_]+`; the same name is the same cell
    /// in every kernel of a context, `.rk` kernels' `ref global name`
    /// included). Another name is an error where the global is first used
    /// (a launch, [`crate::Context::global_value`]), and so is the name of
    /// a cell relok writes itself, a host static's `relok_host_…`
    /// ([`crate::Error::ReservedGlobal`]).
    ///
    /// ```
    /// static COUNT: relok::Global<u64> = relok::Global::new("count");
    /// assert_eq!(COUNT.name(), "count");
    /// ```
    pub const fn new(name: &'static str) -> Global<T> {
        Global { name, _t: PhantomData }
    }

    /// The global's name.
    ///
    /// ```
    /// assert_eq!(relok::Global::<u32>::new("g").name(), "g");
    /// ```
    pub fn name(&self) -> &'static str {
        self.name
    }
}
