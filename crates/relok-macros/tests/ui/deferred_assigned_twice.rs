#[relok::kernel]
fn k(x: &mut [u32]) {
    let y;
    y = 1;
    x[0] = y;
    y = 2;
    x[1] = y;
}

fn main() {}
