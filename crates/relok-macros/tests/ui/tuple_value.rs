#[relok::kernel]
fn k(x: &mut [u32]) {
    let t = (1u32, 2u32);
    x[0] = 1;
}

fn main() {}
