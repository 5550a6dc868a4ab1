#[relok::kernel]
fn k(mut x: &mut [u32]) {
    x[0] = 1;
}

fn main() {}
