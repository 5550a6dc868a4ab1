#[derive(Clone, Copy, relok::Struct)]
struct Particle {
    x: f32,
}

#[derive(Clone, Copy, relok::Struct)]
#[repr(C, packed)]
struct Packed {
    x: f32,
}

#[derive(Clone, Copy, relok::Struct)]
#[repr(C)]
struct Pair(f32, f32);

#[derive(Clone, Copy, relok::Struct)]
#[repr(C)]
struct Generic<T> {
    x: T,
}

fn main() {}
