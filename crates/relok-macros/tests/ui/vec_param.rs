#[relok::kernel]
fn k(x: Vec<f32>) {
}

fn main() {}
