#[relok::kernel]
fn k(x: &mut [u32]) {
    let mut tile = shared::<u32, 16>();
    tile[0] = 1;
}

fn main() {}
