#[relok::device]
fn zero(x: &mut [u32]) {
    x[0] = 0;
}

#[relok::kernel]
fn k(x: &[u32]) {
    zero(x);
}

fn main() {}
