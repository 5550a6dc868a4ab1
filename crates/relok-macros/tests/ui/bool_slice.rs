#[relok::kernel]
fn k(x: &mut [bool]) {
}

fn main() {}
