#[relok::kernel]
fn k<T>(x: &mut [T])
where
    T: Copy,
{
    x[0] = x[1];
}

fn main() {}
