#[relok::kernel]
fn k(x: &mut [u32], y: &[u32]) {
    x[0] = *y.get_unchecked(0);
}

fn main() {}
