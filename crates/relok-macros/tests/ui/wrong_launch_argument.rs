#[relok::kernel]
fn k(x: &mut [f32], a: f32) {
    x[0] = a;
}

fn launch_it(ctx: &relok::Context) -> relok::Result<()> {
    let mut wrong = ctx.zeros::<u32>(4)?;
    k::launch(&ctx.stream(), relok::Grid::new(1, 1), &mut wrong, 1.0)
}

fn main() {
    let _ = launch_it;
}
