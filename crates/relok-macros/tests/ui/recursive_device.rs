#[relok::device]
fn f(x: u32) -> u32 {
    if x == 0 { 0 } else { f(x - 1) }
}

fn main() {}
