#[relok::kernel]
fn k(s: relok::Symbol, x: &mut [u32]) {
    if s < sym!("m") {
        x[0] = 1;
    }
}

fn main() {}
