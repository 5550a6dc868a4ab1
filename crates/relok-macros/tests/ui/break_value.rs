#[relok::kernel]
fn k(x: &mut [u32]) {
    loop {
        break 5;
    }
}

fn main() {}
