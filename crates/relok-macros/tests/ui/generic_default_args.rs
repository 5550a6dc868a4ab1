#[relok::kernel]
fn k<T: relok::Float>(x: &mut [T]) {
    x[0] = T::ZERO + T::ONE.abs() + T::default() + T::TWO;
}

fn main() {}
