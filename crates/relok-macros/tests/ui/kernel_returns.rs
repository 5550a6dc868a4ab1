#[relok::kernel]
fn k(x: &mut [u32]) -> u32 {
    x[0] = 1;
}

fn main() {}
