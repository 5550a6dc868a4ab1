#[relok::kernel]
fn k(x: &mut [u32]) {
    let f = |a: u32| a + 1;
    x[0] = 1;
}

fn main() {}
