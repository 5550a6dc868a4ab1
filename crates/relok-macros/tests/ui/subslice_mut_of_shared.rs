#[relok::kernel]
fn k(x: &[u32], y: &mut [u32]) {
    let s = &mut x[1..];
    y[0] = s[0];
}

fn main() {}
