//! Host values are read-only to kernels (docs/wgpu.md, "Host values are
//! read-only"): every write or atomic the WGSL makes to the heap goes
//! through `relok_heap_guard`, which looks the target up in the device's
//! seal bitmap and redirects a write into a host value's copy to the
//! heap's scratch words, recording the fault in the exception record.
//!
//! The heap's first 16 bytes belong to relok (no object starts below 16):
//! words 0 and 1 are scratch (a refused write lands there; nothing reads
//! them), word [`BITMAP_WORD`] is the byte offset of the seal bitmap and
//! word [`GRANULES_WORD`] the number of 16-byte granules it covers (0
//! until the device seals a value: nothing is sealed). Bit `g` of the
//! bitmap (word `g / 32`, bit `g % 32`) is set when granule `g` (heap bytes
//! `16 g .. 16 g + 16`) belongs to a host value's copy or to the bitmap
//! itself. Objects start 16-byte aligned, so a granule holds bytes of one
//! object only.
//!
//! The fault's message word is [`crate::fault`]'s
//! ([`READ_ONLY_MESSAGE_HIGH`]).

use crate::fault::READ_ONLY_MESSAGE_HIGH;

/// Heap word holding the seal bitmap's byte offset.
pub const BITMAP_WORD: u32 = 2;
/// Heap word holding the granules the bitmap covers.
pub const GRANULES_WORD: u32 = 3;
/// Bytes per granule (the heap's object alignment).
pub const GRANULE: u64 = 16;

/// `relok_heap_guard(off, b, t)`: `off` when the heap byte there may be
/// written, else 0 (the scratch words) after recording the fault (message
/// word [`READ_ONLY_MESSAGE_HIGH`] over the heap offset). `atomic`: the
/// heap has atomic words in this module (the bitmap is read with
/// `atomicLoad` then; the host writes it, between launches).
pub(crate) fn declarations(atomic: bool) -> String {
    let word = |i: String| if atomic { format!("atomicLoad(&relok_heap[{i}])") } else { format!("relok_heap[{i}]") };
    let mut s = String::from("fn relok_heap_guard(off: u32, b: vec3<u32>, t: vec3<u32>) -> u32 {\n");
    s.push_str(&format!(
        "    let g = off >> 4u;\n    if (g >= {}) {{ return off; }}\n",
        word(format!("{GRANULES_WORD}u"))
    ));
    s.push_str(&format!("    let w = {};\n", word(format!("({} >> 2u) + (g >> 5u)", word(format!("{BITMAP_WORD}u"))))));
    s.push_str("    if ((w & (1u << (g & 31u))) == 0u) { return off; }\n");
    s.push_str(&super::record_fault("off", &format!("{READ_ONLY_MESSAGE_HIGH}u")));
    s.push_str("    return 0u;\n}\n\n");
    s
}
