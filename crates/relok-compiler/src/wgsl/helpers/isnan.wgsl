// NaN by its bits: a driver may assume no NaNs and fold `x != x`.
fn relok_isnan(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
}
