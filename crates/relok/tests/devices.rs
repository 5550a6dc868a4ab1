//! The facade on every device found: the cpu device always; wgpu on the
//! first adapter (lavapipe in CI; `RELOK_REQUIRE_WGPU=1` makes its absence
//! a failure); cuda when a GPU is present. Every result is compared with
//! the cpu device, the oracle. A device that is missing is skipped with a
//! message on stderr.

mod common;

use common::serial;
use relok::{Arg, Context, Error, Grid, Program, Strategy};

/// The contexts to test (the cpu device first), under the default strategy.
fn contexts() -> Vec<Context> {
    common::contexts(Strategy::Table)
}

fn program(path: &str) -> Program {
    Program::from_file(common::repo().join(path)).unwrap_or_else(|e| panic!("{e}"))
}

/// SplitMix64, as `relok run`'s `rand:N:SEED`.
fn rand(n: usize, seed: u64) -> Vec<u64> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        })
        .collect()
}

fn rand_f32(n: usize, seed: u64) -> Vec<f32> {
    rand(n, seed).into_iter().map(|x| (x >> 40) as f32 / (1u64 << 24) as f32).collect()
}

fn rand_u32(n: usize, seed: u64) -> Vec<u32> {
    rand(n, seed).into_iter().map(|x| (x >> 48) as u32).collect()
}

/// An example's inputs, made on a context.
enum Input {
    U32(u32),
    F32(f32),
    Sym(&'static str),
    BufU32(Vec<u32>),
    BufI32(Vec<i32>),
    BufF32(Vec<f32>),
    BufU64(Vec<u64>),
}

/// A buffer of any element type, read back as bits.
enum Buf {
    U32(relok::Buffer<u32>),
    I32(relok::Buffer<i32>),
    F32(relok::Buffer<f32>),
    U64(relok::Buffer<u64>),
}

impl Buf {
    fn bits(&self) -> Result<Vec<u64>, Error> {
        Ok(match self {
            Buf::U32(b) => b.download()?.into_iter().map(u64::from).collect(),
            Buf::I32(b) => b.download()?.into_iter().map(|x| u64::from(x as u32)).collect(),
            Buf::F32(b) => b.download()?.into_iter().map(|x| u64::from(x.to_bits())).collect(),
            Buf::U64(b) => b.download()?,
        })
    }
}

struct Example {
    file: &'static str,
    kernel: &'static str,
    grid: Grid,
    inputs: fn() -> Vec<Input>,
    exception: Option<&'static str>,
    /// The threads' order is the device's (atomics): compare sorted.
    unordered: bool,
}

fn examples() -> Vec<Example> {
    vec![
        Example {
            file: "examples/saxpy.rk",
            kernel: "saxpy",
            grid: Grid::new(16, 256),
            inputs: || {
                vec![
                    Input::U32(4000),
                    Input::F32(2.5),
                    Input::BufF32(rand_f32(4000, 1)),
                    Input::BufF32(rand_f32(4000, 2)),
                ]
            },
            exception: None,
            unordered: false,
        },
        Example {
            file: "examples/reduce.rk",
            kernel: "reduce",
            grid: Grid::new(4, 256),
            inputs: || {
                vec![
                    Input::U32(1000),
                    Input::BufF32((0..1000).map(|i| i as f32).collect()),
                    Input::BufF32(vec![0.0; 4]),
                ]
            },
            exception: None,
            unordered: false,
        },
        Example {
            file: "examples/histogram.rk",
            kernel: "histogram",
            grid: Grid::new(40, 256),
            inputs: || {
                vec![Input::U32(10000), Input::U32(16), Input::BufU32(rand_u32(10000, 3)), Input::BufU32(vec![0; 16])]
            },
            exception: None,
            unordered: false,
        },
        Example {
            file: "examples/matmul.rk",
            kernel: "matmul",
            grid: Grid::new((2, 3), (16, 16)),
            inputs: || {
                vec![
                    Input::U32(40),
                    Input::U32(24),
                    Input::U32(36),
                    Input::BufF32(rand_f32(1440, 4)),
                    Input::BufF32(rand_f32(864, 5)),
                    Input::BufF32(vec![0.0; 960]),
                ]
            },
            exception: None,
            unordered: false,
        },
        Example {
            file: "examples/scan.rk",
            kernel: "scan",
            grid: Grid::new(4, 256),
            inputs: || vec![Input::U32(1000), Input::BufU32(rand_u32(1000, 6)), Input::BufU32(vec![0; 1000])],
            exception: None,
            unordered: false,
        },
        Example {
            file: "examples/reloc/symbols.rk",
            kernel: "classify",
            grid: Grid::new(1, 1),
            inputs: || vec![Input::Sym("bar"), Input::BufI32(vec![0])],
            exception: None,
            unordered: false,
        },
        Example {
            file: "examples/reloc/lookup.rk",
            kernel: "lookup",
            grid: Grid::new(4, 256),
            inputs: || vec![Input::U32(1000), Input::BufU32(rand_u32(1000, 7)), Input::BufU32(vec![0; 1000])],
            exception: None,
            unordered: false,
        },
        Example {
            file: "examples/reloc/boxed.rk",
            kernel: "unbox",
            grid: Grid::new(1, 1),
            inputs: || vec![Input::Sym("circle"), Input::BufU32(vec![0])],
            exception: None,
            unordered: false,
        },
        Example {
            file: "examples/reloc/counter.rk",
            kernel: "count",
            grid: Grid::new(2, 64),
            inputs: || vec![Input::BufU64(vec![0; 128])],
            exception: None,
            unordered: true,
        },
        Example {
            file: "examples/reloc/throw.rk",
            kernel: "check",
            grid: Grid::new(4, 32),
            inputs: || vec![Input::U32(40), Input::BufI32((1..=40).map(|i| if i == 38 { -38 } else { i }).collect())],
            exception: Some("negative input"),
            unordered: false,
        },
    ]
}

/// Runs an example on `ctx`: every buffer's bits after the launch, or the
/// error of the synchronisation.
fn run(ctx: &Context, ex: &Example) -> Result<Vec<Vec<u64>>, Error> {
    let kernel = ctx.kernel(&program(ex.file), ex.kernel)?;
    let inputs = (ex.inputs)();
    let mut buffers = Vec::new();
    let mut symbols = Vec::new();
    for input in &inputs {
        match input {
            Input::BufU32(v) => buffers.push(Buf::U32(ctx.upload(v)?)),
            Input::BufI32(v) => buffers.push(Buf::I32(ctx.upload(v)?)),
            Input::BufF32(v) => buffers.push(Buf::F32(ctx.upload(v)?)),
            Input::BufU64(v) => buffers.push(Buf::U64(ctx.upload(v)?)),
            Input::Sym(name) => symbols.push(ctx.symbol(name)),
            Input::U32(_) | Input::F32(_) => {}
        }
    }
    let (mut b, mut s) = (buffers.iter(), symbols.iter());
    let args: Vec<Arg> = inputs
        .iter()
        .map(|input| match input {
            Input::U32(x) => Arg::from(*x),
            Input::F32(x) => Arg::from(*x),
            Input::Sym(_) => Arg::from(s.next().expect("one symbol per input")),
            _ => match b.next().expect("one buffer per input") {
                Buf::U32(b) => Arg::from(b),
                Buf::I32(b) => Arg::from(b),
                Buf::F32(b) => Arg::from(b),
                Buf::U64(b) => Arg::from(b),
            },
        })
        .collect();
    let stream = ctx.stream();
    kernel.launch(&stream, ex.grid, args)?;
    stream.synchronize()?;
    let mut out: Vec<Vec<u64>> = buffers.iter().map(Buf::bits).collect::<Result<_, _>>()?;
    if ex.unordered {
        out.iter_mut().for_each(|b| b.sort_unstable());
    }
    Ok(out)
}

/// Every device's context, then (from the second device on) the same
/// device without checked mode: unchecked code computes the same results.
fn checked_and_unchecked_contexts() -> Vec<Context> {
    let checked = contexts();
    let unchecked: Vec<Context> = checked[1..]
        .iter()
        .map(|c| {
            let spec = c.device_name().split(' ').next().expect("a name");
            let ctx = Context::builder().device(spec).checked(false).no_cache().build().expect("opens unchecked");
            assert!(c.checked() && !ctx.checked(), "checked mode is on by default and off when asked");
            ctx
        })
        .collect();
    checked.into_iter().chain(unchecked).collect()
}

#[test]
fn every_example_equals_the_cpu_device() {
    let _serial = serial();
    let contexts = checked_and_unchecked_contexts();
    for ex in examples() {
        let oracle = run(&contexts[0], &ex);
        match (ex.exception, &oracle) {
            (None, Ok(_)) => {}
            (Some(m), Err(Error::Exception { message, .. })) => assert_eq!(message, m),
            _ => panic!("@{} on the cpu device: {oracle:?}", ex.kernel),
        }
        for ctx in &contexts[1..] {
            let got = run(ctx, &ex);
            match (&oracle, &got) {
                (Ok(a), Ok(b)) => assert!(
                    a == b,
                    "@{} on {} (checked: {}) differs from the cpu device",
                    ex.kernel,
                    ctx.device_name(),
                    ctx.checked()
                ),
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "@{} on {}", ex.kernel, ctx.device_name()),
                _ => panic!("@{} on {}: {got:?}, the cpu device: {oracle:?}", ex.kernel, ctx.device_name()),
            }
        }
    }
}

const COPY: &str = "kernel @copy(v0: u32, v1: ptr<global, u32>, v2: ptr<global, u32>) {
    v3: u32 = block_id.x
    v4: u32 = block_dim.x
    v5: u32 = thread_id.x
    v6: u32 = mul v3, v4
    v7: u32 = add v6, v5
    v8: bool = lt v7, v0
    if v8 {
        v9: u32 = load v1[v7]
        store v2[v7], v9
    }
    return
}
";

const BUMP: &str = "kernel @bump(v0: u32, v1: ptr<global, u32>) {
    v2: u32 = block_id.x
    v3: u32 = block_dim.x
    v4: u32 = thread_id.x
    v5: u32 = mul v2, v3
    v6: u32 = add v5, v4
    v7: bool = lt v6, v0
    if v7 {
        v8: u32 = load v1[v6]
        v9: u32 = const 1
        v10: u32 = add v8, v9
        store v1[v6], v10
    }
    return
}
";

#[test]
fn typed_arguments_are_checked_before_the_device() {
    let _serial = serial();
    let contexts = contexts();
    let p = Program::parse(COPY).unwrap();
    let sym = Program::parse(include_str!("../../../examples/reloc/symbols.rk")).unwrap();
    for ctx in &contexts {
        let k = ctx.kernel(&p, "copy").unwrap();
        let s = ctx.stream();
        let (a, mut b) = (ctx.upload(&[1u32, 2]).unwrap(), ctx.zeros::<u32>(2).unwrap());
        let g = Grid::new(1, 2);
        let e = k.launch(&s, g, (2u32, &a)).unwrap_err();
        assert!(matches!(e, Error::ArgCount { expected: 3, found: 2, .. }), "{e}");
        let e = k.launch(&s, g, (2i32, &a, &mut b)).unwrap_err();
        assert!(matches!(&e, Error::ArgType { index: 0, param, .. } if param == "v0"), "{e}");
        assert_eq!(e.to_string(), "@copy, argument 0 (parameter `v0: u32`): an i32 was given");
        let f = ctx.zeros::<f32>(2).unwrap();
        let e = k.launch(&s, g, (2u32, &f, &mut b)).unwrap_err();
        assert!(
            matches!(&e, Error::ArgType { index: 1, expected, found, .. } if expected == "ptr<global, u32>" && found == "a Buffer<f32>"),
            "{e}"
        );
        let e = k.launch(&s, g, (2u32, 5u32, &mut b)).unwrap_err();
        assert!(matches!(&e, Error::ArgType { index: 1, found, .. } if found == "a u32"), "{e}");
        // A word parameter takes a symbol, never a raw integer.
        let classify = ctx.kernel(&sym, "classify").unwrap();
        let out = ctx.zeros::<i32>(1).unwrap();
        let e = classify.launch(&s, Grid::new(1, 1), (7u64, &out)).unwrap_err();
        assert!(matches!(e, Error::ArgType { index: 0, .. }), "{e}");
        // Another context's buffer, symbol or stream is refused.
        let other = Context::builder().device("cpu:7").no_cache().build().unwrap();
        let foreign = other.upload(&[1u32, 2]).unwrap();
        let e = k.launch(&s, g, (2u32, &foreign, &mut b)).unwrap_err();
        assert!(matches!(e, Error::WrongContext { .. }), "{e}");
        // Two contexts of one device: still two devices, and the message
        // says so rather than naming one device twice as if different.
        let twin = Context::builder().device(ctx.device_name().split(' ').next().unwrap()).no_cache().build().unwrap();
        if twin.device_name() == ctx.device_name() {
            let e = k.launch(&s, g, (2u32, &twin.upload(&[1u32, 2]).unwrap(), &mut b)).unwrap_err();
            let Error::WrongContext { owner, here, .. } = &e else { panic!("{e}") };
            assert_eq!((owner.as_str(), here.as_str()), (ctx.device_name(), ctx.device_name()));
            assert!(e.to_string().contains("this one") && e.to_string().contains("even on the same GPU"), "{e}");
        }
        let e = classify.launch(&s, Grid::new(1, 1), (&other.symbol("foo"), &out)).unwrap_err();
        assert!(matches!(e, Error::WrongContext { .. }), "{e}");
        let e = k.launch(&other.stream(), g, (2u32, &a, &mut b)).unwrap_err();
        assert!(matches!(e, Error::WrongContext { .. }), "{e}");
        // Nothing reached the device: the stream has nothing pending.
        assert_eq!(s.pending(), 0);
        k.launch(&s, g, (2u32, &a, &mut b)).unwrap();
        s.synchronize().unwrap();
        assert_eq!(b.download().unwrap(), [1, 2], "on {}", ctx.device_name());
    }
}

#[test]
fn a_buffer_dropped_under_a_pending_launch_lives_until_the_stream_passes_it() {
    let _serial = serial();
    for ctx in contexts() {
        let k = ctx.kernel(&Program::parse(COPY).unwrap(), "copy").unwrap();
        let s = ctx.stream();
        let n = 4096;
        let before = ctx.device_allocations();
        let input = ctx.upload(&(0..n as u32).collect::<Vec<_>>()).unwrap();
        let mut out = ctx.zeros::<u32>(n).unwrap();
        k.launch(&s, Grid::cover(n, 256), (n as u32, &input, &mut out)).unwrap();
        drop(input);
        // The launch still holds the input: its memory is not freed yet.
        assert_eq!(ctx.device_allocations(), before + 2, "on {}", ctx.device_name());
        s.synchronize().unwrap();
        assert_eq!(ctx.device_allocations(), before + 1, "on {}", ctx.device_name());
        assert_eq!(out.download().unwrap(), (0..n as u32).collect::<Vec<_>>(), "on {}", ctx.device_name());
    }
}

/// 40 inputs for `examples/reloc/throw.rk`'s `@check`: 1..=40 but one
/// negative, at index 37 (block 1, thread 5 of blocks of 32).
fn one_negative() -> Vec<i32> {
    (1..=40).map(|i| if i == 38 { -38 } else { i }).collect()
}

#[test]
fn an_exception_surfaces_at_synchronisation_and_the_stream_goes_on() {
    let _serial = serial();
    let p = program("examples/reloc/throw.rk");
    for ctx in contexts() {
        let k = ctx.kernel(&p, "check").unwrap();
        let s = ctx.stream();
        let data = one_negative();
        let bad = ctx.upload(&data).unwrap();
        k.launch(&s, Grid::new(4, 32), (40u32, &bad)).unwrap();
        match s.synchronize() {
            Err(Error::Exception { kernel, message, block, thread }) => {
                assert_eq!(
                    (kernel.as_str(), message.as_str()),
                    ("check", "negative input"),
                    "on {}",
                    ctx.device_name()
                );
                assert_eq!((block, thread), ([1, 0, 0], [5, 0, 0]), "on {}", ctx.device_name());
            }
            other => panic!("on {}: {other:?}", ctx.device_name()),
        }
        // Reported once; the stream is usable again.
        s.synchronize().unwrap();
        let good = ctx.upload(&[1i32; 40]).unwrap();
        k.launch(&s, Grid::new(4, 32), (40u32, &good)).unwrap();
        s.synchronize().unwrap();
        // A download of a buffer the failing launch used reports it too.
        k.launch(&s, Grid::new(4, 32), (40u32, &bad)).unwrap();
        assert!(matches!(bad.download(), Err(Error::Exception { .. })), "on {}", ctx.device_name());
        s.synchronize().unwrap();
    }
}

#[test]
fn an_exception_is_the_streams_and_is_reported_once_at_any_of_its_synchronisation_points() {
    let _serial = serial();
    let p = program("examples/reloc/throw.rk");
    let fill = Program::parse(BUMP).unwrap();
    for ctx in contexts() {
        let (check, bump) = (ctx.kernel(&p, "check").unwrap(), ctx.kernel(&fill, "bump").unwrap());
        let data = one_negative();
        let thrown = |r: relok::Result<()>| matches!(r, Err(Error::Exception { ref kernel, .. }) if kernel == "check");
        let s = ctx.stream();
        let (other, bad) = (ctx.upload(&[7u32; 64]).unwrap(), ctx.upload(&data).unwrap());
        // A download of a buffer another launch of the stream used waits
        // for the whole stream: the exception is its error, once.
        bump.launch(&s, Grid::cover(64, 32), (64u32, &other)).unwrap();
        check.launch(&s, Grid::new(4, 32), (40u32, &bad)).unwrap();
        assert!(thrown(other.download().map(drop)), "on {}", ctx.device_name());
        s.synchronize().unwrap();
        assert_eq!(
            other.download().unwrap(),
            vec![8u32; 64],
            "the launch before the failure ran, on {}",
            ctx.device_name()
        );
        // Two failing launches before one synchronisation: one report, of
        // the first thrower.
        check.launch(&s, Grid::new(4, 32), (40u32, &bad)).unwrap();
        check.launch(&s, Grid::new(4, 32), (40u32, &bad)).unwrap();
        assert!(thrown(s.synchronize()), "on {}", ctx.device_name());
        s.synchronize().unwrap();
        // A buffer no pending launch uses waits for nothing.
        check.launch(&s, Grid::new(4, 32), (40u32, &bad)).unwrap();
        let idle = ctx.upload(&[1u32]).unwrap();
        assert_eq!(idle.download().unwrap(), [1], "on {}", ctx.device_name());
        assert!(thrown(bad.download().map(drop)), "on {}", ctx.device_name());
    }
}

#[test]
fn a_stream_dropped_with_a_throw_unread_loses_it_and_the_next_stream_starts_clean() {
    let _serial = serial();
    let p = program("examples/reloc/throw.rk");
    for ctx in contexts() {
        let k = ctx.kernel(&p, "check").unwrap();
        let data = one_negative();
        let (bad, good) = (ctx.upload(&data).unwrap(), ctx.upload(&[1i32; 40]).unwrap());
        for round in 0..3 {
            let s = ctx.stream();
            k.launch(&s, Grid::new(4, 32), (40u32, &bad)).unwrap();
            drop(s);
            // The stream waited for its launch as it dropped; its failure
            // went with it (the module docs of `Stream`).
            assert_eq!(bad.download().unwrap(), data, "round {round} on {}", ctx.device_name());
            let s = ctx.stream();
            k.launch(&s, Grid::new(4, 32), (40u32, &good)).unwrap();
            s.synchronize().unwrap_or_else(|e| panic!("round {round} on {}: a stale throw: {e}", ctx.device_name()));
        }
    }
}

#[test]
fn four_streams_of_a_thousand_launches_equal_the_sequential_cpu_run() {
    let _serial = serial();
    let p = Program::parse(BUMP).unwrap();
    let n = 256usize;
    for ctx in contexts() {
        let k = ctx.kernel(&p, "bump").unwrap();
        let streams: Vec<_> = (0..4).map(|_| ctx.stream()).collect();
        let buffers: Vec<_> = (0..4u32).map(|i| ctx.upload(&vec![i * 1_000_000; n]).unwrap()).collect();
        for round in 1..=1000u32 {
            for (s, b) in streams.iter().zip(&buffers) {
                k.launch(s, Grid::cover(n, 64), (n as u32, b)).unwrap();
            }
            if round % 250 == 0 {
                for (i, b) in buffers.iter().enumerate() {
                    assert_eq!(
                        b.download().unwrap(),
                        vec![i as u32 * 1_000_000 + round; n],
                        "on {} after {round}",
                        ctx.device_name()
                    );
                }
            }
        }
        for s in &streams {
            s.synchronize().unwrap();
        }
    }
}

#[test]
fn kernels_and_their_table_buffers_are_freed_when_dropped() {
    let _serial = serial();
    let p = program("examples/reloc/lookup.rk");
    for ctx in contexts() {
        let cycles = if ctx.device_kind() == relok::DeviceKind::Cpu { 10_000 } else { 1_000 };
        // The first load registers the table's value on the device (the
        // session's, kept for the context's life).
        drop(ctx.kernel(&p, "lookup").unwrap());
        let before = ctx.device_allocations();
        for _ in 0..cycles {
            let k = ctx.kernel(&p, "lookup").unwrap();
            assert_eq!(ctx.device_allocations(), before + 1, "the table buffer on {}", ctx.device_name());
            drop(k);
        }
        assert_eq!(ctx.device_allocations(), before, "after {cycles} load/drop cycles on {}", ctx.device_name());
    }
}

#[test]
fn bad_input_is_a_typed_error() {
    let _serial = serial();
    let p = Program::parse(COPY).unwrap();
    for ctx in contexts() {
        let k = ctx.kernel(&p, "copy").unwrap();
        let s = ctx.stream();
        let (a, mut b) = (ctx.zeros::<u32>(0).unwrap(), ctx.zeros::<u32>(0).unwrap());
        for g in [
            Grid::new(0, 1),
            Grid::new(1, 0),
            Grid::new(1, 2048),
            Grid::new((u32::MAX, u32::MAX, u32::MAX), 1),
            Grid::new(1, (1, 1, 128)),
        ] {
            let e = k.launch(&s, g, (0u32, &a, &mut b)).unwrap_err();
            assert!(matches!(e, Error::Geometry { .. }), "{g:?} on {}: {e}", ctx.device_name());
        }
        // Zero-size buffers launch and read back empty.
        k.launch(&s, Grid::new(1, 1), (0u32, &a, &mut b)).unwrap();
        s.synchronize().unwrap();
        assert_eq!(b.download().unwrap(), Vec::<u32>::new());
        let e = ctx.kernel(&p, "nope").unwrap_err();
        assert!(matches!(&e, Error::NoSuchKernel { available, .. } if available == &["copy"]), "{e}");
        assert_eq!(e.to_string(), "no kernel @nope in this program (kernels: @copy)");
        let e = b.slice(1..5).download().unwrap_err();
        assert!(matches!(e, Error::SliceOutOfRange { start: 1, end: 5, len: 0 }), "{e}");
    }
    let e =
        Program::parse_named("bad.rk", "kernel @k(v0: u32) {\n    v1: f32 = add v0, v0\n    return\n}\n").unwrap_err();
    assert!(matches!(e, Error::Verify { .. }), "{e}");
    assert!(e.to_string().starts_with("bad.rk:2:5: error: @k: v1: `add` produces u32"), "{e}");
    let e = Program::parse_named("bad.rk", "kernel @k() {\n    v0: u32 = add v1, v1\n    return\n}\n").unwrap_err();
    assert!(matches!(e, Error::Parse { line: 2, col: 19, .. }), "{e}");
    let e = Program::parse_named("bad.rk", "kernel @k(\n").unwrap_err();
    assert!(matches!(e, Error::Parse { line: 2, .. } | Error::Parse { line: 1, .. }), "{e}");
    assert!(matches!(Context::open("gpu"), Err(Error::Open(_))));
    assert!(matches!(Context::open("cpu:x"), Err(Error::Open(_))));
}

#[test]
fn sub_slices_are_kernel_arguments() {
    let _serial = serial();
    let p = Program::parse(COPY).unwrap();
    for ctx in contexts() {
        let k = ctx.kernel(&p, "copy").unwrap();
        let s = ctx.stream();
        // 64 u32s = 256 bytes: the offset every wgpu adapter binds at.
        let input = ctx.upload(&(0..128u32).collect::<Vec<_>>()).unwrap();
        let mut out = ctx.zeros::<u32>(64).unwrap();
        k.launch(&s, Grid::new(1, 64), (64u32, input.slice(64..), &mut out)).unwrap();
        s.synchronize().unwrap();
        assert_eq!(out.download().unwrap(), (64..128u32).collect::<Vec<_>>(), "on {}", ctx.device_name());
        let e = k.launch(&s, Grid::new(1, 64), (64u32, input.slice(64..200), &mut out)).unwrap_err();
        assert!(matches!(e, Error::SliceOutOfRange { .. }), "{e}");
    }
}

#[test]
fn a_stream_shared_by_threads_loses_no_launch() {
    let _serial = serial();
    let p = Program::parse(BUMP).unwrap();
    for ctx in contexts() {
        let k = ctx.kernel(&p, "bump").unwrap();
        let s = ctx.stream();
        let b = ctx.zeros::<u32>(64).unwrap();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                for _ in 0..500 {
                    k.launch(&s, Grid::new(1, 64), (64u32, &b)).unwrap();
                }
            });
            scope.spawn(|| {
                for _ in 0..100 {
                    s.synchronize().unwrap();
                    let seen = b.download().unwrap();
                    assert!(seen.iter().all(|&v| v == seen[0] && v <= 500), "on {}: {seen:?}", ctx.device_name());
                }
            });
        });
        s.synchronize().unwrap();
        assert_eq!(b.download().unwrap(), vec![500; 64], "on {}", ctx.device_name());
    }
}

#[test]
fn kernels_loaded_and_dropped_between_launches_keep_their_own_host_values() {
    // A kernel's table and its value's copy are small device objects that
    // are reused once freed (cuda takes them from one block): kernels that
    // come and go between asynchronous launches on two streams must each
    // still read their own factor.
    let _serial = serial();
    let scale = include_str!("../../../examples/bench/scale.rk");
    for ctx in contexts() {
        let x: Vec<f32> = (0..256).map(|i| i as f32 - 7.0).collect();
        let dx = ctx.upload(&x).expect("upload");
        let streams = [ctx.stream(), ctx.stream()];
        let mut outs = Vec::new();
        for round in 0..24 {
            let factor = (round + 2) as f32;
            let text = scale.replace("const @factor: f32 = 2.0", &format!("const @factor: f32 = {factor:.1}"));
            let k = ctx.kernel(&Program::parse(&text).expect("parses"), "scale").expect("loads");
            let mut out = ctx.zeros::<f32>(x.len()).expect("zeros");
            let s = &streams[round % 2];
            k.launch(s, Grid::cover(x.len(), 64), (x.len() as u32, &dx, &mut out)).expect("launch");
            // The stream holds the kernel until it passes the launch; every
            // third round lets it go, so later kernels take freed objects.
            drop(k);
            if round % 3 == 2 {
                s.synchronize().expect("synchronize");
            }
            outs.push((factor, out));
        }
        for s in &streams {
            s.synchronize().expect("synchronize");
        }
        for (factor, out) in outs {
            let y = out.download().expect("download");
            assert!(
                y.iter().zip(&x).all(|(y, x)| *y == factor * x),
                "{}: the kernel of factor {factor} read another's",
                ctx.device_name()
            );
        }
    }
}

#[test]
fn small_buffers_dropped_under_pending_launches_and_new_ones_keep_their_contents() {
    // Buffers of up to 4 KiB share one block of slots on cuda, written
    // asynchronously. Inputs dropped while launches on two streams still
    // read them (freed once a stream passes them), uploads, zeros and
    // writes that then take the freed slots, more of them than the block
    // holds, each of its own size: every buffer must read back what it
    // holds. (The runtime's own test, crates/relok-runtime/tests/cuda_device.rs,
    // frees a slot under a pending launch and takes it at once.)
    let _serial = serial();
    let sizes = [1usize, 15, 16, 17, 255, 1023, 1024, 1025];
    for ctx in contexts() {
        let k = ctx.kernel(&Program::parse(COPY).unwrap(), "copy").unwrap();
        let streams = [ctx.stream(), ctx.stream()];
        let mut outs = Vec::new();
        for round in 0..48u32 {
            let n = sizes[round as usize % sizes.len()];
            let data: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2_654_435_761) ^ round).collect();
            let input = ctx.upload(&data).expect("upload");
            let mut out = ctx.zeros::<u32>(n).expect("zeros");
            let s = &streams[round as usize % 2];
            k.launch(s, Grid::cover(n, 64), (n as u32, &input, &mut out)).expect("launch");
            // The stream holds the input until it passes the launch; the
            // next uploads may take its slots only after that.
            drop(input);
            if round % 5 == 4 {
                s.synchronize().expect("synchronize");
            }
            outs.push((data, out));
        }
        let mut written = ctx.zeros::<u32>(100).expect("zeros");
        assert_eq!(written.download().expect("download"), vec![0; 100], "{}: zeros", ctx.device_name());
        written.write(&(0..100).collect::<Vec<u32>>()).expect("write");
        for s in &streams {
            s.synchronize().expect("synchronize");
        }
        for (data, out) in outs {
            assert_eq!(
                out.download().expect("download"),
                data,
                "{}: a buffer of {} elements",
                ctx.device_name(),
                data.len()
            );
        }
        assert_eq!(
            written.download().expect("download"),
            (0..100).collect::<Vec<u32>>(),
            "{}: written",
            ctx.device_name()
        );
    }
}
