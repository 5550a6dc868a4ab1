#[allow(non_upper_case_globals)]
const limit: u32 = 3;

#[relok::kernel]
fn k(x: &mut [u32]) {
    let i = relok::global_id_x();
    x[i] = match x[i] {
        0 => 1,
        limit => 2,
        _ => 3,
    };
}

fn main() {}
