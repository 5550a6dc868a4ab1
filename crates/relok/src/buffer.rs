//! [`Buffer`]: typed device memory owned by the program.
//!
//! A buffer frees its memory when it drops — but not before the launches
//! that use it are done: every launch keeps a reference to each buffer it
//! was given until its stream passes it (the stream's next
//! synchronisation), so dropping a buffer while a launch that uses it is
//! pending is safe. Reading a buffer ([`Buffer::download`]) or writing it
//! ([`Buffer::write`]) first synchronises every stream with a pending
//! launch that uses it, so the host sees what those launches wrote and
//! they never see a later write; a kernel exception on such a stream (its
//! first since the stream's last synchronisation, whichever launch threw:
//! see [`crate::Stream`]) is the read's or write's error.

use crate::Element;
use crate::core::{Allocation, lock};
use crate::error::{Error, Result};
use relok_runtime::DeviceMemory;
use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};
use std::sync::{Arc, Weak};

impl Allocation {
    /// Synchronises every stream with a pending launch using this
    /// allocation.
    fn settle(&self) -> Result<()> {
        let users: Vec<_> = std::mem::take(&mut *lock(&self.users)).iter().filter_map(Weak::upgrade).collect();
        let mut first = Ok(());
        for s in users {
            let r = s.synchronize();
            if first.is_ok() {
                first = r;
            }
        }
        first
    }
}

/// `len` elements of `T` in one device's memory, freed on drop (see the
/// module docs for pending launches). Made by [`crate::Context::upload`]
/// and [`crate::Context::zeros`]; passed to kernels as `&buffer` or
/// `&mut buffer` for a `ptr<global, T>` parameter.
///
/// ```
/// let ctx = relok::Context::cpu();
/// let mut b = ctx.zeros::<u32>(4)?;
/// b.write(&[1, 2, 3, 4])?;
/// assert_eq!(b.slice(1..3).download()?, [2, 3]);
/// # Ok::<(), relok::Error>(())
/// ```
#[derive(Debug)]
pub struct Buffer<T: Element> {
    pub(crate) mem: Arc<Allocation>,
    len: usize,
    _elem: PhantomData<T>,
}

impl<T: Element> Buffer<T> {
    pub(crate) fn new(mem: Arc<Allocation>, len: usize) -> Buffer<T> {
        Buffer { mem, len, _elem: PhantomData }
    }

    /// The number of elements.
    ///
    /// ```
    /// assert_eq!(relok::Context::cpu().zeros::<f64>(7)?.len(), 7);
    /// # Ok::<(), relok::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer has no elements.
    ///
    /// ```
    /// assert!(relok::Context::cpu().zeros::<f64>(0)?.is_empty());
    /// # Ok::<(), relok::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The elements, once every pending launch that uses the buffer is done
    /// (an exception of one of them is this call's error).
    ///
    /// ```
    /// assert_eq!(relok::Context::cpu().upload(&[7i32])?.download()?, [7]);
    /// # Ok::<(), relok::Error>(())
    /// ```
    pub fn download(&self) -> Result<Vec<T>> {
        self.slice(..).download()
    }

    /// Overwrites the buffer with `data` (of the buffer's length), once
    /// every pending launch that uses it is done.
    ///
    /// ```
    /// let ctx = relok::Context::cpu();
    /// let mut b = ctx.zeros::<u32>(2)?;
    /// b.write(&[5, 6])?;
    /// assert_eq!(b.download()?, [5, 6]);
    /// assert!(matches!(b.write(&[1]), Err(relok::Error::LengthMismatch { expected: 2, found: 1 })));
    /// # Ok::<(), relok::Error>(())
    /// ```
    pub fn write(&mut self, data: &[T]) -> Result<()> {
        if data.len() != self.len {
            return Err(Error::LengthMismatch { expected: self.len, found: data.len() });
        }
        self.mem.settle()?;
        if !data.is_empty() {
            self.mem.ctx.device.write_bytes(self.mem.ptr, bytemuck::cast_slice(data))?;
        }
        Ok(())
    }

    /// Elements `range` of the buffer: a view to read or to pass to a
    /// kernel (which sees it as a buffer of its own, starting at the
    /// slice's first element). Out of range: [`Error::SliceOutOfRange`]
    /// when it is used.
    ///
    /// On wgpu a slice passed to a kernel must start at a multiple of the
    /// adapter's storage-buffer offset alignment (256 bytes on most).
    ///
    /// ```
    /// let b = relok::Context::cpu().upload(&[1u64, 2, 3, 4])?;
    /// assert_eq!(b.slice(2..).download()?, [3, 4]);
    /// assert_eq!(b.slice(..=0).len(), 1);
    /// # Ok::<(), relok::Error>(())
    /// ```
    pub fn slice(&self, range: impl RangeBounds<usize>) -> BufferSlice<'_, T> {
        let start = match range.start_bound() {
            Bound::Included(&s) => s,
            Bound::Excluded(&s) => s.saturating_add(1),
            Bound::Unbounded => 0,
        };
        let end = match range.end_bound() {
            Bound::Included(&e) => e.saturating_add(1),
            Bound::Excluded(&e) => e,
            Bound::Unbounded => self.len,
        };
        BufferSlice { buffer: self, start, end }
    }
}

/// Elements `start..end` of a [`Buffer`] (see [`Buffer::slice`]).
///
/// ```
/// let b = relok::Context::cpu().upload(&[1u32, 2, 3])?;
/// let s = b.slice(1..);
/// assert_eq!((s.len(), s.download()?), (2, vec![2, 3]));
/// # Ok::<(), relok::Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct BufferSlice<'a, T: Element> {
    pub(crate) buffer: &'a Buffer<T>,
    start: usize,
    end: usize,
}

impl<T: Element> BufferSlice<'_, T> {
    /// The number of elements (0 for an empty or reversed range).
    ///
    /// ```
    /// let b = relok::Context::cpu().zeros::<u32>(8)?;
    /// assert_eq!(b.slice(2..6).len(), 4);
    /// # Ok::<(), relok::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.end.saturating_sub(self.start)
    }

    /// Whether the slice has no elements.
    ///
    /// ```
    /// let b = relok::Context::cpu().zeros::<u32>(8)?;
    /// assert!(b.slice(3..3).is_empty());
    /// # Ok::<(), relok::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The slice's byte offset in its allocation, once its range is known
    /// to lie in the buffer.
    pub(crate) fn checked_offset(&self) -> Result<u64> {
        let len = self.buffer.len;
        if self.start > self.end || self.end > len {
            return Err(Error::SliceOutOfRange { start: self.start, end: self.end, len });
        }
        Ok((self.start * size_of::<T>()) as u64)
    }

    /// The elements (see [`Buffer::download`]).
    ///
    /// ```
    /// let b = relok::Context::cpu().upload(&[1.0f32, 2.0])?;
    /// assert_eq!(b.slice(1..2).download()?, [2.0]);
    /// assert!(b.slice(1..3).download().is_err());
    /// # Ok::<(), relok::Error>(())
    /// ```
    pub fn download(&self) -> Result<Vec<T>> {
        let offset = self.checked_offset()?;
        let mem = &self.buffer.mem;
        mem.settle()?;
        if self.is_empty() {
            return Ok(Vec::new());
        }
        let bytes = mem.ctx.device.read_bytes(mem.ptr.offset(offset), (self.len() * size_of::<T>()) as u64)?;
        T::from_device_bytes(&bytes).map_err(|i| Error::InvalidBool { index: self.start + i, byte: bytes[i] })
    }
}
