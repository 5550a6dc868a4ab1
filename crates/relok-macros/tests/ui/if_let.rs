#[relok::kernel]
fn k(x: &mut [u32]) {
    if let 1 = x[0] {
        x[0] = 2;
    }
}

fn main() {}
