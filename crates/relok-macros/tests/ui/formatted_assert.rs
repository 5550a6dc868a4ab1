#[relok::kernel]
fn k(x: &mut [u32]) {
    let i = relok::global_id_x();
    assert!(i < x.len(), "bad index {}", i);
}

fn main() {}
