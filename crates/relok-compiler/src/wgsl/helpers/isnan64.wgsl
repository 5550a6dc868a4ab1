// f64 is held as its bits, vec2<u32> (low, high), and computed on them
// exactly as IEEE binary64 with round to nearest even (as x86-64 does: a
// NaN operand gives the first NaN operand quieted, an invalid operation
// the default NaN 0xfff8000000000000).
fn relok_isnan64(a: vec2<u32>) -> bool {
    let h = a.y & 0x7fffffffu;
    return h > 0x7ff00000u || (h == 0x7ff00000u && a.x != 0u);
}
