static TABLE: [u32; 4] = [1, 2, 3, 4];

#[relok::kernel]
fn k(x: &mut [u32]) {
    x[0] = TABLE[1];
}

fn main() {}
