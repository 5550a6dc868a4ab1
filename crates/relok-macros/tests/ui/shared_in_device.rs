#[relok::device]
fn f(x: &mut [u32]) {
    let tile = shared::<u32, 64>();
    tile[0] = 1;
    x[0] = tile[0];
}

fn main() {}
