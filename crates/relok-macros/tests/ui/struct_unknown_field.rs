#[derive(Clone, Copy, relok::Struct)]
#[repr(C)]
struct Particle {
    x: f32,
    v: f32,
}

#[relok::kernel]
fn k(ps: &mut [Particle], out: &mut [f32]) {
    out[0] = ps[0].y;
    let p = ps[1];
    out[1] = p.w;
}

fn main() {}
