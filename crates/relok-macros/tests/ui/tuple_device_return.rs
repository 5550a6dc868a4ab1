#[relok::device]
fn minmax(a: u32, b: u32) -> (u32, u32) {
    if a < b {
        return (a, b);
    }
    (b, a)
}

fn main() {}
