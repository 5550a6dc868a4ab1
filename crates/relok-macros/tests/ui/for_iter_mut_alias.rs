#[relok::kernel]
fn k(x: &mut [u32]) {
    for v in x.iter_mut() {
        *v += x[0];
    }
}

fn main() {}
