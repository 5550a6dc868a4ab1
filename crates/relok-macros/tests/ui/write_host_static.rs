#[relok::host]
static LUT: [u32; 4] = [1, 2, 3, 4];

#[relok::kernel]
fn k(x: &mut [u32]) {
    LUT[0] = x[0];
}

fn main() {}
