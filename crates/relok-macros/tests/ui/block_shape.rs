#[relok::kernel(block = (64, 32))]
fn too_many_threads(x: &mut [u32]) {
    x[0] = 1;
}

#[relok::kernel(block = (0, 1))]
fn zero(x: &mut [u32]) {
    x[0] = 1;
}

#[relok::kernel(block = (1, 2, 3, 4))]
fn four(x: &mut [u32]) {
    x[0] = 1;
}

#[relok::kernel(threads = 64)]
fn unknown(x: &mut [u32]) {
    x[0] = 1;
}

#[relok::device(block = 64)]
fn device(x: u32) -> u32 {
    x
}

fn main() {}
