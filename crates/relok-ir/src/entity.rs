//! Typed handles into arenas (cranelift's `EntityRef` / naga's `Handle`).
//!
//! Every IR entity is a `u32` newtype whose `Display` is its text syntax
//! (`v3`, `@name` is printed by the module because it needs the name), so the
//! printer, the parser and error messages agree. An [`Arena`] owns the
//! entities' data and hands out handles in allocation order; a handle is only
//! meaningful for the arena that made it, and the verifier's first phase
//! checks every handle before anything indexes with it.

use std::fmt;
use std::marker::PhantomData;

/// A handle type: a dense `u32` index.
pub trait EntityRef: Copy + Eq {
    /// The handle for index `i`.
    fn new(i: usize) -> Self;
    /// The index this handle stands for.
    fn index(self) -> usize;
}

macro_rules! entity {
    ($(#[$attr:meta])* $name:ident, $prefix:literal) => {
        $(#[$attr])*
        #[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(u32);

        impl $crate::entity::EntityRef for $name {
            fn new(i: usize) -> Self {
                Self(u32::try_from(i).expect(concat!(stringify!($name), " index overflows u32")))
            }
            fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl $name {
            /// The handle with raw index `i` (used by the parser and tests).
            pub const fn from_u32(i: u32) -> Self {
                Self(i)
            }
            /// The raw index.
            pub const fn as_u32(self) -> u32 {
                self.0
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }

        impl ::std::fmt::Debug for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                ::std::fmt::Display::fmt(self, f)
            }
        }
    };
}
pub(crate) use entity;

/// Dense storage for entities of one kind, indexed by their handle `K`.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Arena<K, V> {
    items: Vec<V>,
    _key: PhantomData<K>,
}

impl<K: EntityRef, V> Default for Arena<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: EntityRef, V> Arena<K, V> {
    /// An empty arena.
    pub const fn new() -> Self {
        Self { items: Vec::new(), _key: PhantomData }
    }
    /// Stores `v` and returns its handle.
    pub fn push(&mut self, v: V) -> K {
        let k = K::new(self.items.len());
        self.items.push(v);
        k
    }
    /// The number of entities.
    pub fn len(&self) -> usize {
        self.items.len()
    }
    /// Whether the arena is empty.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    /// Whether `k` names an entity of this arena.
    pub fn contains(&self, k: K) -> bool {
        k.index() < self.items.len()
    }
    /// The entity `k`, if it exists.
    pub fn get(&self, k: K) -> Option<&V> {
        self.items.get(k.index())
    }
    /// The entity `k`, mutably, if it exists.
    pub fn get_mut(&mut self, k: K) -> Option<&mut V> {
        self.items.get_mut(k.index())
    }
    /// Handles and entities in allocation order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (K, &V)> + '_ {
        self.items.iter().enumerate().map(|(i, v)| (K::new(i), v))
    }
    /// Handles in allocation order.
    pub fn keys(&self) -> impl ExactSizeIterator<Item = K> + use<K, V> {
        (0..self.items.len()).map(K::new)
    }
    /// Entities in allocation order.
    pub fn values(&self) -> std::slice::Iter<'_, V> {
        self.items.iter()
    }
    /// The values, mutably, in handle order.
    pub fn values_mut(&mut self) -> std::slice::IterMut<'_, V> {
        self.items.iter_mut()
    }
}

impl<K: EntityRef, V> std::ops::Index<K> for Arena<K, V> {
    type Output = V;
    fn index(&self, k: K) -> &V {
        &self.items[k.index()]
    }
}

impl<K: EntityRef, V> std::ops::IndexMut<K> for Arena<K, V> {
    fn index_mut(&mut self, k: K) -> &mut V {
        &mut self.items[k.index()]
    }
}

impl<K: EntityRef + fmt::Debug, V: fmt::Debug> fmt::Debug for Arena<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}
