#[relok::kernel]
fn k(x: &mut [u32]) {
    fn helper() {}
    x[0] = 1;
}

fn main() {}
