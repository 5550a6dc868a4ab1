#[derive(Clone, Copy)]
#[repr(C)]
struct Particle {
    x: f32,
}

#[relok::kernel]
fn k(ps: &mut [Particle]) {
    ps[0].x = 1.0;
}

fn main() {}
