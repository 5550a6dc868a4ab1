#[relok::kernel]
async fn k(x: &mut [u32]) {
    x[0] = 1;
}

fn main() {}
