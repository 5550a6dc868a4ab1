#[relok::kernel]
fn k(x: &mut [u32]) {
    x[0] = match x[1].checked_mul(3) {
        Some(v) if v > 10 => v,
        None => 0,
    };
}

fn main() {}
