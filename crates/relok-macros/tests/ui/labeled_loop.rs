#[relok::kernel]
fn k(x: &mut [u32]) {
    'outer: loop {
        break 'outer;
    }
}

fn main() {}
