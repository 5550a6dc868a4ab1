#[relok::kernel]
fn k(x: &mut [u32]) {
    let i = relok::global_id_x();
    x[i] = match x[i] {
        0 => 1,
        1..=5 => 2,
    };
}

fn main() {}
