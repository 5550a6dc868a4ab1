#[relok::kernel]
fn k(x: &mut [u32]) {
    let t = ();
    x[0] = 1;
}

fn main() {}
