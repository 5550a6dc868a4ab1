#[relok::kernel]
fn k(x: &mut [u32]) {
    x[0] = match x[1].checked_mul(3) {
        _ => 1,
        Some(v) => v,
    };
}

fn main() {}
