#[derive(Clone, Copy, relok::Struct)]
#[repr(C)]
struct Particle {
    pos: [f32; 3],
    alive: bool,
    n: usize,
    inner: Other,
}

#[derive(Clone, Copy)]
struct Other;

fn main() {}
