#[relok::kernel]
fn k(x: &mut [u32]) {
    let m = [[1u32; 2]; 2];
    x[0] = m[1];
}

fn main() {}
