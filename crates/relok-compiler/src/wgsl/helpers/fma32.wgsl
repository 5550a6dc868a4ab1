// fma(a, b, c) on f32, rounded once. The product is exact in f64 (48
// bits); the sum is rounded to odd in f64 (to nearest, then, when that was
// inexact and its last bit is even, one step toward the exact sum, whose
// error TwoSum gives exactly); rounding that to f32 is then correct, as
// f64 keeps more than 24 + 1 bits (subnormal f32 results included).
fn relok_fma32(a: f32, b: f32, c: f32) -> f32 {
    let p = relok_fmul64(relok_f32_to_f64(a), relok_f32_to_f64(b));
    let z = relok_f32_to_f64(c);
    var s = relok_fadd64(p, z);
    let bb = relok_fsub64(s, p);
    let err = relok_fadd64(relok_fsub64(p, relok_fsub64(s, bb)), relok_fsub64(z, bb));
    let finite = (s.y & 0x7ff00000u) != 0x7ff00000u;
    let inexact = (err.x | (err.y & 0x7fffffffu)) != 0u && !relok_isnan64(err);
    if (finite && inexact && (s.x & 1u) == 0u) {
        if ((err.y >> 31u) == (s.y >> 31u)) {
            s = relok_add64(s, vec2<u32>(1u, 0u));
        } else {
            s = relok_sub64(s, vec2<u32>(1u, 0u));
        }
    }
    return relok_f64_to_f32(s);
}
