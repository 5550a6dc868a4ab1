#[relok::device]
fn half(v: f32, x: &[f32]) -> f32 {
    v * 0.5 + x[0]
}

#[relok::kernel]
fn k(x: &mut [f32], n: u32) {
    let a = [1.0f32, 2.0];
    x[0] = half(n, x);
    x[1] = half(x[1], a);
    x[2] = half(x, x);
}

fn main() {}
