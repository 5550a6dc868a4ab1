#[relok::kernel]
fn k(x: &mut [u32]) {
    let a = [0u32; 4];
    x[0] = 1;
}

fn main() {}
