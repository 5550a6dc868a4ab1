#[relok::kernel]
fn k(x: &mut [u32]) {
    x[0] = 1;
    break;
}

fn main() {}
