#[derive(Clone, Copy, relok::Struct)]
#[repr(C)]
struct Vec3 {
    x: f32,
    y: f32,
    z: f32,
}

#[relok::device]
impl Vec3 {
    fn grow(&mut self) {
        self.x += 1.0;
    }
}

impl Vec3 {
    #[relok::device]
    fn len2(self) -> f32 {
        self.x * self.x
    }
}

trait Norm {
    fn norm(self) -> f32;
}

#[relok::device]
impl Norm for Vec3 {
    fn norm(self) -> f32 {
        self.x
    }
}

fn main() {}
