#[relok::kernel]
fn k(x: &mut [u8]) {
    relok::atomic_add(&mut x[0], 1u8);
}

fn main() {}
