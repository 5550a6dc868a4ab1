#[derive(Clone, Copy, relok::Struct)]
#[repr(C)]
struct Particle {
    x: f32,
}

#[relok::kernel]
fn k(ps: &mut [Particle], qs: &[Particle]) {
    let p = ps[0];
    p.x = 2.0;
    qs[0].x = 1.0;
}

fn main() {}
