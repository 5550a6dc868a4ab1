#[relok::kernel]
fn k(x: &mut [u32]) {
    let f = |s: &[u32]| s[0];
    x[0] = f(x);
}

fn main() {}
