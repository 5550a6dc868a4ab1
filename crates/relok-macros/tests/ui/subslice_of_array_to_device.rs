#[relok::device]
fn first(s: &[u32]) -> u32 {
    s[0]
}

#[relok::kernel]
fn k(x: &mut [u32]) {
    let a = [1u32, 2, 3];
    x[0] = first(&a[1..]);
}

fn main() {}
