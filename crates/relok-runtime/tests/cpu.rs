//! The cpu reference device, end to end: kernels built with the IR builder,
//! launched on simulated devices, checked against Rust computations.

use relok_ir::builder::{FunctionBuilder, ModuleBuilder};
use relok_ir::{AddrSpace, AtomicOp, Axis, BinaryOp, Builtin, ConstInit, FuncId, Module, Scalar, Type, UnaryOp, Value};
use relok_runtime::Access;
use relok_runtime::{CpuDevice, DeviceError, DevicePtr, FaultKind, KernelArg, LaunchConfig, LaunchError};

fn gptr(s: Scalar) -> Type {
    Type::ptr(AddrSpace::Global, s.into())
}

fn upload_f32(dev: &CpuDevice, xs: &[f32]) -> DevicePtr {
    let p = dev.alloc(4 * xs.len() as u64).unwrap();
    let bytes: Vec<u8> = xs.iter().flat_map(|x| x.to_le_bytes()).collect();
    dev.write(p, &bytes).unwrap();
    p
}

fn upload_u32(dev: &CpuDevice, xs: &[u32]) -> DevicePtr {
    let p = dev.alloc(4 * xs.len() as u64).unwrap();
    let bytes: Vec<u8> = xs.iter().flat_map(|x| x.to_le_bytes()).collect();
    dev.write(p, &bytes).unwrap();
    p
}

fn download_f32(dev: &CpuDevice, p: DevicePtr, n: usize) -> Vec<f32> {
    let b = dev.read(p, 4 * n as u64).unwrap();
    b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

fn download_u32(dev: &CpuDevice, p: DevicePtr, n: usize) -> Vec<u32> {
    let b = dev.read(p, 4 * n as u64).unwrap();
    b.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
}

fn download_u64(dev: &CpuDevice, p: DevicePtr, n: usize) -> Vec<u64> {
    let b = dev.read(p, 8 * n as u64).unwrap();
    b.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect()
}

/// `saxpy(n, a, x, y)`: `y[i] = a * x[i] + y[i]` for `i < n`.
fn saxpy_module() -> Module {
    let mut mb = ModuleBuilder::new();
    let mut k = mb.kernel("saxpy");
    let n = k.param(Scalar::U32);
    let a = k.param(Scalar::F32);
    let x = k.param(gptr(Scalar::F32));
    let y = k.param(gptr(Scalar::F32));
    let i = k.global_id(Axis::X);
    let ok = k.lt(i, n);
    k.if_(ok, |k| {
        let xi = k.load(x, Some(i));
        let yi = k.load(y, Some(i));
        let ax = k.mul(a, xi);
        let r = k.add(ax, yi);
        k.store(y, Some(i), r);
    });
    let f = k.finish().unwrap();
    mb.add(f);
    mb.build()
}

fn run_saxpy(dev: &CpuDevice, n: usize) -> (Vec<f32>, Vec<f32>, u64) {
    let xs: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let ys: Vec<f32> = (0..n).map(|i| 1.0 - i as f32).collect();
    let (x, y) = (upload_f32(dev, &xs), upload_f32(dev, &ys));
    let m = saxpy_module();
    let cfg = LaunchConfig::linear((n as u32).div_ceil(256), 256);
    let args = [KernelArg::u32(n as u32), KernelArg::f32(3.0), KernelArg::Ptr(x), KernelArg::Ptr(y)];
    let stats = dev.launch(&m, "saxpy", &cfg, &args).unwrap();
    let got = download_f32(dev, y, n);
    let want: Vec<f32> = xs.iter().zip(&ys).map(|(x, y)| 3.0 * x + y).collect();
    dev.free(x).unwrap();
    dev.free(y).unwrap();
    (got, want, stats.steps)
}

#[test]
fn saxpy_matches_rust() {
    let dev = CpuDevice::new(0);
    let (got, want, steps) = run_saxpy(&dev, 10_000);
    assert_eq!(got, want);
    assert!(steps > 10_000);
}

/// saxpy over 2^20 elements (100 000 in a debug build) equals the Rust
/// reference. Its time is not a test's to judge: `relok bench` measures the
/// interpreter's throughput.
#[test]
fn saxpy_1m_matches_the_reference() {
    let dev = CpuDevice::new(0);
    let n = if cfg!(debug_assertions) { 100_000 } else { 1 << 20 };
    let (got, want, steps) = run_saxpy(&dev, n);
    assert_eq!(got.len(), n);
    assert_eq!(got, want);
    assert!(steps >= n as u64, "{steps} steps for {n} threads");
}

/// `reduce(x, out)`: `out[block] = sum of x[block*256 .. block*256+256]`, a
/// tree reduction in shared memory.
fn reduce_module() -> Module {
    let mut mb = ModuleBuilder::new();
    let mut k = mb.kernel("reduce");
    let x = k.param(gptr(Scalar::U32));
    let out = k.param(gptr(Scalar::U32));
    let sh = k.shared("sh", Type::array(Scalar::U32.into(), 256));
    let s = k.local("s", Scalar::U32);
    let tid = k.builtin(Builtin::ThreadId(Axis::X));
    let i = k.global_id(Axis::X);
    let v = k.load(x, Some(i));
    let shp = k.addr(sh);
    k.store(shp, Some(tid), v);
    k.barrier();
    let half = k.u32(128);
    k.set(s, half);
    k.loop_(|k| {
        let sv = k.get(s);
        let zero = k.u32(0);
        let done = k.eq(sv, zero);
        k.if_(done, |k| k.break_());
        let active = k.lt(tid, sv);
        k.if_(active, |k| {
            let j = k.add(tid, sv);
            let a = k.load(shp, Some(tid));
            let b = k.load(shp, Some(j));
            let c = k.add(a, b);
            k.store(shp, Some(tid), c);
        });
        k.barrier();
        let one = k.u32(1);
        let next = k.shr(sv, one);
        k.set(s, next);
    });
    let zero = k.u32(0);
    let first = k.eq(tid, zero);
    k.if_(first, |k| {
        let total = k.load(shp, None);
        let b = k.builtin(Builtin::BlockId(Axis::X));
        k.store(out, Some(b), total);
    });
    let f = k.finish().unwrap();
    mb.add(f);
    mb.build()
}

#[test]
fn block_reduction_with_shared_memory_and_barriers() {
    let dev = CpuDevice::new(0);
    let blocks = 8;
    let xs: Vec<u32> = (0..256 * blocks).map(|i| (i * 7 + 3) % 1000).collect();
    let x = upload_u32(&dev, &xs);
    let out = dev.alloc(4 * blocks as u64).unwrap();
    let m = reduce_module();
    dev.launch(&m, "reduce", &LaunchConfig::linear(blocks, 256), &[KernelArg::Ptr(x), KernelArg::Ptr(out)]).unwrap();
    let want: Vec<u32> = xs.chunks(256).map(|c| c.iter().sum()).collect();
    assert_eq!(download_u32(&dev, out, blocks as usize), want);
}

#[test]
fn histogram_with_atomics() {
    let mut mb = ModuleBuilder::new();
    let mut k = mb.kernel("hist");
    let n = k.param(Scalar::U32);
    let data = k.param(gptr(Scalar::U32));
    let bins = k.param(gptr(Scalar::U32));
    let i = k.global_id(Axis::X);
    let ok = k.lt(i, n);
    k.if_(ok, |k| {
        let d = k.load(data, Some(i));
        let sixteen = k.u32(16);
        let b = k.rem(d, sixteen);
        let one = k.u32(1);
        k.atomic(AtomicOp::Add, bins, Some(b), one);
    });
    let f = k.finish().unwrap();
    mb.add(f);
    let m = mb.build();

    let dev = CpuDevice::new(1);
    let n = 5000u32;
    let xs: Vec<u32> = (0..n).map(|i| i.wrapping_mul(2_654_435_761) >> 7).collect();
    let data = upload_u32(&dev, &xs);
    let bins = dev.alloc(64).unwrap();
    let args = [KernelArg::u32(n), KernelArg::Ptr(data), KernelArg::Ptr(bins)];
    dev.launch(&m, "hist", &LaunchConfig::linear(n.div_ceil(128), 128), &args).unwrap();
    let mut want = [0u32; 16];
    for x in &xs {
        want[(x % 16) as usize] += 1;
    }
    assert_eq!(download_u32(&dev, bins, 16), want);
}

/// Widens `v` of scalar type `ty` to a `u64` with the same low bits.
fn to_u64_bits(k: &mut FunctionBuilder<'_>, v: Value, ty: Scalar) -> Value {
    match ty {
        Scalar::U64 => v,
        Scalar::I64 | Scalar::F64 => k.bitcast(v, Scalar::U64),
        Scalar::U32 => k.convert(v, Scalar::U64),
        Scalar::I32 | Scalar::F32 => {
            let u = k.bitcast(v, Scalar::U32);
            k.convert(u, Scalar::U64)
        }
        Scalar::Bool => k.convert(v, Scalar::U64),
        Scalar::Word => k.bitcast(v, Scalar::U64),
        s => panic!("no value has storage type {s}"),
    }
}

enum Case {
    Bin(BinaryOp, Scalar, u64, u64, u64),
    Un(UnaryOp, Scalar, u64, u64),
    Conv(Scalar, Scalar, u64, u64),
    Cast(Scalar, Scalar, u64, u64),
}

#[test]
fn scalar_semantics_table() {
    use BinaryOp as B;
    use Scalar::*;
    let i32b = |x: i32| u64::from(x as u32);
    let f32b = |x: f32| u64::from(x.to_bits());
    let f64b = |x: f64| x.to_bits();
    let cases = vec![
        Case::Bin(B::Div, I32, i32b(7), 0, 0),
        Case::Bin(B::Rem, I32, i32b(-7), 0, i32b(-7)),
        Case::Bin(B::Div, I32, i32b(i32::MIN), i32b(-1), i32b(i32::MIN)),
        Case::Bin(B::Rem, I32, i32b(i32::MIN), i32b(-1), 0),
        Case::Bin(B::Div, I32, i32b(-7), i32b(2), i32b(-3)),
        Case::Bin(B::Rem, I32, i32b(-7), i32b(2), i32b(-1)),
        Case::Bin(B::Div, U32, 7, 0, 0),
        Case::Bin(B::Rem, U64, 7, 0, 7),
        Case::Bin(B::Div, I64, i64::MIN as u64, u64::MAX, i64::MIN as u64),
        Case::Bin(B::Rem, I64, i64::MIN as u64, u64::MAX, 0),
        Case::Bin(B::Add, I32, i32b(i32::MAX), 1, i32b(i32::MIN)),
        Case::Bin(B::Mul, U32, 0x1_0001, 0x1_0001, 0x2_0001),
        Case::Bin(B::Sub, U64, 0, 1, u64::MAX),
        Case::Bin(B::Shl, U32, 1, 32, 1),
        Case::Bin(B::Shl, U32, 1, 35, 8),
        Case::Bin(B::Shl, I64, 1, 64 + 63, 1 << 63),
        Case::Bin(B::Shr, I32, i32b(-16), 2, i32b(-4)),
        Case::Bin(B::Shr, U32, i32b(-16), 2, 0x3fff_fffc),
        Case::Bin(B::Shr, I64, u64::MAX, 100, u64::MAX),
        Case::Bin(B::Shr, U64, u64::MAX, 100, u64::MAX >> 36),
        Case::Bin(B::Min, I32, i32b(-1), 1, i32b(-1)),
        Case::Bin(B::Min, U32, i32b(-1), 1, 1),
        Case::Bin(B::Max, I64, u64::MAX, 5, 5),
        Case::Bin(B::Min, F32, f32b(f32::NAN), f32b(2.0), f32b(2.0)),
        Case::Bin(B::Max, F32, f32b(2.0), f32b(f32::NAN), f32b(2.0)),
        Case::Bin(B::Min, F64, f64b(-1.0), f64b(f64::NAN), f64b(-1.0)),
        Case::Bin(B::Rem, F64, f64b(7.5), f64b(2.0), f64b(1.5)),
        Case::Bin(B::Div, F32, f32b(1.0), f32b(0.0), f32b(f32::INFINITY)),
        Case::Bin(B::Xor, Bool, 1, 1, 0),
        Case::Un(UnaryOp::Neg, I32, i32b(i32::MIN), i32b(i32::MIN)),
        Case::Un(UnaryOp::Abs, I64, i64::MIN as u64, i64::MIN as u64),
        Case::Un(UnaryOp::Abs, I32, i32b(-5), 5),
        Case::Un(UnaryOp::Not, U32, 0, 0xffff_ffff),
        Case::Un(UnaryOp::Not, Bool, 0, 1),
        Case::Un(UnaryOp::Neg, F32, f32b(0.0), f32b(-0.0)),
        Case::Un(UnaryOp::Sqrt, F64, f64b(2.0), f64b(2f64.sqrt())),
        Case::Conv(F32, I32, f32b(f32::NAN), 0),
        Case::Conv(F32, I32, f32b(3e9), i32b(i32::MAX)),
        Case::Conv(F32, I32, f32b(-3e9), i32b(i32::MIN)),
        Case::Conv(F64, U32, f64b(-1.5), 0),
        Case::Conv(F64, I64, f64b(-2.9), (-2i64) as u64),
        Case::Conv(F64, U64, f64b(f64::INFINITY), u64::MAX),
        Case::Conv(I32, I64, i32b(-1), u64::MAX),
        Case::Conv(U32, I64, i32b(-1), 0xffff_ffff),
        Case::Conv(I64, I32, 0x1_2345_6789, 0x2345_6789),
        Case::Conv(U64, F32, u64::MAX, f32b(u64::MAX as f32)),
        Case::Conv(I32, F64, i32b(-3), f64b(-3.0)),
        Case::Conv(F64, F32, f64b(0.1), f32b(0.1)),
        Case::Conv(F32, Bool, f32b(0.5), 1),
        Case::Conv(I32, Bool, 0, 0),
        Case::Conv(Bool, F32, 1, f32b(1.0)),
        Case::Cast(F32, U32, f32b(1.0), 0x3f80_0000),
        Case::Cast(I32, F32, i32b(-1), 0xffff_ffff),
        Case::Cast(U64, F64, f64b(2.5), f64b(2.5)),
        Case::Cast(F64, I64, f64b(-0.0), 1 << 63),
    ];
    let mut mb = ModuleBuilder::new();
    let mut k = mb.kernel("table");
    let out = k.param(gptr(U64));
    for (i, c) in cases.iter().enumerate() {
        let (r, ty) = match *c {
            Case::Bin(op, ty, a, b, _) => {
                let (a, b) = (k.const_bits(ty, a), k.const_bits(ty, b));
                (k.op(relok_ir::Op::Binary(op, a, b)), ty)
            }
            Case::Un(op, ty, a, _) => {
                let a = k.const_bits(ty, a);
                (k.unary(op, a), ty)
            }
            Case::Conv(from, to, a, _) => {
                let a = k.const_bits(from, a);
                (k.convert(a, to), to)
            }
            Case::Cast(from, to, a, _) => {
                let a = k.const_bits(from, a);
                (k.bitcast(a, to), to)
            }
        };
        let w = to_u64_bits(&mut k, r, ty);
        let idx = k.u32(i as u32);
        k.store(out, Some(idx), w);
    }
    let f = k.finish().unwrap();
    mb.add(f);
    let m = mb.build();
    let dev = CpuDevice::new(0);
    let out = dev.alloc(8 * cases.len() as u64).unwrap();
    dev.launch(&m, "table", &LaunchConfig::default(), &[KernelArg::Ptr(out)]).unwrap();
    let got = download_u64(&dev, out, cases.len());
    for (i, c) in cases.iter().enumerate() {
        let want = match *c {
            Case::Bin(.., w) | Case::Un(.., w) | Case::Conv(.., w) | Case::Cast(.., w) => w,
        };
        assert_eq!(got[i], want, "case {i}: got {:#x}, want {want:#x}", got[i]);
    }
}

/// `copy(x, y)`: `y[t] = x[t]` for the thread index `t` (no bounds check).
fn copy_module() -> Module {
    let mut mb = ModuleBuilder::new();
    let mut k = mb.kernel("copy");
    let x = k.param(gptr(Scalar::U32));
    let y = k.param(gptr(Scalar::U32));
    let i = k.global_id(Axis::X);
    let v = k.load(x, Some(i));
    k.store(y, Some(i), v);
    let f = k.finish().unwrap();
    mb.add(f);
    mb.build()
}

#[test]
fn out_of_bounds_read_and_write_fault_with_location() {
    let dev = CpuDevice::new(0);
    let m = copy_module();
    let small = dev.alloc(40).unwrap();
    let big = dev.alloc(4 * 64).unwrap();
    let err = dev
        .launch(&m, "copy", &LaunchConfig::linear(2, 16), &[KernelArg::Ptr(small), KernelArg::Ptr(big)])
        .unwrap_err();
    assert_eq!(
        err,
        LaunchError::Fault {
            kernel: "copy".into(),
            block: [0, 0, 0],
            thread: [10, 0, 0],
            kind: FaultKind::OutOfBounds {
                space: AddrSpace::Global,
                access: Access::Read,
                addr: small.0 + 40,
                size: 4
            },
        }
    );
    let text = err.to_string();
    assert!(
        text.starts_with("kernel @copy, block (0,0,0), thread (10,0,0): out-of-bounds global read of 4 bytes at 0x"),
        "{text}"
    );
    // Threads before the faulting one ran; the write side faults too.
    assert_eq!(download_u32(&dev, big, 1), [0]);
    let err = dev
        .launch(&m, "copy", &LaunchConfig::linear(2, 16), &[KernelArg::Ptr(big), KernelArg::Ptr(small)])
        .unwrap_err();
    let LaunchError::Fault { thread, kind, .. } = err else { panic!("{err}") };
    assert_eq!(thread, [10, 0, 0]);
    assert!(matches!(kind, FaultKind::OutOfBounds { access: Access::Write, .. }), "{kind}");
    // A freed buffer faults (addresses are never reused).
    dev.free(small).unwrap();
    let err =
        dev.launch(&m, "copy", &LaunchConfig::linear(1, 1), &[KernelArg::Ptr(small), KernelArg::Ptr(big)]).unwrap_err();
    assert!(matches!(err, LaunchError::Fault { kind: FaultKind::OutOfBounds { .. }, .. }), "{err}");
    // And the device is still fine.
    let (got, want, _) = run_saxpy(&dev, 1000);
    assert_eq!(got, want);
}

#[test]
fn misaligned_access_faults() {
    let dev = CpuDevice::new(0);
    let m = copy_module();
    let a = dev.alloc(64).unwrap();
    let b = dev.alloc(64).unwrap();
    let err = dev
        .launch(&m, "copy", &LaunchConfig::linear(1, 4), &[KernelArg::Ptr(a.offset(1)), KernelArg::Ptr(b)])
        .unwrap_err();
    assert_eq!(
        err,
        LaunchError::Fault {
            kernel: "copy".into(),
            block: [0, 0, 0],
            thread: [0, 0, 0],
            kind: FaultKind::Misaligned { space: AddrSpace::Global, access: Access::Read, addr: a.0 + 1, align: 4 },
        }
    );
}

#[test]
fn barrier_divergence_is_a_fault() {
    // barrier inside `if thread_id.x < 5`
    let mut mb = ModuleBuilder::new();
    let mut k = mb.kernel("diverge");
    let tid = k.builtin(Builtin::ThreadId(Axis::X));
    let five = k.u32(5);
    let c = k.lt(tid, five);
    k.if_(c, |k| k.barrier());
    let f = k.finish().unwrap();
    mb.add(f);
    // a barrier in each branch of an if: two different barriers
    let mut k = mb.kernel("two_barriers");
    let tid = k.builtin(Builtin::ThreadId(Axis::X));
    let five = k.u32(5);
    let c = k.lt(tid, five);
    k.if_else(c, |k| k.barrier(), |k| k.barrier());
    let f = k.finish().unwrap();
    mb.add(f);
    let m = mb.build();
    let dev = CpuDevice::new(0);
    let err = dev.launch(&m, "diverge", &LaunchConfig::linear(1, 32), &[]).unwrap_err();
    assert_eq!(
        err,
        LaunchError::Fault {
            kernel: "diverge".into(),
            block: [0, 0, 0],
            thread: [5, 0, 0],
            kind: FaultKind::BarrierDivergence { waiting: [0, 0, 0] },
        }
    );
    // All threads below 5: no divergence.
    dev.launch(&m, "diverge", &LaunchConfig::linear(3, 5), &[]).unwrap();
    let err = dev.launch(&m, "two_barriers", &LaunchConfig::linear(1, 8), &[]).unwrap_err();
    assert!(
        matches!(err, LaunchError::Fault { thread: [5, 0, 0], kind: FaultKind::BarrierDivergence { .. }, .. }),
        "{err}"
    );
}

#[test]
fn endless_loop_exceeds_the_step_budget() {
    let mut mb = ModuleBuilder::new();
    let mut k = mb.kernel("spin");
    k.loop_(|_| {});
    let f = k.finish().unwrap();
    mb.add(f);
    let m = mb.build();
    let dev = CpuDevice::new(0);
    let cfg = LaunchConfig { step_budget: 1000, ..LaunchConfig::linear(2, 2) };
    let err = dev.launch(&m, "spin", &cfg, &[]).unwrap_err();
    assert_eq!(
        err,
        LaunchError::Fault {
            kernel: "spin".into(),
            block: [0, 0, 0],
            thread: [0, 0, 0],
            kind: FaultKind::StepBudgetExceeded { budget: 1000 }
        }
    );
}

#[test]
fn devices_have_separate_randomised_address_spaces() {
    let a = CpuDevice::new(0);
    let b = CpuDevice::new(0);
    assert_eq!(b.ordinal(), 0);
    assert_ne!(a.base_address(), b.base_address());
    let pa = a.alloc(256).unwrap();
    let pb = b.alloc(256).unwrap();
    assert_ne!(pa, pb);
    assert!(pa.0 >= 1 << 40 && pa.0 < 1 << 46);
    assert!(matches!(b.read(pa, 4), Err(DeviceError::OutOfBounds { .. })));
    let m = copy_module();
    let err = b.launch(&m, "copy", &LaunchConfig::linear(1, 1), &[KernelArg::Ptr(pa), KernelArg::Ptr(pb)]).unwrap_err();
    assert!(
        matches!(err, LaunchError::Fault { kind: FaultKind::OutOfBounds { space: AddrSpace::Global, .. }, .. }),
        "{err}"
    );
    a.write(pa, &7u32.to_le_bytes()).unwrap();
    a.launch(&m, "copy", &LaunchConfig::linear(1, 1), &[KernelArg::Ptr(pa), KernelArg::Ptr(pa.offset(128))]).unwrap();
    assert_eq!(a.read(pa.offset(128), 4).unwrap(), 7u32.to_le_bytes());
}

#[test]
fn host_memory_operations_are_checked() {
    let dev = CpuDevice::new(3);
    assert_eq!(dev.ordinal(), 3);
    let p = dev.alloc(16).unwrap();
    assert_eq!(dev.read(p, 16).unwrap(), vec![0; 16]);
    dev.write(p.offset(8), &[1; 8]).unwrap();
    assert_eq!(dev.read(p.offset(4), 8).unwrap(), [0, 0, 0, 0, 1, 1, 1, 1]);
    assert!(matches!(dev.write(p.offset(9), &[1; 8]), Err(DeviceError::OutOfBounds { .. })));
    assert!(matches!(dev.free(p.offset(1)), Err(DeviceError::InvalidFree { .. })));
    assert!(matches!(dev.alloc(5 << 30), Err(DeviceError::OutOfMemory { .. })));
    dev.free(p).unwrap();
    assert!(matches!(dev.read(p, 1), Err(DeviceError::OutOfBounds { .. })));
}

#[test]
fn device_function_calls() {
    let mut mb = ModuleBuilder::new();
    // fma3(a, b, c) = a * b + c
    let mut g = mb.device_fn("fma3", Some(Scalar::I32.into()));
    let (a, b, c) = (g.param(Scalar::I32), g.param(Scalar::I32), g.param(Scalar::I32));
    let ab = g.mul(a, b);
    let r = g.add(ab, c);
    g.ret(Some(r));
    let f = g.finish().unwrap();
    let fma3 = mb.add(f);
    // sq1(x) = fma3(x, x, 1), with an early return for x == 0
    let mut g = mb.device_fn("sq1", Some(Scalar::I32.into()));
    let x = g.param(Scalar::I32);
    let zero = g.i32(0);
    let is0 = g.eq(x, zero);
    g.if_(is0, |g| {
        let m = g.i32(-100);
        g.ret(Some(m));
    });
    let one = g.i32(1);
    let r = g.call(fma3, vec![x, x, one]);
    g.ret(Some(r));
    let f = g.finish().unwrap();
    let sq1 = mb.add(f);
    // put(p, i, v): p[i] = v, via a local array and a pointer to it
    let mut g = mb.device_fn("put", None);
    let p = g.param(gptr(Scalar::I32));
    let i = g.param(Scalar::U32);
    let v = g.param(Scalar::I32);
    let tmp = g.local("tmp", Type::array(Scalar::I32.into(), 4));
    let tp = g.addr(tmp);
    let two = g.u32(2);
    g.store(tp, Some(two), v);
    let w = g.load(tp, Some(two));
    g.store(p, Some(i), w);
    let f = g.finish().unwrap();
    let put = mb.add(f);
    let mut k = mb.kernel("calls");
    let out = k.param(gptr(Scalar::I32));
    let t = k.builtin(Builtin::ThreadId(Axis::X));
    let ti = k.convert(t, Scalar::I32);
    let r = k.call(sq1, vec![ti]);
    k.call_void(put, vec![out, t, r]);
    let f = k.finish().unwrap();
    mb.add(f);
    let m = mb.build();
    let dev = CpuDevice::new(0);
    let out = dev.alloc(4 * 8).unwrap();
    dev.launch(&m, "calls", &LaunchConfig::linear(1, 8), &[KernelArg::Ptr(out)]).unwrap();
    let got: Vec<i32> = download_u32(&dev, out, 8).into_iter().map(|x| x as i32).collect();
    assert_eq!(got, [-100, 2, 5, 10, 17, 26, 37, 50]);
}

/// A chain `f0 -> f1 -> ... -> f{depth-1}` called from kernel `k`, the
/// last one writing 1 to `out[0]`.
fn chain_module(depth: usize) -> Module {
    let mut mb = ModuleBuilder::new();
    let mut prev: Option<FuncId> = None;
    for i in (0..depth).rev() {
        let mut g = mb.device_fn(format!("f{i}"), None);
        let p = g.param(gptr(Scalar::U32));
        match prev {
            Some(next) => g.call_void(next, vec![p]),
            None => {
                let one = g.u32(1);
                g.store(p, None, one);
            }
        }
        let f = g.finish().unwrap();
        prev = Some(mb.add(f));
    }
    let mut k = mb.kernel("k");
    let p = k.param(gptr(Scalar::U32));
    if let Some(first) = prev {
        k.call_void(first, vec![p]);
    }
    let f = k.finish().unwrap();
    mb.add(f);
    mb.build()
}

#[test]
fn nested_calls_and_the_call_depth_limit() {
    let dev = CpuDevice::new(0);
    let out = dev.alloc(4).unwrap();
    dev.launch(&chain_module(20), "k", &LaunchConfig::default(), &[KernelArg::Ptr(out)]).unwrap();
    assert_eq!(download_u32(&dev, out, 1), [1]);
    let err = dev.launch(&chain_module(100), "k", &LaunchConfig::default(), &[KernelArg::Ptr(out)]).unwrap_err();
    assert!(matches!(err, LaunchError::Fault { kind: FaultKind::CallDepthExceeded { limit: 64 }, .. }), "{err}");
}

#[test]
fn barrier_inside_a_device_function() {
    // sync(): barrier. The kernel calls it from one site (fine) or from two
    // sites chosen by thread (divergence).
    let mut mb = ModuleBuilder::new();
    let mut g = mb.device_fn("sync", None);
    g.barrier();
    let f = g.finish().unwrap();
    let sync = mb.add(f);
    let mut k = mb.kernel("one_site");
    let out = k.param(gptr(Scalar::U32));
    let sh = k.shared("sh", Type::array(Scalar::U32.into(), 4));
    let shp = k.addr(sh);
    let tid = k.builtin(Builtin::ThreadId(Axis::X));
    k.store(shp, Some(tid), tid);
    k.call_void(sync, vec![]);
    let three = k.u32(3);
    let j = k.sub(three, tid);
    let v = k.load(shp, Some(j));
    k.store(out, Some(tid), v);
    let f = k.finish().unwrap();
    mb.add(f);
    let mut k = mb.kernel("two_sites");
    let tid = k.builtin(Builtin::ThreadId(Axis::X));
    let two = k.u32(2);
    let c = k.lt(tid, two);
    k.if_else(c, |k| k.call_void(sync, vec![]), |k| k.call_void(sync, vec![]));
    let f = k.finish().unwrap();
    mb.add(f);
    let m = mb.build();
    let dev = CpuDevice::new(0);
    let out = dev.alloc(16).unwrap();
    dev.launch(&m, "one_site", &LaunchConfig::linear(1, 4), &[KernelArg::Ptr(out)]).unwrap();
    assert_eq!(download_u32(&dev, out, 4), [3, 2, 1, 0]);
    let err = dev.launch(&m, "two_sites", &LaunchConfig::linear(1, 4), &[]).unwrap_err();
    assert!(
        matches!(err, LaunchError::Fault { thread: [2, 0, 0], kind: FaultKind::BarrierDivergence { .. }, .. }),
        "{err}"
    );
}

#[test]
fn module_constants_and_multidimensional_geometry() {
    let mut mb = ModuleBuilder::new();
    let table = mb.constant(
        "table",
        Type::Struct(vec![Scalar::Bool.into(), Type::array(Scalar::U32.into(), 4)]),
        ConstInit::Struct(vec![ConstInit::Scalar(1), ConstInit::Array((10..14).map(ConstInit::Scalar).collect())]),
    );
    let mut k = mb.kernel("geo");
    let out = k.param(gptr(Scalar::U32));
    let tp = k.const_addr(table);
    let arr = k.field(tp, 1);
    let flag_p = k.field(tp, 0);
    let flag = k.load(flag_p, None);
    let tx = k.builtin(Builtin::ThreadId(Axis::X));
    let ty = k.builtin(Builtin::ThreadId(Axis::Y));
    let bz = k.builtin(Builtin::BlockId(Axis::Z));
    let bdx = k.builtin(Builtin::BlockDim(Axis::X));
    let bdy = k.builtin(Builtin::BlockDim(Axis::Y));
    let row = k.mul(ty, bdx);
    let lin = k.add(row, tx);
    let per_block = k.mul(bdx, bdy);
    let boff = k.mul(bz, per_block);
    let idx = k.add(boff, lin);
    let e = k.elem(arr, tx);
    let v = k.load(e, None);
    let zero = k.u32(0);
    let w = k.select(flag, v, zero);
    let w = k.add(w, bz);
    k.store(out, Some(idx), w);
    let f = k.finish().unwrap();
    mb.add(f);
    let m = mb.build();
    let dev = CpuDevice::new(0);
    let out = dev.alloc(4 * 24).unwrap();
    let cfg = LaunchConfig { grid: [1, 1, 3], block: [4, 2, 1], ..LaunchConfig::default() };
    let stats = dev.launch(&m, "geo", &cfg, &[KernelArg::Ptr(out)]).unwrap();
    assert_eq!(stats.threads, 24);
    let got = download_u32(&dev, out, 24);
    let want: Vec<u32> = (0..24).map(|i| 10 + i % 4 + i / 8).collect();
    assert_eq!(got, want);
}

#[test]
fn launch_errors_are_typed() {
    let dev = CpuDevice::new(0);
    let m = saxpy_module();
    let p = dev.alloc(4).unwrap();
    let args = [KernelArg::u32(1), KernelArg::f32(1.0), KernelArg::Ptr(p), KernelArg::Ptr(p)];
    let cfg = LaunchConfig::default();
    assert!(matches!(dev.launch(&m, "nope", &cfg, &args), Err(LaunchError::UnknownKernel { .. })));
    assert!(matches!(
        dev.launch(&m, "saxpy", &cfg, &args[..3]),
        Err(LaunchError::ArgCount { expected: 4, found: 3, .. })
    ));
    let bad = [KernelArg::u32(1), KernelArg::u32(1), KernelArg::Ptr(p), KernelArg::Ptr(p)];
    let err = dev.launch(&m, "saxpy", &cfg, &bad).unwrap_err();
    assert!(matches!(&err, LaunchError::ArgType { index: 1, param, .. } if param == "v1"), "{err}");
    assert!(err.to_string().contains("parameter 1 (v1: f32)"), "{err}");
    let bad = [KernelArg::u32(1), KernelArg::f32(1.0), KernelArg::u64(p.0), KernelArg::Ptr(p)];
    assert!(matches!(dev.launch(&m, "saxpy", &cfg, &bad), Err(LaunchError::ArgType { index: 2, .. })));
    let bad = [
        KernelArg::Scalar { ty: Scalar::U32, bits: 1 << 40 },
        KernelArg::f32(1.0),
        KernelArg::Ptr(p),
        KernelArg::Ptr(p),
    ];
    assert!(matches!(dev.launch(&m, "saxpy", &cfg, &bad), Err(LaunchError::ArgType { index: 0, .. })));
    for (grid, block) in
        [([0, 1, 1], [1, 1, 1]), ([1, 1, 1], [1, 0, 1]), ([1, 1, 1], [1024, 2, 1]), ([1, 1 << 20, 1], [1, 1, 1])]
    {
        let cfg = LaunchConfig { grid, block, ..LaunchConfig::default() };
        assert!(
            matches!(dev.launch(&m, "saxpy", &cfg, &args), Err(LaunchError::BadLaunchConfig { .. })),
            "{grid:?} {block:?}"
        );
    }
    // Too much shared memory.
    let mut mb = ModuleBuilder::new();
    let mut k = mb.kernel("big");
    let sh = k.shared("sh", Type::array(Scalar::U32.into(), 20_000));
    let p0 = k.addr(sh);
    let z = k.u32(0);
    k.store(p0, None, z);
    let f = k.finish().unwrap();
    let big = mb.add(f);
    let mut g = mb.device_fn("helper", None);
    g.ret(None);
    let f = g.finish().unwrap();
    mb.add(f);
    let _ = big;
    let m = mb.build();
    assert!(matches!(dev.launch(&m, "big", &cfg, &[]), Err(LaunchError::SharedMemoryTooLarge { bytes: 80_000, .. })));
    assert!(matches!(dev.launch(&m, "helper", &cfg, &[]), Err(LaunchError::NotAKernel { .. })));
}

#[test]
fn device_is_send_and_sync_and_shareable() {
    fn check<T: Send + Sync>() {}
    check::<CpuDevice>();
    let dev = std::sync::Arc::new(CpuDevice::new(0));
    let handles: Vec<_> = (0..2)
        .map(|_| {
            let dev = dev.clone();
            std::thread::spawn(move || {
                let (got, want, _) = run_saxpy(&dev, 2000);
                got == want
            })
        })
        .collect();
    for h in handles {
        assert!(h.join().unwrap());
    }
}

#[test]
fn launches_are_deterministic() {
    let dev = CpuDevice::new(0);
    let (_, _, s1) = run_saxpy(&dev, 3000);
    let (_, _, s2) = run_saxpy(&dev, 3000);
    assert_eq!(s1, s2);
}

#[test]
fn other_atomics_and_cas() {
    let mut mb = ModuleBuilder::new();
    let mut k = mb.kernel("atoms");
    let p = k.param(gptr(Scalar::I32));
    let old = k.param(gptr(Scalar::I32));
    let t = k.builtin(Builtin::ThreadId(Axis::X));
    let ti = k.convert(t, Scalar::I32);
    let five = k.i32(5);
    let v = k.sub(ti, five); // -5 .. 2
    let (i0, i1, i2, i3) = (k.u32(0), k.u32(1), k.u32(2), k.u32(3));
    k.atomic(AtomicOp::Min, p, Some(i0), v);
    k.atomic(AtomicOp::Max, p, Some(i1), v);
    let x = k.atomic(AtomicOp::Xchg, p, Some(i2), ti);
    k.store(old, Some(t), x);
    // Only the thread that sees 0 swaps in its id + 100.
    let zero = k.i32(0);
    let hundred = k.i32(100);
    let mine = k.add(ti, hundred);
    k.atomic_cas(p, Some(i3), zero, mine);
    let f = k.finish().unwrap();
    mb.add(f);
    let m = mb.build();
    let dev = CpuDevice::new(0);
    let p = dev.alloc(16).unwrap();
    let old = dev.alloc(32).unwrap();
    dev.launch(&m, "atoms", &LaunchConfig::linear(1, 8), &[KernelArg::Ptr(p), KernelArg::Ptr(old)]).unwrap();
    let got: Vec<i32> = download_u32(&dev, p, 4).into_iter().map(|x| x as i32).collect();
    // Threads run in order: thread 0 does the cas first.
    assert_eq!(got, [-5, 2, 7, 100]);
    assert_eq!(download_u32(&dev, old, 8), [0, 0, 1, 2, 3, 4, 5, 6]);
}

/// Every thread adds 1 to `p[1]` with an atomic, then (after a barrier if
/// `barrier`) loads `p[1]` with a plain load into `out[thread]`.
fn add_then_load_module(barrier: bool) -> Module {
    let mut mb = ModuleBuilder::new();
    let mut k = mb.kernel("add_then_load");
    let p = k.param(gptr(Scalar::U32));
    let out = k.param(gptr(Scalar::U32));
    let t = k.builtin(Builtin::ThreadId(Axis::X));
    let (one, i1) = (k.u32(1), k.u32(1));
    k.atomic(AtomicOp::Add, p, Some(i1), one);
    if barrier {
        k.barrier();
    }
    let x = k.load(p, Some(i1));
    k.store(out, Some(t), x);
    let f = k.finish().unwrap();
    mb.add(f);
    mb.build()
}

#[test]
fn a_load_racing_another_threads_atomic_is_a_data_race() {
    let dev = CpuDevice::new(0);
    let (p, out) = (dev.alloc(8).unwrap(), dev.alloc(16).unwrap());
    let args = [KernelArg::Ptr(p), KernelArg::Ptr(out)];
    let cfg = LaunchConfig::linear(1, 4);
    // Thread 0 adds and loads (its own accesses are ordered); thread 1's
    // add races with thread 0's load.
    let err = dev.launch(&add_then_load_module(false), "add_then_load", &cfg, &args).unwrap_err();
    assert_eq!(
        err,
        LaunchError::Fault {
            kernel: "add_then_load".into(),
            block: [0, 0, 0],
            thread: [1, 0, 0],
            kind: FaultKind::DataRace {
                space: AddrSpace::Global,
                addr: p.0 + 4,
                other_thread: [0, 0, 0],
                other_access: Access::Read,
                access: Access::Atomic,
            },
        }
    );
    // Unchecked, the cpu device's sequential order shows in the loads; a
    // GPU may load 4 everywhere.
    dev.set_race_detection(false);
    dev.write(p, &[0; 8]).unwrap();
    dev.launch(&add_then_load_module(false), "add_then_load", &cfg, &args).unwrap();
    assert_eq!(download_u32(&dev, out, 4), [1, 2, 3, 4]);
    // A barrier between the atomics and the loads orders them.
    dev.set_race_detection(true);
    dev.write(p, &[0; 8]).unwrap();
    dev.launch(&add_then_load_module(true), "add_then_load", &cfg, &args).unwrap();
    assert_eq!(download_u32(&dev, out, 4), [4, 4, 4, 4]);
}

#[test]
fn memory_space_faults() {
    let mut mb = ModuleBuilder::new();
    // Reads a bool from global memory.
    let mut k = mb.kernel("read_bool");
    let b = k.param(gptr(Scalar::Bool));
    let out = k.param(gptr(Scalar::U32));
    let v = k.load(b, None);
    let u = k.convert(v, Scalar::U32);
    k.store(out, None, u);
    let f = k.finish().unwrap();
    mb.add(f);
    // Indexes a shared array out of range.
    let mut k = mb.kernel("shared_oob");
    let sh = k.shared("sh", Type::array(Scalar::U32.into(), 4));
    let p = k.addr(sh);
    let i = k.u32(4);
    let z = k.u32(0);
    k.store(p, Some(i), z);
    let f = k.finish().unwrap();
    mb.add(f);
    // Returns a pointer into its own (then dead) frame.
    let mut g = mb.device_fn("dangle", Some(Type::ptr(AddrSpace::Local, Scalar::U32.into())));
    let l = g.local("l", Type::array(Scalar::U32.into(), 2));
    let lp = g.addr(l);
    g.ret(Some(lp));
    let f = g.finish().unwrap();
    let dangle = mb.add(f);
    let mut k = mb.kernel("use_dangling");
    let p = k.call(dangle, vec![]);
    let v = k.load(p, None);
    let mut_local = k.local("x", Scalar::U32);
    k.set(mut_local, v);
    let f = k.finish().unwrap();
    mb.add(f);
    let m = mb.build();
    let dev = CpuDevice::new(0);
    let b = dev.alloc(1).unwrap();
    let out = dev.alloc(4).unwrap();
    dev.write(b, &[1]).unwrap();
    dev.launch(&m, "read_bool", &LaunchConfig::default(), &[KernelArg::Ptr(b), KernelArg::Ptr(out)]).unwrap();
    assert_eq!(download_u32(&dev, out, 1), [1]);
    dev.write(b, &[2]).unwrap();
    let err =
        dev.launch(&m, "read_bool", &LaunchConfig::default(), &[KernelArg::Ptr(b), KernelArg::Ptr(out)]).unwrap_err();
    assert!(matches!(err, LaunchError::Fault { kind: FaultKind::InvalidBool { byte: 2, .. }, .. }), "{err}");
    let err = dev.launch(&m, "shared_oob", &LaunchConfig::default(), &[]).unwrap_err();
    assert!(
        matches!(
            err,
            LaunchError::Fault {
                kind: FaultKind::OutOfBounds { space: AddrSpace::Shared, access: Access::Write, size: 4, .. },
                ..
            }
        ),
        "{err}"
    );
    let err = dev.launch(&m, "use_dangling", &LaunchConfig::default(), &[]).unwrap_err();
    assert!(
        matches!(err, LaunchError::Fault { kind: FaultKind::OutOfBounds { space: AddrSpace::Local, .. }, .. }),
        "{err}"
    );
}

#[test]
fn error_types_stay_small() {
    assert!(size_of::<LaunchError>() <= 104, "{}", size_of::<LaunchError>());
    assert!(size_of::<FaultKind>() <= 32, "{}", size_of::<FaultKind>());
}
