#[relok::kernel]
fn k(x: &mut [u32], y: &[u32]) {
    for v in y.iter() {
        x[0] = v;
    }
}

fn main() {}
