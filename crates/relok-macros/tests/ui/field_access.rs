#[relok::kernel]
fn k(x: &mut [u32]) {
    let v = x.first;
    x[0] = 1;
}

fn main() {}
