#[relok::kernel]
fn k(x: &mut [u32]) {
    x[0] = x[1]?;
}

fn main() {}
