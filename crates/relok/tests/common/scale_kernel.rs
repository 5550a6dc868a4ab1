// A kernel reading the host static `SCALE` of the module that includes
// this file (rust_kernels.rs includes it twice, with two contents).

/// `x[i] *= SCALE[i % 4]`.
#[relok::kernel]
pub fn scale(x: &mut [u32]) {
    let i = global_id_x();
    if i < x.len() {
        x[i] = x[i] * super::SCALE[i % 4];
    }
}
