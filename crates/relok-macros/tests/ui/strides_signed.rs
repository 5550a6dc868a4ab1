#[relok::kernel]
fn k(x: &mut [i32]) {
    for s in halving(-8i32) {
        x[0] = s;
    }
}

fn main() {}
