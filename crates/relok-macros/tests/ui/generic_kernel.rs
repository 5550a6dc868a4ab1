#[relok::kernel]
fn k<T: Clone>(x: &mut [T]) {
    x[0] = x[1];
}

fn main() {}
