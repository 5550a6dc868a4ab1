#[relok::kernel]
fn k(x: &mut [u32]) {
    let i = relok::global_id_x();
    panic!("bad index {}", i);
}

fn main() {}
