#[derive(Clone, Copy, relok::Struct)]
#[repr(C)]
struct Particle {
    x: f32,
    v: f32,
}

#[relok::kernel]
fn k(ps: &mut [Particle]) {
    let p = ps[0];
    ps[0] = Particle { x: 1.0, ..p };
}

fn main() {}
