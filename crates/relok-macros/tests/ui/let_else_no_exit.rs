#[relok::kernel]
fn k(x: &mut [u32]) {
    let Some(v) = x[0].checked_add(1) else {
        x[0] = 0;
    };
    x[1] = v;
}

fn main() {}
