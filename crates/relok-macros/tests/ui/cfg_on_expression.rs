#[relok::kernel]
fn k(x: &mut [u32]) {
    let v = {
        let w = 1u32;
        #[cfg(all())]
        w
    };
    x[0] = v;
    #[inline]
    x[1] = 2;
}

fn main() {}
