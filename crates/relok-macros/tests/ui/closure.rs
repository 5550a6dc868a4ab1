#[relok::kernel]
fn k(x: &mut [u32]) {
    x[0] = (|a: u32| a + 1)(x[1]);
}

fn main() {}
