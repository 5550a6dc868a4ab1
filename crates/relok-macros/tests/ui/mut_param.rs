#[relok::kernel]
fn k(mut n: u32, x: &mut [u32]) {
    x[0] = n;
}

fn main() {}
