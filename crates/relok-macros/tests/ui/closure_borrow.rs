#[relok::kernel]
fn k(x: &mut [u32]) {
    let mut t = 0u32;
    let mut add = |v: u32| t += v;
    add(1);
    t = 5;
    add(2);
    x[0] = t;
}

fn main() {}
