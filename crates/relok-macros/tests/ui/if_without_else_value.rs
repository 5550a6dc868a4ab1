#[relok::kernel]
fn k(x: &mut [u32]) {
    let v = if x.len() > 2 { 1u32 };
    x[0] = v;
}

fn main() {}
