//! The session: the host objects of one process and their words per device
//! (docs/design.md §1–§3).
//!
//! A compiled kernel refers to host objects only through relocation records
//! ([`relok_compiler::reloc`]), by **stable identity** — a symbol's name, a
//! value's [`ValueKey`], a runtime global's name and byte offset. A
//! [`Session`] owns those objects for one process and hands out their
//! **words**: the 64-bit values that are valid only in this process, on one
//! device, and that the loader bakes, patches or uploads as the relocation
//! table (docs/design.md §3).
//!
//! # Words
//!
//! | object | word on device `d` |
//! | --- | --- |
//! | symbol `name` | the heap address of the session's interned `Arc<str>` for `name` |
//! | value `(type, bytes)` | the address on `d` of the value's one copy on `d` |
//! | runtime global `(name, offset)` | the address on `d` of the global's cell on `d`, plus `offset` |
//!
//! - **Symbols** are interned on first use ([`Session::symbol`], or on the fly
//!   when a record names a symbol the session has not seen: symbols are just
//!   names). The word is the address of the interned object *in this
//!   process*, so it is the same on every device of the session — a symbol
//!   passed as a kernel argument compares equal to a symbol literal in any
//!   kernel on any device — and differs from process to process (heap
//!   address randomisation). It is identity only: the device never
//!   dereferences it. Distinct names are distinct live allocations, hence
//!   distinct words; the allocations live as long as the session, and
//!   [`Session::symbol_name`] maps a word back to its name.
//! - **Values** are registered with [`Session::value`] (type tag + bytes;
//!   identity = [`ValueKey::of`]). Nothing is uploaded until a value is first
//!   resolved on a device; then it is copied there once (`alloc` + `write`)
//!   and that address is cached per (device, key). The same key on another
//!   device gets its own copy at another address. Resolving a key that was
//!   never registered is [`SessionError::UnknownValue`]: unlike a name, a
//!   key does not carry the bytes.
//! - **Runtime globals** (exception buffer, RNG state, counters, …) are
//!   declared with [`Session::declare_global`] (name + size in bytes;
//!   re-declaring with the same size is a no-op, with another size an
//!   error). On first use on a device — resolving a target that names it,
//!   or [`Session::global_cell`] — the global gets a zero-initialised cell of
//!   its size on that device; the word for `(name, offset)` is the cell's
//!   address plus `offset`, which must be less than the size. Each device has
//!   its own cell: what a kernel writes into a global on one device is not
//!   seen on another.
//!
//! # Devices
//!
//! Per-device state is keyed by a [`DeviceId`], which every device gets
//! from one allocator when it opens ([`DeviceId::allocate`]): never reused
//! in a process. Device copies and cells stay allocated for the session's
//! lifetime; the session never frees them.
//!
//! # Concurrency and determinism
//!
//! All methods take `&self`; one mutex guards the session's state, and it is
//! held across the device operations of a resolution, so two threads
//! resolving the same value on the same device share one copy. Lock order is
//! always session, then device. State lives in `BTreeMap`s, and nothing the
//! session returns depends on a map's iteration order:
//! [`Session::resolve_manifest`] follows the manifest's own (rank) order.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use relok_compiler::reloc::{FrozenManifest, Target, ValueKey};

pub use crate::error::SessionError;
use crate::launch::DevicePtr;
use crate::memory::DeviceMemory;
pub use crate::memory::{DeviceId, DeviceKind};

/// The host objects of one process and their words per device (see the
/// [module documentation](self)). `Send + Sync`; every method takes `&self`.
#[derive(Debug)]
pub struct Session {
    state: Mutex<State>,
    /// Distinct for every session of the process: what caches of
    /// delivered words (baked kernels, kernels loaded with their words) are
    /// keyed by, since words belong to one session.
    id: u64,
}

impl Default for Session {
    fn default() -> Session {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        Session { state: Mutex::default(), id: NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) }
    }
}

#[derive(Debug, Default)]
struct State {
    /// Interned symbols by name; the `Arc`'s allocation is the symbol's word.
    symbols: BTreeMap<Arc<str>, u64>,
    /// Word → interned name (reverse lookup).
    symbol_words: BTreeMap<u64, Arc<str>>,
    /// Registered values by key.
    values: BTreeMap<ValueKey, HostValue>,
    /// Declared runtime globals: name → size in bytes.
    globals: BTreeMap<String, u64>,
    /// What each device holds.
    devices: BTreeMap<DeviceId, DeviceState>,
}

#[derive(Debug)]
struct HostValue {
    /// The value's type tag (`str` for strings); identity is the key.
    type_tag: String,
    bytes: Vec<u8>,
}

#[derive(Debug, Default)]
struct DeviceState {
    /// The one copy of each value resolved on this device.
    values: BTreeMap<ValueKey, DevicePtr>,
    /// The cell of each runtime global used on this device.
    globals: BTreeMap<String, DevicePtr>,
}

impl Session {
    /// An empty session.
    pub fn new() -> Session {
        Session::default()
    }

    /// This session's identity in the process (never reused).
    pub fn id(&self) -> u64 {
        self.id
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Nothing panics while holding the lock, but never propagate poison.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Interns the symbol `name` (if it is new) and returns its target.
    pub fn symbol(&self, name: &str) -> Target {
        self.lock().intern(name);
        Target::Symbol(name.to_owned())
    }

    /// Registers the value `(type_tag, bytes)` (if it is new) and returns its
    /// target, whose key is [`ValueKey::of`]`(type_tag, bytes)`. Nothing is
    /// uploaded until the value is resolved on a device.
    pub fn value(&self, type_tag: &str, bytes: &[u8]) -> Target {
        let key = ValueKey::of(type_tag, bytes);
        self.lock()
            .values
            .entry(key)
            .or_insert_with(|| HostValue { type_tag: type_tag.to_owned(), bytes: bytes.to_vec() });
        Target::Value(key)
    }

    /// Declares the runtime global `name` of `size` bytes. Declaring it again
    /// with the same size is a no-op; with another size, an error.
    pub fn declare_global(&self, name: &str, size: u64) -> Result<(), SessionError> {
        // The text format's and the macros' names: a name no kernel could
        // refer to is a mistake, not a cell.
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(SessionError::GlobalName(name.to_owned()));
        }
        if size == 0 {
            return Err(SessionError::EmptyGlobal(name.to_owned()));
        }
        let mut st = self.lock();
        match st.globals.get(name) {
            Some(&declared) if declared == size => Ok(()),
            Some(&declared) => {
                Err(SessionError::GlobalSizeConflict { name: name.to_owned(), declared, requested: size })
            }
            None => {
                st.globals.insert(name.to_owned(), size);
                Ok(())
            }
        }
    }

    /// The target of byte `offset` of the runtime global `name`. Nothing is
    /// checked until it is resolved.
    pub fn global(&self, name: &str, offset: u64) -> Target {
        Target::Global { name: name.to_owned(), offset }
    }

    /// The word of `target` on `device`, uploading the value's copy or
    /// allocating the global's cell there on first use. A symbol the session
    /// has not seen is interned on the fly.
    pub fn resolve<D: DeviceMemory + ?Sized>(&self, device: &D, target: &Target) -> Result<u64, SessionError> {
        self.lock().resolve(device, device.device_id(), target)
    }

    /// The words of `manifest`'s records on `device`, in the manifest's order:
    /// element `i` belongs to the record of rank `i`. This is what the
    /// `table` strategy uploads and what the `patch` strategy writes, record
    /// by record.
    pub fn resolve_manifest<D: DeviceMemory + ?Sized>(
        &self,
        device: &D,
        manifest: &FrozenManifest,
    ) -> Result<Vec<u64>, SessionError> {
        let id = device.device_id();
        let mut st = self.lock();
        manifest.records().iter().map(|r| st.resolve(device, id, r.target())).collect()
    }

    /// The name of the symbol whose word is `word`, if it is one of this
    /// session's symbols.
    pub fn symbol_name(&self, word: u64) -> Option<String> {
        self.lock().symbol_words.get(&word).map(|s| s.to_string())
    }

    /// The bytes of the value registered under `key`.
    pub fn value_bytes(&self, key: &ValueKey) -> Option<Vec<u8>> {
        self.lock().values.get(key).map(|v| v.bytes.clone())
    }

    /// The value whose copy on `device` lives at `word`, as its type tag and
    /// bytes: how the host turns an exception's message word back into text.
    pub fn value_at<D: DeviceMemory + ?Sized>(&self, device: &D, word: u64) -> Option<(String, Vec<u8>)> {
        let st = self.lock();
        let dev = st.devices.get(&device.device_id())?;
        let (key, _) = dev.values.iter().find(|(_, ptr)| ptr.0 == word)?;
        st.values.get(key).map(|v| (v.type_tag.clone(), v.bytes.clone()))
    }

    /// The cell of the runtime global `name` on `device` (allocated,
    /// zero-filled, on first use), to read its contents back.
    pub fn global_cell<D: DeviceMemory + ?Sized>(&self, device: &D, name: &str) -> Result<DevicePtr, SessionError> {
        let mut st = self.lock();
        let size = st.global_size(name)?;
        st.cell(device, device.device_id(), name, size)
    }
}

impl State {
    /// Interns `name`; returns its word.
    fn intern(&mut self, name: &str) -> u64 {
        if let Some(&word) = self.symbols.get(name) {
            return word;
        }
        let obj: Arc<str> = Arc::from(name);
        // The address of the interned object. An `Arc` always owns a real
        // heap allocation (its counts), even for "", so distinct live names
        // have distinct addresses.
        let word = Arc::as_ptr(&obj).cast::<u8>().addr() as u64;
        self.symbol_words.insert(word, Arc::clone(&obj));
        self.symbols.insert(obj, word);
        word
    }

    fn global_size(&self, name: &str) -> Result<u64, SessionError> {
        self.globals.get(name).copied().ok_or_else(|| SessionError::UnknownGlobal(name.to_owned()))
    }

    fn resolve<D: DeviceMemory + ?Sized>(
        &mut self,
        device: &D,
        id: DeviceId,
        target: &Target,
    ) -> Result<u64, SessionError> {
        match target {
            Target::Symbol(name) => Ok(self.intern(name)),
            Target::Value(key) => self.value_copy(device, id, key).map(|p| p.0),
            Target::Global { name, offset } => {
                let size = self.global_size(name)?;
                if *offset >= size {
                    return Err(SessionError::GlobalOffsetOutOfRange { name: name.clone(), offset: *offset, size });
                }
                Ok(self.cell(device, id, name, size)?.offset(*offset).0)
            }
        }
    }

    /// The copy of value `key` on the device, uploaded on first use.
    fn value_copy<D: DeviceMemory + ?Sized>(
        &mut self,
        device: &D,
        id: DeviceId,
        key: &ValueKey,
    ) -> Result<DevicePtr, SessionError> {
        let value = self.values.get(key).ok_or(SessionError::UnknownValue(*key))?;
        let dev = self.devices.entry(id).or_default();
        if let Some(&ptr) = dev.values.get(key) {
            return Ok(ptr);
        }
        let err = |source| SessionError::Device { device: id, object: Target::Value(*key).to_string(), source };
        let ptr = device.alloc_object_filled(&value.bytes).map_err(err)?;
        if let Err(e) = device.seal_value(ptr) {
            // Best effort: the copy is unusable either way.
            let _ = device.free_bytes(ptr);
            return Err(err(e));
        }
        dev.values.insert(*key, ptr);
        Ok(ptr)
    }

    /// The cell of global `name` (declared with `size` bytes) on the device,
    /// allocated zero-filled on first use.
    fn cell<D: DeviceMemory + ?Sized>(
        &mut self,
        device: &D,
        id: DeviceId,
        name: &str,
        size: u64,
    ) -> Result<DevicePtr, SessionError> {
        let dev = self.devices.entry(id).or_default();
        if let Some(&ptr) = dev.globals.get(name) {
            return Ok(ptr);
        }
        let ptr = device.alloc_object(size).map_err(|source| SessionError::Device {
            device: id,
            object: Target::Global { name: name.to_owned(), offset: 0 }.to_string(),
            source,
        })?;
        dev.globals.insert(name.to_owned(), ptr);
        Ok(ptr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn session_is_send_and_sync() {
        assert_send_sync::<Session>();
    }

    #[test]
    fn empty_symbol_has_a_real_word() {
        let s = Session::new();
        let Target::Symbol(_) = s.symbol("") else { unreachable!() };
        let dev = crate::CpuDevice::new(0);
        let a = s.resolve(&dev, &Target::Symbol(String::new())).unwrap();
        let b = s.resolve(&dev, &Target::Symbol("x".into())).unwrap();
        assert_ne!(a, b);
        assert!(a > 4096, "{a:#x}");
        assert_eq!(s.symbol_name(a).as_deref(), Some(""));
    }

    #[test]
    fn errors_name_the_object() {
        let s = Session::new();
        let dev = crate::CpuDevice::new(0);
        let e = s.resolve(&dev, &s.global("exc_buf", 0)).unwrap_err();
        assert!(e.to_string().contains("\"exc_buf\""), "{e}");
        s.declare_global("exc_buf", 16).unwrap();
        let e = s.resolve(&dev, &s.global("exc_buf", 16)).unwrap_err();
        assert!(e.to_string().contains("offset 16") && e.to_string().contains("16 bytes"), "{e}");
        let key = ValueKey::of("str", b"nope");
        let e = s.resolve(&dev, &Target::Value(key)).unwrap_err();
        assert!(e.to_string().contains(&key.to_hex()), "{e}");
    }
}
