#[derive(Clone, Copy, relok::Struct)]
#[repr(C)]
struct Particle {
    t: f64,
    id: u32,
}

fn main() {}
