#[relok::kernel]
fn k(x: &mut [u32]) {
    let mut put = move |k: usize| x[k] = 1;
    put(0);
}

fn main() {}
