#[relok::kernel]
fn k(x: &mut [u32]) {
    for i in 0.. {
        x[i] = 1;
    }
}

fn main() {}
