#[relok::kernel]
fn k(x: &mut [u32]) {
    for i in (0..8).step_by(2).step_by(2) {
        x[i] = 1;
    }
}

fn main() {}
