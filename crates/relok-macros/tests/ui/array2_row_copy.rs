#[relok::kernel]
fn k(x: &mut [u32]) {
    let m = [[1u32; 2]; 2];
    let r = m[0];
    x[0] = r[1];
}

fn main() {}
