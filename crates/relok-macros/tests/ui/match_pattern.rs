#[relok::kernel]
fn k(x: &mut [u32]) {
    let i = relok::global_id_x();
    x[i] = match x[i] {
        Some(v) => v,
        _ => 2,
    };
}

fn main() {}
