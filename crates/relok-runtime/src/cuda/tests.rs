//! The cuda device's unit tests: those that need no GPU (the GPU's are in
//! `crates/relok/tests/cuda.rs`, through the facade, and
//! `crates/relok-runtime/tests/cuda_device.rs`).

use super::launch::buffer_len;
use super::load_record::{LoadRecord, record_key};
use super::memory::{Heap, Released, SmallBlocks};
use super::module::{aligned, elf_bounds};
use relok_cache::Key;
use relok_compiler::artifact::{CodeTarget, CompileOptions, compile};
use relok_compiler::stencil::Stencil;
use relok_ir::Strategy;

#[test]
fn small_objects_take_runs_of_slots_and_give_them_back() {
    let base = 0x7000_0000;
    let mut b = SmallBlocks::new(base);
    let a = b.take(8).expect("a slot");
    let c = b.take(65).expect("two slots");
    let d = b.take(1).expect("a slot");
    assert_eq!((a, c, d), (base, base + 64, base + 192), "first fit, 64-byte slots");
    assert!(b.take(SmallBlocks::MAX + 1).is_none(), "too large for the block");
    // A freed run is taken again by what fits in it, and only that.
    assert!(b.give_back(c, 65));
    assert_eq!(b.take(200), Some(base + 256), "three slots do not fit in two");
    assert_eq!(b.take(128), Some(c));
    // Outside the block: not its to give back.
    assert!(!b.give_back(base - 64, 8) && !b.give_back(base + SmallBlocks::BYTES, 8));
    assert!(b.holds(base + SmallBlocks::BYTES - 1) && !b.holds(base + SmallBlocks::BYTES));
    // Full: every slot taken, then none.
    let mut full = SmallBlocks::new(base);
    let n = (0..).take_while(|_| full.take(SmallBlocks::MAX).is_some()).count();
    assert_eq!(n as u64, SmallBlocks::BYTES / SmallBlocks::MAX);
    assert!(full.take(1).is_none());
    assert_eq!(full.free, 0, "a full block fails without a search");
    // The free count follows what is taken and given back, once each.
    assert!(full.give_back(base, SmallBlocks::MAX) && full.give_back(base, SmallBlocks::MAX));
    assert_eq!(full.free, SmallBlocks::slots(SmallBlocks::MAX));
    assert_eq!(full.take(SmallBlocks::MAX + 1), None);
    assert_eq!(full.take(SmallBlocks::MAX), Some(base));
    assert_eq!(full.free, 0);
    // The heap tells the caller which allocations are its own to free.
    let mut heap = Heap { live: Default::default(), small: SmallBlocks::new(base) };
    let p = heap.small.take(24).expect("a slot");
    heap.live.insert(p, 24);
    heap.live.insert(0x1000, 24);
    assert_eq!(
        (heap.release(p), heap.release(0x1000), heap.release(p)),
        (Some(Released::Slots), Some(Released::Own), None)
    );
    assert_eq!(heap.small.take(64), Some(p), "the slot is free again");
}

#[test]
fn a_load_record_keeps_what_a_load_needs_for_its_own_source_only() {
    let module = relok_ir::VerifiedModule::new(
        relok_ir::parse(include_str!("../../../../examples/bench/scale.rk")).expect("parses"),
    )
    .expect("verifies");
    let stencil = Stencil::new(&module, "scale").expect("stencil");
    let artifact = compile(&stencil, CodeTarget::Ptx { sm: 90 }, Strategy::Table, CompileOptions::default(), None)
        .expect("compiles");
    let (source, cubin) = (Key([7; 32]), b"\x7fELF a cubin".as_slice());
    let bytes = LoadRecord::encode(source, &artifact, cubin).expect("encodes");
    let (back, code) = LoadRecord::decode(&bytes, source).expect("decodes");
    assert_eq!(code, cubin);
    // Everything but the PTX and the source text, which a load from a
    // cubin does not read.
    assert!(back.code.is_empty() && back.source.is_empty() && back.alias.is_none());
    assert_eq!(
        (back.key, &back.entry, &back.abi, &back.manifest, &back.values),
        (artifact.key, &artifact.entry, &artifact.abi, &artifact.manifest, &artifact.values)
    );
    assert_eq!(
        (back.compile_options(), back.strategy, back.target),
        (artifact.compile_options(), artifact.strategy, artifact.target)
    );
    assert!(bytes.len() < artifact.to_payload().expect("payload").len());
    // Another source's record, trailing bytes, a truncation: refused.
    assert!(LoadRecord::decode(&bytes, Key([8; 32])).is_err());
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(LoadRecord::decode(&longer, source).is_err());
    for n in [0, 1, 32, bytes.len() / 2, bytes.len() - 1] {
        assert!(LoadRecord::decode(&bytes[..n], source).is_err(), "truncated to {n} bytes");
    }
    // The cubin handed to the driver from an aligned copy, unchanged.
    for n in [1, 7, 8, 13, 4096 + 3] {
        let b: Vec<u8> = (0..n).map(|i| i as u8 ^ 0x5a).collect();
        let words = aligned(&b);
        assert_eq!(&bytemuck::cast_slice::<u64, u8>(&words)[..n], &b[..]);
    }
    // Records live apart from the source keys and from each other.
    assert_ne!(record_key(source), source);
    assert_ne!(record_key(source), record_key(Key([8; 32])));
    assert_eq!(record_key(source), record_key(Key([7; 32])));
}

#[test]
fn a_buffer_arguments_length_runs_to_the_end_of_its_allocation() {
    let allocs = std::collections::BTreeMap::from([(0x1000, 64), (0x2000, 16)]);
    assert_eq!(buffer_len(&allocs, 0x1000), 64);
    assert_eq!(buffer_len(&allocs, 0x1010), 48, "from inside");
    assert_eq!(buffer_len(&allocs, 0x103f), 1);
    assert_eq!(buffer_len(&allocs, 0x1040), 0, "one past the end");
    assert_eq!(buffer_len(&allocs, 0x0fff), 0, "before every allocation");
    assert_eq!(buffer_len(&allocs, 0x200f), 1);
    assert_eq!(buffer_len(&allocs, 0), 0, "null");
    assert_eq!(buffer_len(&allocs, u64::MAX), 0);
}

/// A 64-bit little-endian ELF header with one section of `size` bytes
/// at `offset`, and the image padded to `len` bytes.
fn image(offset: u64, size: u64, len: usize) -> Vec<u8> {
    let mut b = vec![0u8; len.max(192)];
    b[..4].copy_from_slice(b"\x7fELF");
    b[4] = 2;
    b[5] = 1;
    b[0x28..0x30].copy_from_slice(&128u64.to_le_bytes()); // section headers at 128
    b[0x3A..0x3C].copy_from_slice(&64u16.to_le_bytes());
    b[0x3C..0x3E].copy_from_slice(&1u16.to_le_bytes());
    b[128 + 4..128 + 8].copy_from_slice(&1u32.to_le_bytes()); // PROGBITS
    b[128 + 0x18..128 + 0x20].copy_from_slice(&offset.to_le_bytes());
    b[128 + 0x20..128 + 0x28].copy_from_slice(&size.to_le_bytes());
    b.truncate(len.max(192));
    b
}

#[test]
fn elf_images_must_lie_inside_their_bytes() {
    assert_eq!(elf_bounds(&image(64, 32, 192)), Ok(()));
    assert!(elf_bounds(&image(64, 1 << 40, 192)).is_err(), "a section past the end");
    assert!(elf_bounds(&image(u64::MAX, 2, 192)).is_err(), "an overflowing section");
    assert!(elf_bounds(&image(64, 32, 192)[..150]).is_err(), "a truncated section table");
    assert!(elf_bounds(b"garbage").is_err());
    let mut not_elf = image(64, 32, 192);
    not_elf[0] = 0;
    assert!(elf_bounds(&not_elf).is_err());
}
