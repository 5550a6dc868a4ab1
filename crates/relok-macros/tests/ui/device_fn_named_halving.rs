#[relok::device]
fn halving(n: u32) -> u32 {
    n / 2
}

fn main() {}
