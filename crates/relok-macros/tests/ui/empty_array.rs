#[relok::kernel]
fn k(x: &mut [u32]) {
    let a = [0u32; 0];
    x[0] = a.len() as u32;
}

fn main() {}
