#[relok::kernel]
fn k(x: &mut [u32]) {
    println!("hello");
}

fn main() {}
