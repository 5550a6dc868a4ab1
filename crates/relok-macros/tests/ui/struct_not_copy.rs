#[derive(Clone, relok::Struct)]
#[repr(C)]
struct Particle {
    x: f32,
    id: u32,
}

fn main() {}
