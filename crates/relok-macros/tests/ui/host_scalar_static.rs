#[relok::host]
static SCALE: f32 = 2.0;

fn main() {}
