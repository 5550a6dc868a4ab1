#[relok::kernel]
fn k(x: &mut [u32]) {
    let s = &x[0..=2];
    x[3] = s.len() as u32;
}

fn main() {}
