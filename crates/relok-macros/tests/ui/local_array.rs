#[relok::kernel]
fn k(x: &mut [u32]) {
    x[0] = [1u32, 2][0];
}

fn main() {}
