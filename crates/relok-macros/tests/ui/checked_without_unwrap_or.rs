#[relok::kernel]
fn k(x: &mut [u32]) {
    x[0] = x[1].checked_add(x[2]).unwrap();
}

fn main() {}
