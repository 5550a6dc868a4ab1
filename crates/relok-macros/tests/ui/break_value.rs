#[relok::kernel]
fn k(x: &mut [u32]) {
    for i in 0..4 {
        if x[i] == 0 {
            break 5;
        }
    }
}

fn main() {}
