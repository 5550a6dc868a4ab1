fn helper(x: u32) -> u32 {
    x + 1
}

#[relok::kernel]
fn k(x: &mut [u32]) {
    x[0] = helper(x[1]);
}

fn main() {}
