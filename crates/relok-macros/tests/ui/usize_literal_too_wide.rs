#[relok::kernel]
fn k(x: &mut [u32]) {
    let i = relok::global_id_x();
    if i < 5_000_000_000usize {
        x[0] = 1;
    }
    if i < 6_000_000_000 {
        x[1] = 1;
    }
    let fine = 6_000_000_000u64;
    x[2] = fine as u32;
}

fn main() {}
