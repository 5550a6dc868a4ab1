#[relok::kernel]
fn k(x: &mut [u32]) {
    let i = relok::global_id_x();
    x[i] = match i {
        0 => 1,
        _ => 2,
    };
}

fn main() {}
