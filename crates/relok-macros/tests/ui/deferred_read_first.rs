#[relok::kernel]
fn k(x: &mut [u32]) {
    let y;
    if x[0] > 1 {
        y = 2;
    }
    x[1] = y;
}

fn main() {}
