//! Memory: the WGSL array behind a base, byte offsets, loads and stores
//! of every scalar as 32-bit words (a `bool`, `u8`, `i8`, `u16` or `i16`
//! as its byte or halfword of one), and checked mode's bounds checks
//! ([`super::super::bounds`]) and heap guards ([`super::super::sealed`]).

use super::{Base, FuncCx, wide};
use crate::fault::{self, Access};
use crate::wgsl::bindings::{self, EXCEPTION_VAR, HEAP_VAR, TABLE_VAR};
use crate::wgsl::{Error, bounds};
use relok_ir::{EntityRef, FuncKind, Scalar, Type, Value};

impl FuncCx<'_> {
    /// The offset a write to base `b` at `off` uses: on the heap, through
    /// `relok_heap_guard` ([`super::sealed`]), else `off`.
    pub(super) fn heap_guard(&mut self, b: Base, off: &str) -> String {
        if b != Base::Heap {
            return off.to_owned();
        }
        self.wrote_guard = true;
        let t = self.temp();
        let ids = if self.f.kind == FuncKind::Kernel { "relok_bid, relok_tid" } else { "vec3<u32>(), vec3<u32>()" };
        self.line(format!("let {t}: u32 = relok_heap_guard({off}, {ids});"));
        t
    }

    /// The WGSL array a base names and whether its words are atomic
    /// (`usage`: where an atomic or a sub-word store touches it; always,
    /// for the exception record).
    pub(super) fn array(&self, b: Base) -> (String, bool) {
        match b {
            Base::Param(k) => (bindings::buffer_var(k), self.usage.param_atomic(k)),
            Base::Heap => (HEAP_VAR.into(), self.usage.heap_atomic()),
            Base::Table => (TABLE_VAR.into(), false),
            Base::Shared(v) => (format!("s{}_{}", self.f.name, v.index()), self.usage.shared_atomic(&self.f.name, v)),
            Base::Local(v) => (format!("l{}", v.index()), false),
            Base::Const(c) => (format!("c{}", c.index()), false),
            Base::Exception => (EXCEPTION_VAR.into(), true),
        }
    }

    /// The 32-bit word at byte offset expression `off` of base `b`.
    fn word_at(&self, b: Base, off: &str) -> String {
        let (a, atomic) = self.array(b);
        if atomic { format!("atomicLoad(&{a}[({off}) >> 2u])") } else { format!("{a}[({off}) >> 2u]") }
    }

    pub(super) fn load_expr(&mut self, b: Base, off: &str, s: Scalar) -> String {
        if b == Base::Table {
            return format!("{TABLE_VAR}[({off}) >> 3u]");
        }
        let w = self.word_at(b, off);
        match s {
            Scalar::U32 => w,
            Scalar::I32 => format!("bitcast<i32>({w})"),
            Scalar::F32 => format!("bitcast<f32>({w})"),
            Scalar::Bool => format!("((({w}) >> ((({off}) & 3u) * 8u)) & 0xffu) != 0u"),
            Scalar::U8 | Scalar::U16 => format!("(({w}) >> ((({off}) & 3u) * 8u)) & {}", sub_word_mask(s)),
            // The byte or halfword moved to the top, shifted back down
            // arithmetically: sign-extended.
            Scalar::I8 | Scalar::I16 => {
                let top = 32 - s.bits();
                format!("bitcast<i32>(({w}) << ({top}u - (({off}) & 3u) * 8u)) >> {top}u")
            }
            _ => {
                let hi = self.word_at(b, &format!("({off}) + 4u"));
                format!("vec2<u32>({w}, {hi})")
            }
        }
    }

    fn store_word(&mut self, b: Base, off: &str, bits: &str) {
        let (a, atomic) = self.array(b);
        if atomic {
            self.line(format!("atomicStore(&{a}[({off}) >> 2u], {bits});"));
        } else {
            self.line(format!("{a}[({off}) >> 2u] = {bits};"));
        }
    }

    /// A store of `v` (the value `at`, of scalar type `s`) at `off` in
    /// `b`; `element` is the store's pointer and index when it has them.
    pub(super) fn store(
        &mut self,
        b: Base,
        off: &str,
        s: Scalar,
        v: &str,
        at: Value,
        element: Option<(Value, Option<Value>)>,
    ) -> Result<(), Error> {
        if matches!(b, Base::Table | Base::Const(_)) {
            return Err(self.unsupported(at, "a store to read-only memory"));
        }
        let checked = self.bounds_check(b, off, s.size(), Access::Write, element);
        let open = checked != off;
        if open {
            self.line(format!("if ({checked} != {}u) {{", bounds::OUT));
            self.depth += 1;
        }
        let guarded = self.heap_guard(b, &checked);
        let off = guarded.as_str();
        let written = self.store_checked(b, off, s, v, at);
        if open {
            self.depth -= 1;
            self.line("}".into());
        }
        written
    }

    /// The offset an access of `size` bytes to base `b` at `off` uses: in
    /// checked mode, on a buffer parameter or the heap, through
    /// `relok_bounds` ([`super::bounds`]; the fault's code made by
    /// [`fault::out_of_bounds_high`]), else `off`. `element` is the
    /// access's pointer and index: element `index` of a buffer parameter
    /// that the kernel's own guard proves in bounds ([`crate::in_bounds`]) is
    /// not checked again.
    pub(super) fn bounds_check(
        &mut self,
        b: Base,
        off: &str,
        size: u32,
        access: Access,
        element: Option<(Value, Option<Value>)>,
    ) -> String {
        if let Some((ptr, Some(index))) = element
            && self.in_bounds.proves(ptr, index)
        {
            return off.to_owned();
        }
        let binding = match b {
            Base::Param(k) if self.checked => bindings::buffer_binding(k),
            Base::Heap if self.checked => bindings::HEAP,
            _ => return off.to_owned(),
        };
        self.wrote_bounds = true;
        let (a, _) = self.array(b);
        let t = self.temp();
        let ids = if self.f.kind == FuncKind::Kernel { "relok_bid, relok_tid" } else { "vec3<u32>(), vec3<u32>()" };
        let code = fault::out_of_bounds_high(binding, access, size);
        self.line(format!("let {t}: u32 = relok_bounds({off}, {size}u, arrayLength(&{a}) * 4u, {code}u, {ids});"));
        t
    }

    /// [`FuncCx::store`] once the offset is checked.
    fn store_checked(&mut self, b: Base, off: &str, s: Scalar, v: &str, at: Value) -> Result<(), Error> {
        match s {
            Scalar::U32 => self.store_word(b, off, v),
            Scalar::I32 | Scalar::F32 => self.store_word(b, off, &format!("bitcast<u32>({v})")),
            s if wide(s) => {
                self.store_word(b, off, &format!("{v}.x"));
                self.store_word(b, &format!("({off}) + 4u"), &format!("{v}.y"));
            }
            Scalar::Bool | Scalar::U8 | Scalar::I8 | Scalar::U16 | Scalar::I16 => {
                // One byte or halfword of a word other threads may write:
                // and/or (`usage` makes such memory atomic; a local is
                // private).
                let (a, atomic) = self.array(b);
                if !atomic && !matches!(b, Base::Local(_)) {
                    return Err(self.unsupported(at, format!("a {s} store to memory without atomic words")));
                }
                let mask = sub_word_mask(s);
                let bits = match s {
                    Scalar::Bool => format!("select(0u, 1u, {v})"),
                    Scalar::U8 | Scalar::U16 => format!("({v} & {mask})"),
                    _ => format!("(bitcast<u32>({v}) & {mask})"),
                };
                let (sh, i) = (format!("((({off}) & 3u) * 8u)"), format!("({off}) >> 2u"));
                if atomic {
                    self.line(format!("atomicAnd(&{a}[{i}], ~({mask} << {sh}));"));
                    self.line(format!("atomicOr(&{a}[{i}], {bits} << {sh});"));
                } else {
                    self.line(format!("{a}[{i}] = ({a}[{i}] & ~({mask} << {sh})) | ({bits} << {sh});"));
                }
            }
            other => return Err(self.unsupported(at, format!("a store of {other}"))),
        }
        Ok(())
    }

    /// `p + i * size` as a u32 byte offset expression.
    pub(super) fn offset(&self, p: Value, i: Option<Value>, size: u32) -> Result<String, Error> {
        match i {
            None => Ok(format!("v{}", p.index())),
            Some(i) => {
                let idx = match &self.f.values[i].ty {
                    Type::Scalar(Scalar::U32) => format!("v{}", i.index()),
                    Type::Scalar(Scalar::I32) => format!("u32(v{})", i.index()),
                    // Offsets are 32-bit: the low half gives the same sum.
                    Type::Scalar(Scalar::I64 | Scalar::U64) => format!("v{}.x", i.index()),
                    t => return Err(self.unsupported(i, format!("an index of type {t}"))),
                };
                Ok(format!("v{} + {idx} * {size}u", p.index()))
            }
        }
    }

    pub(super) fn pointee(&self, p: Value) -> Result<Type, Error> {
        match &self.f.values[p].ty {
            Type::Ptr(_, t) => Ok((**t).clone()),
            t => Err(self.unsupported(p, format!("{t} is not a pointer"))),
        }
    }
}

/// The mask of a sub-word scalar's bits in its word (`bool`, `u8` and
/// `i8` are one byte, `u16` and `i16` two).
fn sub_word_mask(s: Scalar) -> &'static str {
    if s.size() == 1 { "0xffu" } else { "0xffffu" }
}
