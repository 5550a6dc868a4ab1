#[relok::kernel]
fn k(x: &mut [f32]) {
    x[0] = x[1].to_degrees();
}

fn main() {}
