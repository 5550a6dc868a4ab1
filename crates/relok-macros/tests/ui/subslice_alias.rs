#[relok::kernel]
fn k(x: &mut [u32]) {
    let row = &mut x[0..2];
    x[3] = 1;
    row[0] = 2;
}

fn main() {}
