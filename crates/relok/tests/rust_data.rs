//! Rust kernels' data: user structs (`#[derive(relok::Struct)]`) and
//! tuples compute what the same Rust computes on the host, on every
//! device (the cpu device always; wgpu on lavapipe here; cuda when a GPU
//! is present). Each kernel below has its plain-Rust twin, run over the
//! same inputs, and the results are compared exactly.
//!
//! - structs: as a slice element (`&[Particle]`, `Buffer<Particle>`),
//!   one field read and written through an index (`ps[i].x`,
//!   `ps[i].v += …`), a whole element loaded and stored, a parameter by
//!   value (of kernels and device functions), a local (`let`, `let mut`,
//!   `p.x = …`), a literal, a device function's result, a `let` pattern,
//!   an `if` value;
//! - tuples: literals, `t.0`, `let (a, b) = …` of any value, `if` and
//!   `match` values, device functions' results, `sin_cos`,
//!   `overflowing_add` / `_sub` / `_mul`, `abs_diff`;
//! - the IR of a struct loop against its hand-written scalar twin;
//! - `u8 i8 u16 i16` and `&[bool]` (`rust_data/small_ints.rs`) and
//!   `Option` (`rust_data/option.rs`).

mod common;

use common::{check, contexts, serial};
use relok::{Grid, Strategy};

#[derive(Clone, Copy, Debug, PartialEq, relok::Struct)]
#[repr(C)]
pub struct Particle {
    pub x: f32,
    pub v: f32,
    pub id: u32,
}

/// Every kind of field, 8-byte ones first.
#[derive(Clone, Copy, Debug, PartialEq, relok::Struct)]
#[repr(C)]
struct Mixed {
    a: f64,
    b: i64,
    c: u64,
    d: i32,
    e: u32,
}

fn particles(n: usize) -> Vec<Particle> {
    (0..n).map(|i| Particle { x: i as f32 * 0.5 - 3.0, v: 1.25 - i as f32 * 0.125, id: i as u32 * 7 }).collect()
}

fn grid(n: usize) -> Grid {
    Grid::cover(n, 64)
}

// 1. Structs as slice elements, locals and parameters.

#[relok::kernel]
fn step(ps: &[Particle], out: &mut [Particle], dt: f32) {
    let i = relok::global_id_x();
    if i < ps.len() {
        let p = ps[i];
        let mut q = p;
        q.x = p.x + p.v * dt;
        q.v *= 0.5;
        out[i] = q;
        out[i].id = ps[i].id + 1;
    }
}

fn step_host(ps: &[Particle], out: &mut [Particle], dt: f32) {
    for i in 0..ps.len() {
        let p = ps[i];
        let mut q = p;
        q.x = p.x + p.v * dt;
        q.v *= 0.5;
        out[i] = q;
        out[i].id = ps[i].id + 1;
    }
}

#[test]
fn a_struct_is_a_slice_element_a_local_and_a_field_place() {
    let ps = particles(100);
    let mut want = vec![Particle { x: 0.0, v: 0.0, id: 0 }; ps.len()];
    step_host(&ps, &mut want, 0.75);
    check("step", &ps, &want, |s, x, out| step::launch(s, grid(x.len()), x, out, 0.75).expect("launch"));
}

#[relok::device]
fn advanced(p: Particle, dt: f32) -> Particle {
    Particle { x: p.x + p.v * dt, v: p.v, id: p.id }
}

#[relok::device]
fn energy(p: Particle) -> f32 {
    0.5 * p.v * p.v
}

#[relok::kernel]
fn device_structs(ps: &[Particle], out: &mut [Particle], e: &mut [f32], kick: Particle) {
    let i = relok::global_id_x();
    if i < ps.len() {
        let p = advanced(ps[i], 2.0);
        let Particle { x, v, .. } = p;
        let q = if x > 0.0 { Particle { x, v: v + kick.v, id: kick.id } } else { p };
        out[i] = q;
        e[i] = energy(q);
        out[i].x += kick.x;
    }
}

fn device_structs_host(ps: &[Particle], out: &mut [Particle], e: &mut [f32], kick: Particle) {
    for i in 0..ps.len() {
        let p = Particle { x: ps[i].x + ps[i].v * 2.0, v: ps[i].v, id: ps[i].id };
        let Particle { x, v, .. } = p;
        let q = if x > 0.0 { Particle { x, v: v + kick.v, id: kick.id } } else { p };
        out[i] = q;
        e[i] = 0.5 * q.v * q.v;
        out[i].x += kick.x;
    }
}

#[test]
fn structs_cross_device_functions_and_kernel_parameters() {
    let _g = serial();
    let ps = particles(70);
    let kick = Particle { x: 0.25, v: -1.5, id: 99 };
    let mut want = vec![Particle { x: 0.0, v: 0.0, id: 0 }; ps.len()];
    let mut want_e = vec![0.0f32; ps.len()];
    device_structs_host(&ps, &mut want, &mut want_e, kick);
    for ctx in contexts(Strategy::Table) {
        let x = ctx.upload(&ps).expect("upload");
        let mut out = ctx.zeros::<Particle>(ps.len()).expect("zeros");
        let mut e = ctx.zeros::<f32>(ps.len()).expect("zeros");
        let s = ctx.stream();
        device_structs::launch(&s, grid(ps.len()), &x, &mut out, &mut e, kick).expect("launch");
        s.synchronize().expect("sync");
        assert_eq!(out.download().expect("download"), want, "on {}", ctx.device_name());
        assert_eq!(e.download().expect("download"), want_e, "on {}", ctx.device_name());
    }
}

#[relok::kernel]
fn mixed(xs: &[Mixed], out: &mut [Mixed]) {
    let i = relok::global_id_x();
    if i < xs.len() {
        let m = xs[i];
        out[i] = Mixed { a: m.a * 2.0, b: m.b - 3, c: m.c ^ 0xffff_0000_ffff, d: -m.d, e: m.e.rotate_left(3) };
    }
}

#[test]
fn every_field_type_round_trips() {
    let xs: Vec<Mixed> = (0..40)
        .map(|i| Mixed {
            a: i as f64 * 1.5 - 7.0,
            b: i64::MIN + i * 1_000_000_007,
            c: u64::MAX - i as u64 * 3,
            d: i as i32 * -5 + 3,
            e: 0x8000_0001 + i as u32,
        })
        .collect();
    let want: Vec<Mixed> = xs
        .iter()
        .map(|m| Mixed { a: m.a * 2.0, b: m.b - 3, c: m.c ^ 0xffff_0000_ffff, d: -m.d, e: m.e.rotate_left(3) })
        .collect();
    check("mixed", &xs, &want, |s, x, out| mixed::launch(s, grid(x.len()), x, out).expect("launch"));
}

// 2. Tuples.

#[relok::device]
fn minmax(a: u32, b: u32) -> (u32, u32) {
    if a < b { (a, b) } else { (b, a) }
}

#[relok::kernel]
fn tuples(x: &[u32], out: &mut [u32]) {
    let i = relok::global_id_x();
    if i + 1 < x.len() {
        let (a, b) = (x[i], x[i + 1]);
        let (lo, hi) = if a < b { (a, b) } else { (b, a) };
        let t = minmax(b, a);
        let (sum, carried) = a.overflowing_add(b);
        let (diff, borrowed) = a.overflowing_sub(b);
        let (prod, over) = a.overflowing_mul(b);
        let pick = match a % 3 {
            0 => (lo, 1u32),
            1 => (hi, 2),
            _ => t,
        };
        let mut acc = (0u32, 0u32);
        acc.0 = pick.0 + pick.1;
        acc.1 += t.1 - t.0;
        out[8 * i] = lo ^ hi;
        out[8 * i + 1] = t.0 + t.1 * 3;
        out[8 * i + 2] = sum + carried as u32;
        out[8 * i + 3] = diff + borrowed as u32;
        out[8 * i + 4] = prod + over as u32;
        out[8 * i + 5] = a.abs_diff(b);
        out[8 * i + 6] = acc.0;
        out[8 * i + 7] = acc.1;
    }
}

fn tuples_host(x: &[u32], out: &mut [u32]) {
    let minmax = |a: u32, b: u32| if a < b { (a, b) } else { (b, a) };
    for i in 0..x.len() - 1 {
        let (a, b) = (x[i], x[i + 1]);
        let (lo, hi) = if a < b { (a, b) } else { (b, a) };
        let t = minmax(b, a);
        let (sum, carried) = a.overflowing_add(b);
        let (diff, borrowed) = a.overflowing_sub(b);
        let (prod, over) = a.overflowing_mul(b);
        let pick = match a % 3 {
            0 => (lo, 1u32),
            1 => (hi, 2),
            _ => t,
        };
        let mut acc = (0u32, 0u32);
        acc.0 = pick.0 + pick.1;
        acc.1 += t.1 - t.0;
        out[8 * i] = lo ^ hi;
        out[8 * i + 1] = t.0.wrapping_add(t.1.wrapping_mul(3));
        out[8 * i + 2] = sum + carried as u32;
        out[8 * i + 3] = diff.wrapping_add(borrowed as u32);
        out[8 * i + 4] = prod.wrapping_add(over as u32);
        out[8 * i + 5] = a.abs_diff(b);
        out[8 * i + 6] = acc.0.wrapping_add(0);
        out[8 * i + 7] = acc.1;
    }
}

const EDGES_U32: [u32; 12] = [0, 1, 2, 3, 7, 1000, 65_535, 65_536, 0x7fff_ffff, 0x8000_0000, u32::MAX - 1, u32::MAX];

#[test]
fn tuples_are_values_of_ifs_matches_and_device_functions() {
    let mut x: Vec<u32> = Vec::new();
    for a in EDGES_U32 {
        for b in EDGES_U32 {
            x.push(a);
            x.push(b);
        }
    }
    let mut want = vec![0u32; 8 * x.len()];
    tuples_host(&x, &mut want);
    check("tuples", &x, &want, |s, x, out| tuples::launch(s, grid(x.len()), x, out).expect("launch"));
}

// 3. What a struct costs: nothing over the hand-written index loop.

#[relok::kernel]
fn drift(ps: &mut [Particle], dt: f32) {
    let i = relok::global_id_x();
    if i < ps.len() {
        let p = ps[i];
        ps[i].x = p.x + p.v * dt;
    }
}

/// `drift` by hand over the same bytes: three words per particle.
#[relok::kernel]
fn drift_words(words: &mut [f32], dt: f32) {
    let i = relok::global_id_x();
    if i < words.len() / 3 {
        unsafe {
            let x = *words.get_unchecked(3 * i);
            let v = *words.get_unchecked(3 * i + 1);
            *words.get_unchecked_mut(3 * i) = x + v * dt;
        }
    }
}

/// The optimised, lowered module of a Rust kernel, every call inlined (the
/// throws too: the GPU targets keep those as out-of-line tails).
fn lowered(p: &relok::Program, kernel: &str) -> relok_ir::Module {
    let mut m = p.module().clone();
    relok_compiler::passes::optimize(&mut m).expect("optimises");
    relok_compiler::lower::lower(&m, kernel, Strategy::Table, None).expect("lowers").module
}

/// The PTX instructions of a module's kernel (its lines ending in `;`
/// inside the body).
fn ptx_instructions(m: &relok_ir::Module) -> Vec<String> {
    let ptx = relok_compiler::ptx::write_string(m, &relok_compiler::ptx::Options { sm: 90, ..Default::default() })
        .expect("writes PTX");
    let body = ptx.split_once(".entry").map(|(_, b)| b).unwrap_or(&ptx);
    body.lines()
        .map(str::trim)
        .filter(|l| l.ends_with(';') && !l.starts_with(".reg") && !l.starts_with(".param"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_struct_loop_costs_nothing_over_the_hand_written_index_loop() {
    let s = lowered(drift::program().expect("builds"), "drift");
    let w = lowered(drift_words::program().expect("builds"), "drift_words");
    let text = relok_ir::print(&s);
    let count = |what: &str| text.lines().filter(|l| l.contains(what)).count();
    // `let p = ps[i];` then `p.x`, `p.v`: the two fields read are loaded,
    // not `id`; `ps[i].x = …` stores one field; the bounds checks are
    // gone under `if i < ps.len()`; one `offset`, then a field each.
    assert_eq!((count("= load "), count("store "), count("call "), count("= offset ")), (2, 1, 0, 1), "{text}");
    let (ps, pw) = (ptx_instructions(&s), ptx_instructions(&w));
    let memory = |p: &[String]| p.iter().filter(|l| l.starts_with("ld.global") || l.starts_with("st.global")).count();
    assert_eq!((memory(&ps), memory(&pw)), (3, 3), "{}\n----\n{}", ps.join("\n"), pw.join("\n"));
    assert!(ps.len() <= pw.len(), "the struct kernel's PTX is longer:\n{}\n----\n{}", ps.join("\n"), pw.join("\n"));
}

// 4. More: iterators over struct slices, `mut` struct parameters and
// whole reassignment, `match` values, the tuple methods over signed and
// 64-bit edge values, `sin_cos`.

#[relok::kernel]
fn pull(ps: &[Particle], out: &mut [Particle], mut q: Particle) {
    let i = relok::global_id_x();
    if i < ps.len() {
        let me = ps[i];
        let mut force = 0.0f32;
        for (j, p) in ps.iter().enumerate() {
            if j != i {
                force += (p.x - me.x) * 0.01;
            }
        }
        q.x += force;
        q.id = match me.id % 3 {
            0 => me.id,
            1 => q.id + me.id,
            _ => 7,
        };
        let mut best = me;
        if force > 0.0 {
            best = q;
        }
        out[i] = best;
    }
}

fn pull_host(ps: &[Particle], out: &mut [Particle], q0: Particle) {
    for i in 0..ps.len() {
        let mut q = q0;
        let me = ps[i];
        let mut force = 0.0f32;
        for (j, p) in ps.iter().enumerate() {
            if j != i {
                force += (p.x - me.x) * 0.01;
            }
        }
        q.x += force;
        q.id = match me.id % 3 {
            0 => me.id,
            1 => q.id + me.id,
            _ => 7,
        };
        let mut best = me;
        if force > 0.0 {
            best = q;
        }
        out[i] = best;
    }
}

#[test]
fn struct_slices_iterate_and_struct_parameters_are_mut() {
    let ps = particles(50);
    let q = Particle { x: 10.0, v: 0.5, id: 1000 };
    let mut want = vec![Particle { x: 0.0, v: 0.0, id: 0 }; ps.len()];
    pull_host(&ps, &mut want, q);
    check("pull", &ps, &want, |s, x, out| pull::launch(s, grid(x.len()), x, out, q).expect("launch"));
}

#[relok::kernel]
fn signed_tuples(x: &[i32], y: &[i64], out: &mut [u64]) {
    let i = relok::global_id_x();
    if i < x.len() && i < y.len() {
        let (a, b) = (x[i], x[x.len() - 1 - i]);
        let (c, d) = (y[i], y[y.len() - 1 - i]);
        let (s, o1) = a.overflowing_add(b);
        let (t, o2) = a.overflowing_sub(b);
        let (m, o3) = c.overflowing_mul(d);
        let (n, o4) = c.overflowing_sub(d);
        let flags = o1 as u64 | (o2 as u64) << 1 | (o3 as u64) << 2 | (o4 as u64) << 3;
        out[6 * i] = s as u32 as u64 | (t as u32 as u64) << 32;
        out[6 * i + 1] = m as u64;
        out[6 * i + 2] = n as u64;
        out[6 * i + 3] = flags;
        out[6 * i + 4] = a.abs_diff(b) as u64;
        out[6 * i + 5] = c.abs_diff(d) ^ (c as u64).abs_diff(d as u64).rotate_left(1);
    }
}

fn signed_tuples_host(x: &[i32], y: &[i64], out: &mut [u64]) {
    for i in 0..x.len() {
        let (a, b) = (x[i], x[x.len() - 1 - i]);
        let (c, d) = (y[i], y[y.len() - 1 - i]);
        let (s, o1) = a.overflowing_add(b);
        let (t, o2) = a.overflowing_sub(b);
        let (m, o3) = c.overflowing_mul(d);
        let (n, o4) = c.overflowing_sub(d);
        let flags = o1 as u64 | (o2 as u64) << 1 | (o3 as u64) << 2 | (o4 as u64) << 3;
        out[6 * i] = s as u32 as u64 | (t as u32 as u64) << 32;
        out[6 * i + 1] = m as u64;
        out[6 * i + 2] = n as u64;
        out[6 * i + 3] = flags;
        out[6 * i + 4] = a.abs_diff(b) as u64;
        out[6 * i + 5] = c.abs_diff(d) ^ (c as u64).abs_diff(d as u64).rotate_left(1);
    }
}

#[test]
fn overflowing_and_abs_diff_at_signed_and_64_bit_edges() {
    let _g = serial();
    let x: Vec<i32> =
        vec![0, 1, -1, 2, -2, 1000, -1000, 65_536, i32::MAX, i32::MIN, i32::MAX - 1, i32::MIN + 1, 46_341];
    let y: Vec<i64> =
        vec![0, 1, -1, 3, -3, 1 << 32, -(1 << 32), 3_037_000_500, i64::MAX, i64::MIN, i64::MAX - 1, i64::MIN + 1, -7];
    let mut want = vec![0u64; 6 * x.len()];
    signed_tuples_host(&x, &y, &mut want);
    for ctx in contexts(Strategy::Table) {
        let bx = ctx.upload(&x).expect("upload");
        let by = ctx.upload(&y).expect("upload");
        let mut out = ctx.zeros::<u64>(want.len()).expect("zeros");
        let s = ctx.stream();
        signed_tuples::launch(&s, grid(x.len()), &bx, &by, &mut out).expect("launch");
        s.synchronize().expect("sync");
        assert_eq!(out.download().expect("download"), want, "on {}", ctx.device_name());
    }
}

#[relok::kernel]
fn sin_cos(x: &[f32], out: &mut [f32]) {
    let i = relok::global_id_x();
    if i < x.len() {
        let (s, c) = x[i].sin_cos();
        let t = f32::sin_cos(x[i] * 2.0);
        out[4 * i] = s - x[i].sin();
        out[4 * i + 1] = c - x[i].cos();
        out[4 * i + 2] = t.0;
        out[4 * i + 3] = t.1;
    }
}

#[test]
fn sin_cos_is_sin_and_cos() {
    let _g = serial();
    let x: Vec<f32> = (0..64).map(|k| k as f32 * 0.37 - 11.0).collect();
    for ctx in contexts(Strategy::Table) {
        let bx = ctx.upload(&x).expect("upload");
        let mut out = ctx.zeros::<f32>(4 * x.len()).expect("zeros");
        let s = ctx.stream();
        sin_cos::launch(&s, grid(x.len()), &bx, &mut out).expect("launch");
        s.synchronize().expect("sync");
        let got = out.download().expect("download");
        for (i, &v) in x.iter().enumerate() {
            // The device's own `sin` and `cos`, exactly; Rust's within
            // the math library's bounds.
            assert_eq!((got[4 * i], got[4 * i + 1]), (0.0, 0.0), "x = {v} on {}", ctx.device_name());
            let (s2, c2) = (v * 2.0).sin_cos();
            for (g, w) in [(got[4 * i + 2], s2), (got[4 * i + 3], c2)] {
                assert!(
                    (g - w).abs() <= 4.0 * f32::EPSILON.max(w.abs() * f32::EPSILON),
                    "{g} vs {w} at x = {v} on {}",
                    ctx.device_name()
                );
            }
        }
    }
}

// 5. A struct's methods as device functions.

#[derive(Clone, Copy, Debug, PartialEq, relok::Struct)]
#[repr(C)]
pub struct Vec3 {
    pub x: f32,
    pub y: f32,
    pub z: f32,
}

#[relok::device]
impl Vec3 {
    fn dot(self, o: Vec3) -> f32 {
        self.x * o.x + self.y * o.y + self.z * o.z
    }

    fn scaled(&self, k: f32) -> Vec3 {
        Vec3 { x: self.x * k, y: self.y * k, z: self.z * k }
    }

    fn norm2(self) -> f32 {
        self.x * self.x + self.y * self.y + self.z * self.z
    }

    fn project(self, o: Vec3) -> Self {
        let k = self.dot(o) / o.norm2();
        o.scaled(k)
    }

    /// Host-only: no receiver.
    fn new(x: f32, y: f32, z: f32) -> Vec3 {
        Vec3 { x, y, z }
    }
}

#[relok::kernel]
fn methods(a: &[Vec3], out: &mut [Vec3], dots: &mut [f32], axis: Vec3) {
    let i = relok::global_id_x();
    if i < a.len() {
        let v = a[i];
        let mut w = v.scaled(2.0);
        let half = v.scaled(0.5).norm2();
        dots[i] = w.dot(axis) + a[i].norm2() + half;
        w = w.project(axis);
        out[i] = w;
    }
}

#[test]
fn methods_of_a_device_impl_are_called_as_in_rust() {
    let _g = serial();
    let a: Vec<Vec3> = (0..30).map(|k| Vec3::new(k as f32 * 0.5, 1.0 - k as f32, 0.25 * k as f32)).collect();
    let axis = Vec3 { x: 0.5, y: -2.0, z: 1.5 };
    let want: Vec<Vec3> = a.iter().map(|v| v.scaled(2.0).project(axis)).collect();
    let want_d: Vec<f32> = a.iter().map(|v| v.scaled(2.0).dot(axis) + v.norm2() + v.scaled(0.5).norm2()).collect();
    for ctx in contexts(Strategy::Table) {
        let ba = ctx.upload(&a).expect("upload");
        let mut out = ctx.zeros::<Vec3>(a.len()).expect("zeros");
        let mut d = ctx.zeros::<f32>(a.len()).expect("zeros");
        let s = ctx.stream();
        methods::launch(&s, grid(a.len()), &ba, &mut out, &mut d, axis).expect("launch");
        s.synchronize().expect("sync");
        let got = out.download().expect("download");
        if ctx.device_kind() == relok::DeviceKind::Wgpu {
            // `project` divides: WGSL's f32 division is within 2.5 ulp
            // (docs/wgpu.md; NVIDIA's Vulkan driver gave 1 ulp off), which
            // the product by `o` keeps within 3.
            let ulps = |a: f32, b: f32| a.to_bits().abs_diff(b.to_bits());
            for (g, w) in got.iter().zip(&want) {
                let worst = ulps(g.x, w.x).max(ulps(g.y, w.y)).max(ulps(g.z, w.z));
                assert!(worst <= 3, "on {}: {g:?} against {w:?}", ctx.device_name());
            }
        } else {
            assert_eq!(got, want, "on {}", ctx.device_name());
        }
        assert_eq!(d.download().expect("download"), want_d, "on {}", ctx.device_name());
    }
    // A method returning a scalar is one IR device function, named by its
    // path (mangled); one returning a struct is staged into its callers.
    let text = methods::program().expect("builds").to_text();
    let fns = |m: &str| text.lines().filter(|l| l.starts_with("fn @") && l.contains(m)).count();
    assert_eq!(
        (fns("4Vec33dot("), fns("4Vec35norm2("), fns("4Vec36scaled("), fns("4Vec37project(")),
        (1, 1, 0, 0),
        "{text}"
    );
}

// 6. A copy is a copy; an element's index is checked.

#[relok::kernel]
fn copies(ps: &mut [Particle], out: &mut [f32]) {
    let i = relok::global_id_x();
    if i < ps.len() {
        let p = ps[i];
        ps[i].x = 9.0;
        ps[i].v += 1.0;
        out[2 * i] = p.x + p.v;
        let q = ps[i];
        let r = q;
        ps[i] = Particle { x: 1.0, v: 2.0, id: 3 };
        out[2 * i + 1] = r.x * 10.0 + r.v + r.id as f32;
    }
}

#[test]
fn a_loaded_struct_is_a_copy() {
    let _g = serial();
    let ps = particles(20);
    let mut want = vec![0.0f32; 2 * ps.len()];
    for (i, p) in ps.iter().enumerate() {
        want[2 * i] = p.x + p.v;
        want[2 * i + 1] = 9.0 * 10.0 + (p.v + 1.0) + p.id as f32;
    }
    for ctx in contexts(Strategy::Table) {
        let mut b = ctx.upload(&ps).expect("upload");
        let mut out = ctx.zeros::<f32>(want.len()).expect("zeros");
        let s = ctx.stream();
        copies::launch(&s, grid(ps.len()), &mut b, &mut out).expect("launch");
        s.synchronize().expect("sync");
        assert_eq!(out.download().expect("download"), want, "on {}", ctx.device_name());
        assert!(b.download().expect("download").iter().all(|p| *p == Particle { x: 1.0, v: 2.0, id: 3 }));
    }
}

#[relok::kernel]
fn field_out_of_bounds(ps: &[Particle], out: &mut [u32], k: usize) {
    out[0] = ps[k].id;
}

#[test]
fn a_field_of_an_element_is_bounds_checked_with_rusts_message() {
    let _g = serial();
    let ps = particles(5);
    for ctx in contexts(Strategy::Table) {
        let b = ctx.upload(&ps).expect("upload");
        let mut out = ctx.zeros::<u32>(1).expect("zeros");
        let s = ctx.stream();
        field_out_of_bounds::launch(&s, Grid::new(1, 1), &b, &mut out, 7).expect("launch");
        let e = s.synchronize().expect_err("out of bounds").to_string();
        assert!(
            e.contains("rust_data.rs:") && e.ends_with("index out of bounds: the len is 5 but the index is 7"),
            "{e} on {}",
            ctx.device_name()
        );
    }
}

#[relok::kernel]
fn drift_all(ps: &mut [Particle], dt: f32) {
    if relok::global_id_x() == 0 {
        for p in ps.iter_mut() {
            p.x += p.v * dt;
            (*p).id = p.id * 2;
        }
        for (k, p) in ps.iter_mut().enumerate() {
            if k % 2 == 0 {
                *p = Particle { x: p.v, v: p.x, id: k as u32 };
            }
        }
        ps.swap(0, ps.len() - 1);
    }
}

#[test]
fn iter_mut_and_swap_over_a_struct_slice_write_fields_and_elements() {
    let _g = serial();
    let ps = particles(33);
    let mut want = ps.clone();
    for p in want.iter_mut() {
        p.x += p.v * 0.25;
        p.id *= 2;
    }
    for (k, p) in want.iter_mut().enumerate() {
        if k % 2 == 0 {
            *p = Particle { x: p.v, v: p.x, id: k as u32 };
        }
    }
    let last = want.len() - 1;
    want.swap(0, last);
    for ctx in contexts(Strategy::Table) {
        let mut b = ctx.upload(&ps).expect("upload");
        let s = ctx.stream();
        drift_all::launch(&s, Grid::new(1, 1), &mut b, 0.25).expect("launch");
        s.synchronize().expect("sync");
        assert_eq!(b.download().expect("download"), want, "on {}", ctx.device_name());
    }
}

#[derive(Clone, Copy, Debug, PartialEq, relok::Struct)]
#[repr(C)]
pub struct Walker {
    pub x: f32,
}

#[relok::device]
impl Walker {
    /// Recursion: refused when the kernel is built (not an endless
    /// staging).
    fn walk(self) -> Walker {
        if self.x > 10.0 { self } else { Walker { x: self.x * 2.0 }.walk() }
    }
}

#[relok::kernel]
fn walks(ws: &mut [Walker]) {
    ws[0] = ws[0].walk();
}

#[test]
fn a_recursive_method_is_a_build_error_naming_the_cycle() {
    let e = walks::program().expect_err("recursion").to_string();
    assert!(e.contains("recursion is not supported: rust_data::Walker::walk → rust_data::Walker::walk"), "{e}");
}

// The small integer types and `Option`: in this test binary too (one
// link fewer in CI).
#[path = "rust_data/small_ints.rs"]
mod small_ints;

#[path = "rust_data/option.rs"]
mod option;
