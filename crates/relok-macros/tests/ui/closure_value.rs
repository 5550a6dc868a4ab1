#[relok::kernel]
fn k(x: &mut [u32]) {
    let f = |a: u32| a + 1;
    let _g = f;
    x[0] = f(x[1]);
}

fn main() {}
