#[relok::device]
fn pick<T: relok::Number>(a: T, b: T) -> T {
    if a < b {
        return a;
    }
    b
}

fn main() {}
