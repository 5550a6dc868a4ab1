#[relok::kernel]
fn k(x: &mut [u32]) {
    if let Some(v) = x[1].checked_mul(3) && v > 10 {
        x[0] = v;
    }
}

fn main() {}
