#[relok::kernel]
fn k(x: &mut [u32]) {
    let f = |a: u32| {
        if a > 3 {
            return 0;
        }
        a
    };
    x[0] = f(x[1]);
}

fn main() {}
