#[relok::kernel]
fn k(x: &mut [f32]) {
    let _ = atomic_exchange(&mut x[0], 1.0);
}

fn main() {}
