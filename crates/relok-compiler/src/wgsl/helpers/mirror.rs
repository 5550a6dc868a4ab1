//! Rust transcriptions of the helpers' WGSL, line by line (`u32`
//! arithmetic wrapping as WGSL's; a shift asserts its amount is below 32,
//! where WGSL would take it modulo 32): one function per `.wgsl` file, of
//! the same name less `relok_`. `tests.rs` checks them against Rust's
//! native operations; a change to a helper's WGSL is mirrored here.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct V2 {
    x: u32,
    y: u32,
}
pub(super) const fn v2(x: u32, y: u32) -> V2 {
    V2 { x, y }
}
pub(super) fn of(a: u64) -> V2 {
    v2(a as u32, (a >> 32) as u32)
}
pub(super) fn to(a: V2) -> u64 {
    u64::from(a.x) | (u64::from(a.y) << 32)
}
fn shl(a: u32, s: u32) -> u32 {
    assert!(s < 32, "shift by {s}");
    a << s
}
fn shr(a: u32, s: u32) -> u32 {
    assert!(s < 32, "shift by {s}");
    a >> s
}
fn sar(a: i32, s: u32) -> i32 {
    assert!(s < 32, "shift by {s}");
    a >> s
}
fn sel<T>(f: T, t: T, c: bool) -> T {
    if c { t } else { f }
}
fn b2u(c: bool) -> u32 {
    sel(0, 1, c)
}

pub(super) fn isnan(x: f32) -> bool {
    (x.to_bits() & 0x7fff_ffff) > 0x7f80_0000
}

pub(super) fn add64(a: V2, b: V2) -> V2 {
    let lo = a.x.wrapping_add(b.x);
    v2(lo, a.y.wrapping_add(b.y).wrapping_add(b2u(lo < a.x)))
}

pub(super) fn sub64(a: V2, b: V2) -> V2 {
    v2(a.x.wrapping_sub(b.x), a.y.wrapping_sub(b.y).wrapping_sub(b2u(a.x < b.x)))
}

pub(super) fn mul32(a: u32, b: u32) -> V2 {
    let a0 = a & 0xffff;
    let a1 = shr(a, 16);
    let b0 = b & 0xffff;
    let b1 = shr(b, 16);
    let p00 = a0.wrapping_mul(b0);
    let p01 = a0.wrapping_mul(b1);
    let p10 = a1.wrapping_mul(b0);
    let p11 = a1.wrapping_mul(b1);
    let mid = shr(p00, 16).wrapping_add(p01 & 0xffff).wrapping_add(p10 & 0xffff);
    v2(
        shl(mid, 16) | (p00 & 0xffff),
        p11.wrapping_add(shr(p01, 16)).wrapping_add(shr(p10, 16)).wrapping_add(shr(mid, 16)),
    )
}

pub(super) fn mul64(a: V2, b: V2) -> V2 {
    let p = mul32(a.x, b.x);
    v2(p.x, p.y.wrapping_add(a.x.wrapping_mul(b.y)).wrapping_add(a.y.wrapping_mul(b.x)))
}

pub(super) fn lt_u64(a: V2, b: V2) -> bool {
    a.y < b.y || (a.y == b.y && a.x < b.x)
}

pub(super) fn lt_i64(a: V2, b: V2) -> bool {
    (a.y as i32) < (b.y as i32) || (a.y == b.y && a.x < b.x)
}

pub(super) fn shl64(a: V2, n: u32) -> V2 {
    let s = n & 63;
    if s == 0 {
        return a;
    }
    if s < 32 {
        return v2(shl(a.x, s), shl(a.y, s) | shr(a.x, 32 - s));
    }
    v2(0, shl(a.x, s - 32))
}

pub(super) fn shr64(a: V2, n: u32) -> V2 {
    let s = n & 63;
    if s == 0 {
        return a;
    }
    if s < 32 {
        return v2(shr(a.x, s) | shl(a.y, 32 - s), shr(a.y, s));
    }
    v2(shr(a.y, s - 32), 0)
}

pub(super) fn sar64(a: V2, n: u32) -> V2 {
    let s = n & 63;
    let h = a.y as i32;
    if s == 0 {
        return a;
    }
    if s < 32 {
        return v2(shr(a.x, s) | shl(a.y, 32 - s), sar(h, s) as u32);
    }
    v2(sar(h, s - 32) as u32, sar(h, 31) as u32)
}

pub(super) fn udivmod64(n: V2, d: V2) -> (V2, V2) {
    if d.x == 0 && d.y == 0 {
        return (v2(0, 0), n);
    }
    if n.y == 0 && d.y == 0 {
        return (v2(n.x / d.x, 0), v2(n.x % d.x, 0));
    }
    let mut q = n;
    let mut r = v2(0, 0);
    for _ in 0..64 {
        let top = shr(r.y, 31);
        r = v2(shl(r.x, 1) | shr(q.y, 31), shl(r.y, 1) | shr(r.x, 31));
        q = v2(shl(q.x, 1), shl(q.y, 1) | shr(q.x, 31));
        if top != 0 || !lt_u64(r, d) {
            r = sub64(r, d);
            q.x |= 1;
        }
    }
    (q, r)
}

pub(super) fn sdivmod64(n: V2, d: V2) -> (V2, V2) {
    let zero = v2(0, 0);
    let nneg = shr(n.y, 31) != 0;
    let dneg = shr(d.y, 31) != 0;
    let qr = udivmod64(sel(n, sub64(zero, n), nneg), sel(d, sub64(zero, d), dneg));
    let q = sel(qr.0, sub64(zero, qr.0), nneg != dneg);
    let r = sel(qr.1, sub64(zero, qr.1), nneg);
    (q, r)
}

pub(super) fn u64_to_f32(a: V2) -> f32 {
    if a.x == 0 && a.y == 0 {
        return 0.0;
    }
    let z = sel(a.y.leading_zeros(), 32 + a.x.leading_zeros(), a.y == 0);
    let m = shl64(a, z);
    let mant = shr(m.y, 8);
    let rest = m.y & 0xff;
    let up = rest > 0x80 || (rest == 0x80 && (m.x != 0 || (mant & 1) != 0));
    f32::from_bits(shl(189 - z, 23).wrapping_add(mant).wrapping_add(b2u(up)))
}

pub(super) fn i64_to_f32(a: V2) -> f32 {
    let neg = shr(a.y, 31) != 0;
    let f = u64_to_f32(sel(a, sub64(v2(0, 0), a), neg));
    f32::from_bits(f.to_bits() | sel(0, 0x8000_0000, neg))
}

pub(super) fn f32_to_i32(x: f32) -> i32 {
    let b = x.to_bits();
    let e = shr(b, 23) & 0xff;
    let neg = shr(b, 31) != 0;
    if (b & 0x7fff_ffff) > 0x7f80_0000 || e < 127 {
        return 0;
    }
    if e >= 158 {
        return sel(2_147_483_647, 0x8000_0000u32 as i32, neg);
    }
    let m = (b & 0x7f_ffff) | 0x80_0000;
    let u = if e >= 150 { shl(m, e - 150) } else { shr(m, 150 - e) };
    sel(u, 0u32.wrapping_sub(u), neg) as i32
}

pub(super) fn f32_to_u32(x: f32) -> u32 {
    let b = x.to_bits();
    let e = shr(b, 23) & 0xff;
    if (b & 0x7fff_ffff) > 0x7f80_0000 || shr(b, 31) != 0 || e < 127 {
        return 0;
    }
    if e >= 159 {
        return 0xffff_ffff;
    }
    let m = (b & 0x7f_ffff) | 0x80_0000;
    if e >= 150 {
        return shl(m, e - 150);
    }
    shr(m, 150 - e)
}

pub(super) fn f32_to_u64(x: f32) -> V2 {
    let b = x.to_bits();
    let e = shr(b, 23) & 0xff;
    if (b & 0x7fff_ffff) > 0x7f80_0000 || shr(b, 31) != 0 || e < 127 {
        return v2(0, 0);
    }
    if e >= 191 {
        return v2(0xffff_ffff, 0xffff_ffff);
    }
    let m = v2((b & 0x7f_ffff) | 0x80_0000, 0);
    if e >= 150 {
        return shl64(m, e - 150);
    }
    v2(shr(m.x, 150 - e), 0)
}

pub(super) fn f32_to_i64(x: f32) -> V2 {
    let b = x.to_bits();
    let e = shr(b, 23) & 0xff;
    let neg = shr(b, 31) != 0;
    if (b & 0x7fff_ffff) > 0x7f80_0000 || e < 127 {
        return v2(0, 0);
    }
    if e >= 190 {
        return sel(v2(0xffff_ffff, 0x7fff_ffff), v2(0, 0x8000_0000), neg);
    }
    let m = v2((b & 0x7f_ffff) | 0x80_0000, 0);
    let u = if e >= 150 { shl64(m, e - 150) } else { v2(shr(m.x, 150 - e), 0) };
    sel(u, sub64(v2(0, 0), u), neg)
}

pub(super) fn fdiv32(x: f32, y: f32) -> f32 {
    let (xb, yb) = (x.to_bits(), y.to_bits());
    let sign = (xb ^ yb) & 0x8000_0000;
    let (xa, ya) = (xb & 0x7fff_ffff, yb & 0x7fff_ffff);
    if xa > 0x7f80_0000 || ya > 0x7f80_0000 || (xa == 0 && ya == 0) || (xa == 0x7f80_0000 && ya == 0x7f80_0000) {
        return f32::from_bits(0x7fc0_0000);
    }
    if ya == 0 || xa == 0x7f80_0000 {
        return f32::from_bits(sign | 0x7f80_0000);
    }
    if ya == 0x7f80_0000 {
        return f32::from_bits(sign);
    }
    if ya > 0x7e80_0000 {
        // What a driver whose division is bounded only up to 2^126 sees.
        return (x * 0.25) / (y * 0.25);
    }
    if ya < 0x0080_0000 {
        let k = 31 - ya.leading_zeros();
        let y24 = f32::from_bits((yb & 0x8000_0000) | ((k + 2) << 23) | ((ya << (23 - k)) & 0x7f_ffff));
        return (x * 16_777_216.0) / y24;
    }
    x / y
}

/// `guess` is the driver's `sqrt` (of a value in [1, 4)).
pub(super) fn fsqrt32(x: f32, guess: impl Fn(f32) -> f32) -> f32 {
    let b = x.to_bits();
    let a = b & 0x7fff_ffff;
    if a == 0 || b == 0x7f80_0000 {
        return x;
    }
    if a > 0x7f80_0000 {
        return f32::from_bits(b | 0x0040_0000);
    }
    if b != a {
        return f32::from_bits(0xffc0_0000);
    }
    let mut e = shr(b, 23) as i32;
    let mut m = b & 0x7f_ffff;
    if e == 0 {
        let s = 23 - (31 - m.leading_zeros());
        m = shl(m, s);
        e = 1 - s as i32;
    } else {
        m |= 0x80_0000;
    }
    let odd = (e & 1) != 0;
    let n = sel(shl(m, 24), shl(m, 23), odd);
    let z = f32::from_bits(sel(0x4000_0000, 0x3f80_0000, odd) | (m & 0x7f_ffff));
    let mut y = (guess(z) * 8_388_608.0) as u32;
    let d = n.wrapping_sub(y.wrapping_mul(y)) as i32;
    y = (y as i32 + (d as f32 / 2u32.wrapping_mul(y) as f32).round_ties_even() as i32) as u32;
    let r = n.wrapping_sub(y.wrapping_mul(y)) as i32;
    y = y.wrapping_add(b2u(r - y as i32 > 0)).wrapping_sub(b2u(r + y as i32 <= 0));
    f32::from_bits(shl(sar(e + 125, 1) as u32, 23).wrapping_add(y))
}

pub(super) fn fmod32(x: f32, y: f32) -> f32 {
    let mut ux = x.to_bits();
    let mut uy = y.to_bits();
    let mut ex = (shr(ux, 23) & 0xff) as i32;
    let mut ey = (shr(uy, 23) & 0xff) as i32;
    let sx = ux & 0x8000_0000;
    if shl(uy, 1) == 0 || (uy & 0x7fff_ffff) > 0x7f80_0000 || ex == 255 {
        return f32::from_bits(0x7fc0_0000);
    }
    if shl(ux, 1) <= shl(uy, 1) {
        if shl(ux, 1) == shl(uy, 1) {
            return f32::from_bits(sx);
        }
        return f32::from_bits(ux);
    }
    if ex == 0 {
        let mut i = shl(ux, 9);
        loop {
            if shr(i, 31) != 0 {
                break;
            }
            ex -= 1;
            i = shl(i, 1);
        }
        ux = shl(ux, (1 - ex) as u32);
    } else {
        ux = (ux & 0x7f_ffff) | 0x80_0000;
    }
    if ey == 0 {
        let mut i = shl(uy, 9);
        loop {
            if shr(i, 31) != 0 {
                break;
            }
            ey -= 1;
            i = shl(i, 1);
        }
        uy = shl(uy, (1 - ey) as u32);
    } else {
        uy = (uy & 0x7f_ffff) | 0x80_0000;
    }
    loop {
        if ex <= ey {
            break;
        }
        let i = ux.wrapping_sub(uy);
        if shr(i, 31) == 0 {
            if i == 0 {
                return f32::from_bits(sx);
            }
            ux = i;
        }
        ux = shl(ux, 1);
        ex -= 1;
    }
    let i = ux.wrapping_sub(uy);
    if shr(i, 31) == 0 {
        if i == 0 {
            return f32::from_bits(sx);
        }
        ux = i;
    }
    loop {
        if shr(ux, 23) != 0 {
            break;
        }
        ux = shl(ux, 1);
        ex -= 1;
    }
    if ex > 0 {
        ux = ux.wrapping_sub(0x80_0000) | shl(ex as u32, 23);
    } else {
        ux = shr(ux, (1 - ex) as u32);
    }
    f32::from_bits(ux | sx)
}

// f64 as V2 (low, high): the binary64 helpers.

const DNAN: V2 = v2(0, 0xfff8_0000);

fn clz64(a: V2) -> u32 {
    sel(a.y.leading_zeros(), 32 + a.x.leading_zeros(), a.y == 0)
}

pub(super) fn isnan64(a: V2) -> bool {
    let h = a.y & 0x7fff_ffff;
    h > 0x7ff0_0000 || (h == 0x7ff0_0000 && a.x != 0)
}

pub(super) fn eq_f64(a: V2, b: V2) -> bool {
    !isnan64(a) && !isnan64(b) && ((a.x == b.x && a.y == b.y) || ((a.x | b.x) == 0 && ((a.y | b.y) & 0x7fff_ffff) == 0))
}

pub(super) fn lt_f64(a: V2, b: V2) -> bool {
    if isnan64(a) || isnan64(b) || ((a.x | b.x) == 0 && ((a.y | b.y) & 0x7fff_ffff) == 0) {
        return false;
    }
    let ka = sel(v2(a.x, a.y | 0x8000_0000), v2(!a.x, !a.y), shr(a.y, 31) != 0);
    let kb = sel(v2(b.x, b.y | 0x8000_0000), v2(!b.x, !b.y), shr(b.y, 31) != 0);
    lt_u64(ka, kb)
}

pub(super) fn min_f64(a: V2, b: V2) -> V2 {
    if isnan64(a) {
        return b;
    }
    if isnan64(b) {
        return a;
    }
    sel(a, b, lt_f64(b, a))
}

pub(super) fn max_f64(a: V2, b: V2) -> V2 {
    if isnan64(a) {
        return b;
    }
    if isnan64(b) {
        return a;
    }
    sel(a, b, lt_f64(a, b))
}

pub(super) fn u64_to_f64(a: V2) -> V2 {
    if a.x == 0 && a.y == 0 {
        return v2(0, 0);
    }
    let z = clz64(a);
    let m = shl64(a, z);
    let mant = v2(shr(m.x, 11) | shl(m.y, 21), shr(m.y, 11));
    let rest = m.x & 0x7ff;
    let up = rest > 0x400 || (rest == 0x400 && (mant.x & 1) != 0);
    add64(v2(mant.x, mant.y.wrapping_add(shl(1085 - z, 20))), v2(b2u(up), 0))
}

pub(super) fn i64_to_f64(a: V2) -> V2 {
    let neg = shr(a.y, 31) != 0;
    let f = u64_to_f64(sel(a, sub64(v2(0, 0), a), neg));
    v2(f.x, f.y | sel(0, 0x8000_0000, neg))
}

pub(super) fn f32_to_f64(x: f32) -> V2 {
    let b = x.to_bits();
    let s = b & 0x8000_0000;
    let e = shr(b, 23) & 0xff;
    let m = b & 0x7f_ffff;
    if e == 255 {
        return v2(shl(m, 29), s | 0x7ff0_0000 | shr(m, 3) | sel(0, 0x8_0000, m != 0));
    }
    if e == 0 {
        if m == 0 {
            return v2(0, s);
        }
        let z = m.leading_zeros() - 8;
        let n = shl(m, z) & 0x7f_ffff;
        return v2(shl(n, 29), s | shl(897 - z, 20) | shr(n, 3));
    }
    v2(shl(m, 29), s | shl(e + 896, 20) | shr(m, 3))
}

fn rsr64(m: V2, sh: u32) -> V2 {
    if sh == 0 {
        return m;
    }
    if sh >= 64 {
        return v2(0, 0);
    }
    let q = shr64(m, sh);
    let r = sub64(m, shl64(q, sh));
    let half = shl64(v2(1, 0), sh - 1);
    let up = lt_u64(half, r) || (r.x == half.x && r.y == half.y && (q.x & 1) != 0);
    add64(q, v2(b2u(up), 0))
}

pub(super) fn f64_to_f32(a: V2) -> f32 {
    let s = a.y & 0x8000_0000;
    let e = shr(a.y, 20) & 0x7ff;
    let hm = a.y & 0xf_ffff;
    if e == 0x7ff {
        if (hm | a.x) != 0 {
            return f32::from_bits(s | 0x7fc0_0000 | shl(hm, 3) | shr(a.x, 29));
        }
        return f32::from_bits(s | 0x7f80_0000);
    }
    if e >= 1151 {
        return f32::from_bits(s | 0x7f80_0000);
    }
    let m = v2(a.x, hm | sel(0x10_0000, 0, e == 0));
    let big = e >= 897;
    let r = rsr64(m, sel(926u32.wrapping_sub(e), 29, big));
    if big {
        return f32::from_bits(s | shl(e - 897, 23).wrapping_add(r.x));
    }
    f32::from_bits(s | r.x)
}

fn pack64(s: u32, e: i32, m: V2) -> V2 {
    if e >= 2047 {
        return v2(0, s | 0x7ff0_0000);
    }
    if e >= 1 {
        let r = rsr64(m, 10);
        let b = add64(r, v2(0, shl((e - 1) as u32, 20)));
        return v2(b.x, b.y | s);
    }
    let r = rsr64(m, (11 - e) as u32);
    v2(r.x, r.y | s)
}

fn unpack64(a: V2) -> (V2, i32) {
    let e = (shr(a.y, 20) & 0x7ff) as i32;
    let m = v2(a.x, a.y & 0xf_ffff);
    if e != 0 {
        return (v2(m.x, m.y | 0x10_0000), e);
    }
    let z = clz64(m) - 11;
    (shl64(m, z), 1 - z as i32)
}

fn nan2(a: V2, b: V2) -> V2 {
    let n = sel(b, a, isnan64(a));
    v2(n.x, n.y | 0x8_0000)
}

pub(super) fn fadd64(a: V2, b: V2) -> V2 {
    if isnan64(a) || isnan64(b) {
        return nan2(a, b);
    }
    let ea = shr(a.y, 20) & 0x7ff;
    let eb = shr(b.y, 20) & 0x7ff;
    if ea == 0x7ff {
        if eb == 0x7ff && shr(a.y ^ b.y, 31) != 0 {
            return DNAN;
        }
        return a;
    }
    if eb == 0x7ff {
        return b;
    }
    let swap = lt_u64(v2(a.x, a.y & 0x7fff_ffff), v2(b.x, b.y & 0x7fff_ffff));
    let x = sel(a, b, swap);
    let y = sel(b, a, swap);
    let ex = shr(x.y, 20) & 0x7ff;
    let ey = shr(y.y, 20) & 0x7ff;
    let sx = x.y & 0x8000_0000;
    let sub = shr(x.y ^ y.y, 31) != 0;
    let mx = shl64(v2(x.x, (x.y & 0xf_ffff) | sel(0x10_0000, 0, ex == 0)), 10);
    let m0 = shl64(v2(y.x, (y.y & 0xf_ffff) | sel(0x10_0000, 0, ey == 0)), 10);
    let d = ex.max(1) - ey.max(1);
    let mut my = m0;
    if d >= 64 {
        my = v2(b2u(m0.x != 0 || m0.y != 0), 0);
    } else if d > 0 {
        my = shr64(m0, d);
        let lost = sub64(m0, shl64(my, d));
        my.x |= b2u(lost.x != 0 || lost.y != 0);
    }
    let s = sel(add64(mx, my), sub64(mx, my), sub);
    if s.x == 0 && s.y == 0 {
        return v2(0, sel(sx, 0, sub));
    }
    let e = ex.max(1) as i32;
    if shr(s.y, 31) != 0 {
        return pack64(sx, e + 1, v2(shr(s.x, 1) | shl(s.y, 31) | (s.x & 1), shr(s.y, 1)));
    }
    let z = clz64(s) - 1;
    pack64(sx, e - z as i32, shl64(s, z))
}

pub(super) fn fsub64(a: V2, b: V2) -> V2 {
    fadd64(a, sel(v2(b.x, b.y ^ 0x8000_0000), b, isnan64(b)))
}

pub(super) fn mul128(a: V2, b: V2) -> [u32; 4] {
    let p00 = mul32(a.x, b.x);
    let p01 = mul32(a.x, b.y);
    let p10 = mul32(a.y, b.x);
    let p11 = mul32(a.y, b.y);
    let c1 = p00.y.wrapping_add(p01.x);
    let k1 = b2u(c1 < p00.y);
    let r1 = c1.wrapping_add(p10.x);
    let k2 = k1 + b2u(r1 < c1);
    let c2 = p01.y.wrapping_add(p10.y);
    let k3 = b2u(c2 < p01.y);
    let c3 = c2.wrapping_add(p11.x);
    let k4 = k3 + b2u(c3 < c2);
    let r2 = c3.wrapping_add(k2);
    let k5 = k4 + b2u(r2 < c3);
    [p00.x, r1, r2, p11.y.wrapping_add(k5)]
}

pub(super) fn fmul64(a: V2, b: V2) -> V2 {
    if isnan64(a) || isnan64(b) {
        return nan2(a, b);
    }
    let s = (a.y ^ b.y) & 0x8000_0000;
    let za = a.x == 0 && (a.y & 0x7fff_ffff) == 0;
    let zb = b.x == 0 && (b.y & 0x7fff_ffff) == 0;
    let ia = (shr(a.y, 20) & 0x7ff) == 0x7ff;
    let ib = (shr(b.y, 20) & 0x7ff) == 0x7ff;
    if ia || ib {
        if za || zb {
            return DNAN;
        }
        return v2(0, s | 0x7ff0_0000);
    }
    if za || zb {
        return v2(0, s);
    }
    let (ma, ea) = unpack64(a);
    let (mb, eb) = unpack64(b);
    let p = mul128(shl64(ma, 10), shl64(mb, 11));
    let e = ea + eb;
    if shr(p[3], 30) != 0 {
        return pack64(s, e - 1022, v2(p[2] | b2u(p[0] != 0 || p[1] != 0), p[3]));
    }
    pack64(
        s,
        e - 1023,
        v2(shl(p[2], 1) | shr(p[1], 31) | b2u(p[0] != 0 || shl(p[1], 1) != 0), shl(p[3], 1) | shr(p[2], 31)),
    )
}

pub(super) fn fdiv64(a: V2, b: V2) -> V2 {
    if isnan64(a) || isnan64(b) {
        return nan2(a, b);
    }
    let s = (a.y ^ b.y) & 0x8000_0000;
    let za = a.x == 0 && (a.y & 0x7fff_ffff) == 0;
    let zb = b.x == 0 && (b.y & 0x7fff_ffff) == 0;
    let ia = (shr(a.y, 20) & 0x7ff) == 0x7ff;
    let ib = (shr(b.y, 20) & 0x7ff) == 0x7ff;
    if ia {
        if ib {
            return DNAN;
        }
        return v2(0, s | 0x7ff0_0000);
    }
    if ib {
        return v2(0, s);
    }
    if zb {
        if za {
            return DNAN;
        }
        return v2(0, s | 0x7ff0_0000);
    }
    if za {
        return v2(0, s);
    }
    let (ma, ea) = unpack64(a);
    let (mb, eb) = unpack64(b);
    let mut e = ea - eb + 1023;
    let mut r = ma;
    if lt_u64(r, mb) {
        r = shl64(r, 1);
        e -= 1;
    }
    let mut q = v2(0, 0);
    for _ in 0..63 {
        q = shl64(q, 1);
        if !lt_u64(r, mb) {
            r = sub64(r, mb);
            q.x |= 1;
        }
        r = shl64(r, 1);
    }
    pack64(s, e, v2(q.x | b2u(r.x != 0 || r.y != 0), q.y))
}

pub(super) fn fsqrt64(a: V2) -> V2 {
    if isnan64(a) {
        return v2(a.x, a.y | 0x8_0000);
    }
    if a.x == 0 && (a.y & 0x7fff_ffff) == 0 {
        return a;
    }
    if shr(a.y, 31) != 0 {
        return DNAN;
    }
    if a.y == 0x7ff0_0000 {
        return a;
    }
    let (m0, e0) = unpack64(a);
    let mut u = e0 - 1075;
    let mut m = m0;
    if (u & 1) != 0 {
        m = shl64(m, 1);
        u -= 1;
    }
    let mut x = shl64(m, 10);
    let mut q = v2(0, 0);
    let mut r = v2(0, 0);
    for _ in 0..56 {
        r = shl64(r, 2);
        r.x |= shr(x.y, 30);
        x = shl64(x, 2);
        let t = v2(shl(q.x, 2) | 1, shl(q.y, 2) | shr(q.x, 30));
        q = shl64(q, 1);
        if !lt_u64(r, t) {
            r = sub64(r, t);
            q.x |= 1;
        }
    }
    let m = shl64(q, 7);
    pack64(0, u / 2 + 1049, v2(m.x | b2u(r.x != 0 || r.y != 0), m.y))
}

pub(super) fn frem64(a: V2, b: V2) -> V2 {
    if isnan64(a) || isnan64(b) {
        return nan2(a, b);
    }
    if (b.x == 0 && (b.y & 0x7fff_ffff) == 0) || (shr(a.y, 20) & 0x7ff) == 0x7ff {
        return DNAN;
    }
    let sx = a.y & 0x8000_0000;
    let ax = v2(a.x, a.y & 0x7fff_ffff);
    let ay = v2(b.x, b.y & 0x7fff_ffff);
    if !lt_u64(ay, ax) {
        if ax.x == ay.x && ax.y == ay.y {
            return v2(0, sx);
        }
        return a;
    }
    let (mx, ex) = unpack64(a);
    let (my, ey) = unpack64(b);
    let mut ux = mx;
    let mut e = ex;
    loop {
        if e <= ey {
            break;
        }
        let i = sub64(ux, my);
        if shr(i.y, 31) == 0 {
            if i.x == 0 && i.y == 0 {
                return v2(0, sx);
            }
            ux = i;
        }
        ux = shl64(ux, 1);
        e -= 1;
    }
    let i = sub64(ux, my);
    if shr(i.y, 31) == 0 {
        if i.x == 0 && i.y == 0 {
            return v2(0, sx);
        }
        ux = i;
    }
    loop {
        if shr(ux.y, 20) != 0 {
            break;
        }
        ux = shl64(ux, 1);
        e -= 1;
    }
    if e > 0 {
        return v2(ux.x, (ux.y - 0x10_0000) | shl(e as u32, 20) | sx);
    }
    let r = shr64(ux, (1 - e) as u32);
    v2(r.x, r.y | sx)
}

fn f64_mag(a: V2) -> V2 {
    if isnan64(a) {
        return v2(0, 0);
    }
    let e = shr(a.y, 20) & 0x7ff;
    if e < 1023 {
        return v2(0, 0);
    }
    if e >= 1087 {
        return v2(0xffff_ffff, 0xffff_ffff);
    }
    let m = v2(a.x, (a.y & 0xf_ffff) | 0x10_0000);
    if e >= 1075 {
        return shl64(m, e - 1075);
    }
    shr64(m, 1075 - e)
}

pub(super) fn f64_to_u64(a: V2) -> V2 {
    sel(f64_mag(a), v2(0, 0), shr(a.y, 31) != 0)
}

pub(super) fn f64_to_i64(a: V2) -> V2 {
    let m = f64_mag(a);
    if shr(a.y, 31) != 0 {
        if lt_u64(v2(0, 0x8000_0000), m) {
            return v2(0, 0x8000_0000);
        }
        return sub64(v2(0, 0), m);
    }
    if lt_u64(v2(0xffff_ffff, 0x7fff_ffff), m) {
        return v2(0xffff_ffff, 0x7fff_ffff);
    }
    m
}

pub(super) fn f64_to_u32(a: V2) -> u32 {
    let m = f64_mag(a);
    if shr(a.y, 31) != 0 {
        return 0;
    }
    sel(m.x, 0xffff_ffff, m.y != 0)
}

pub(super) fn f64_to_i32(a: V2) -> i32 {
    let m = f64_mag(a);
    if shr(a.y, 31) != 0 {
        if m.y != 0 || m.x > 0x8000_0000 {
            return 0x8000_0000u32 as i32;
        }
        return 0u32.wrapping_sub(m.x) as i32;
    }
    if m.y != 0 || m.x > 0x7fff_ffff {
        return 2_147_483_647;
    }
    m.x as i32
}

pub(super) fn fma32(a: f32, b: f32, c: f32) -> f32 {
    let p = fmul64(f32_to_f64(a), f32_to_f64(b));
    let z = f32_to_f64(c);
    let mut s = fadd64(p, z);
    let bb = fsub64(s, p);
    let err = fadd64(fsub64(p, fsub64(s, bb)), fsub64(z, bb));
    let finite = (s.y & 0x7ff0_0000) != 0x7ff0_0000;
    let inexact = (err.x | (err.y & 0x7fff_ffff)) != 0 && !isnan64(err);
    if finite && inexact && (s.x & 1) == 0 {
        if shr(err.y, 31) == shr(s.y, 31) {
            s = add64(s, v2(1, 0));
        } else {
            s = sub64(s, v2(1, 0));
        }
    }
    f64_to_f32(s)
}

pub(super) fn fround64(a: V2, mode: u32) -> V2 {
    let e = (shr(a.y, 20) & 0x7ff) as i32 - 1023;
    let neg = shr(a.y, 31) != 0;
    if e >= 52 {
        return a;
    }
    let sign = a.y & 0x8000_0000;
    if e < 0 {
        let nonzero = (a.x | (a.y & 0x7fff_ffff)) != 0;
        let one = v2(0, sign | 0x3ff0_0000);
        if mode == 0 && neg && nonzero {
            return one;
        }
        if mode == 1 && !neg && nonzero {
            return one;
        }
        if mode == 3 && e == -1 {
            return one;
        }
        return v2(0, sign);
    }
    let fb = (52 - e) as u32;
    let unit = shl64(v2(1, 0), fb);
    let mask = sub64(unit, v2(1, 0));
    let frac = v2(a.x & mask.x, a.y & mask.y);
    let t = v2(a.x & !mask.x, a.y & !mask.y);
    if (frac.x | frac.y) == 0 {
        return a;
    }
    let mut up = false;
    if mode == 0 {
        up = neg;
    }
    if mode == 1 {
        up = !neg;
    }
    if mode == 3 {
        up = !lt_u64(frac, shl64(v2(1, 0), fb - 1));
    }
    if up {
        return add64(t, unit);
    }
    t
}
