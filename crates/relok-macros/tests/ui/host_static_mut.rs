#[relok::host]
static mut LUT: [u32; 4] = [1, 2, 3, 4];

fn main() {}
