#[relok::kernel]
fn k(x: &mut [u32]) {
    let mut n = x[0];
    while let Some(m) = n.checked_sub(3) {
        n = m;
        if n == 7 {
            break 5;
        }
    }
    x[1] = n;
}

fn main() {}
