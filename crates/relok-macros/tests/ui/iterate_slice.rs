#[relok::kernel]
fn k(x: &mut [u32], y: &[u32]) {
    for v in y.iter().skip(1) {
        x[0] = *v;
    }
}

fn main() {}
