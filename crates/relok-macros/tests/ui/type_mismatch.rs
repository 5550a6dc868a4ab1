#[relok::kernel]
fn k(x: &mut [u32], a: f32) {
    let i = relok::global_id_x();
    x[i] = x[i] + a;
}

fn main() {}
