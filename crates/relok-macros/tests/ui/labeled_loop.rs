#[relok::kernel]
fn k(x: &mut [u32]) {
    'outer: loop {
        for i in 0..4 {
            if x[i] == 0 {
                break 'inner;
            }
        }
        break 'outer;
    }
}

fn main() {}
