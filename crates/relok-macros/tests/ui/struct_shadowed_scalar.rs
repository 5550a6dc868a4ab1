#[allow(non_camel_case_types)]
#[derive(Clone, Copy)]
struct f32(u8);

#[derive(Clone, Copy, relok::Struct)]
#[repr(C)]
struct Particle {
    x: f32,
    y: f32,
    z: f32,
    w: f32,
}

fn main() {}
