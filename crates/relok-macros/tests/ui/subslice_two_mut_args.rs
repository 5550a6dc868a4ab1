#[relok::device]
fn two(a: &mut [u32], b: &mut [u32]) {
    a[0] = b[0];
}

#[relok::kernel]
fn k(x: &mut [u32]) {
    two(&mut x[0..2], &mut x[2..4]);
}

fn main() {}
