#[relok::device]
fn block_dim_x() -> usize {
    64
}

fn main() {}
