#[relok::kernel]
fn k(x: &mut [u32]) {
    let mut t = 0u32;
    let add = |v: u32| t += v;
    add(1);
    x[0] = t;
}

fn main() {}
