#[relok::kernel]
fn k(s: relok::Symbol, out: &mut [u32]) {
    let name = 3u32;
    out[0] = if s == sym!(name) { 1 } else { 0 };
}

fn main() {}
