#[derive(Clone, Copy, relok::Struct)]
#[repr(C)]
struct Particle {
    x: f32,
    t: f64,
    id: u32,
}

fn main() {}
