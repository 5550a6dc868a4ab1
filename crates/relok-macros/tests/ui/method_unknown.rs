#[derive(Clone, Copy, relok::Struct)]
#[repr(C)]
struct Vec3 {
    x: f32,
    y: f32,
    z: f32,
}

#[relok::device]
impl Vec3 {
    fn dot(self, o: Vec3) -> f32 {
        self.x * o.x + self.y * o.y + self.z * o.z
    }
}

#[relok::kernel]
fn k(a: &[Vec3], out: &mut [f32]) {
    out[0] = a[0].cross(a[1]);
    out[1] = a[0].dot(2.0);
}

fn main() {}
