#[relok::kernel]
fn k(x: &mut [u32]) {
    let _h = halving(8usize);
    for s in doubling(1usize, 8).rev() {
        x[s] = 1;
    }
    for s in halving(8usize, 2) {
        x[s] = 1;
    }
    for s in doubling(1usize) {
        x[s] = 1;
    }
}

fn main() {}
