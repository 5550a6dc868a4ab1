#[relok::kernel]
fn k(x: &mut [u32]) {
    let m = [[[0u32; 2]; 2]; 2];
    x[0] = m.len() as u32;
}

fn main() {}
