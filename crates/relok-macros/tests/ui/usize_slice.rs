#[relok::kernel]
fn k(x: &mut [usize]) {
}

fn main() {}
