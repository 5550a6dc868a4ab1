#[relok::kernel]
fn k<T>(x: &mut [u32]) {
    x[0] = 1;
}

fn main() {}
