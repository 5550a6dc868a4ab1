#[relok::kernel]
fn k(x: &mut [u32]) {
    let m = [[1u32; 2]; 2];
    m[0][1] = x[0];
}

fn main() {}
