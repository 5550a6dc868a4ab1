#[relok::kernel]
fn k(x: &mut [u32]) {
    let row = &x[0..2];
    x[3] = 1;
    x[2] = row[1];
}

fn main() {}
