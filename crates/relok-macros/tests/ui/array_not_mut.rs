#[relok::kernel]
fn k(x: &mut [u32]) {
    let a = [1u32, 2];
    a[0] = x[0];
}

fn main() {}
