//! Random and mutated modules: the verifier never panics.

use super::*;

// ---- never panics --------------------------------------------------------------

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }
    fn u32(&mut self, n: u32) -> u32 {
        self.below(u64::from(n)) as u32
    }
    fn coin(&mut self) -> bool {
        self.next() & 1 == 0
    }
}

fn rand_type(r: &mut Rng, depth: u32) -> Type {
    let s = Scalar::ALL[r.below(8) as usize];
    match if depth > 2 { 0 } else { r.below(7) } {
        0..=2 => t(s),
        3 | 4 => Type::ptr(AddrSpace::ALL[r.below(4) as usize], rand_type(r, depth + 1)),
        5 => Type::array(rand_type(r, depth + 1), [0, 1, 4, u32::MAX][r.below(4) as usize]),
        _ => Type::Struct((0..r.below(3)).map(|_| rand_type(r, depth + 1)).collect()),
    }
}

fn rand_op(r: &mut Rng, nv: u32, nvars: u32, nf: u32, nc: u32) -> Op {
    let mut val = || Value::from_u32(r.u32(nv + 2));
    let (a, b, c) = (val(), val(), val());
    let idx = if r.coin() { Some(a) } else { None };
    match r.below(17) {
        0 => Op::Const(r.below(3) << (r.below(2) * 40)),
        1 => Op::Unary(UnaryOp::ALL[r.below(4) as usize], a),
        2 => Op::Binary(BinaryOp::ALL[r.below(12) as usize], a, b),
        3 => Op::Compare(CmpOp::ALL[r.below(6) as usize], a, b),
        4 => Op::Select(a, b, c),
        5 => Op::Convert(a),
        6 => Op::Bitcast(a),
        7 => Op::Load { ptr: b, index: idx },
        8 => Op::Offset { ptr: a, index: b },
        9 => Op::Elem { ptr: a, index: b },
        10 => Op::Field { ptr: a, field: r.u32(3) },
        11 => Op::VarAddr(Var::from_u32(r.u32(nvars + 1))),
        12 => Op::ConstAddr(ConstId::from_u32(r.u32(nc + 1))),
        13 => Op::Get(Var::from_u32(r.u32(nvars + 1))),
        14 => Op::Call(FuncId::from_u32(r.u32(nf + 1)), vec![a, b][..r.below(3) as usize % 3].to_vec()),
        15 => Op::Atomic { op: AtomicOp::ALL[r.below(4) as usize], ptr: b, index: idx, value: c },
        _ => Op::AtomicCas { ptr: b, index: idx, expected: c, new: a },
    }
}

fn rand_block(r: &mut Rng, depth: u32, nv: u32, nvars: u32, nf: u32, nc: u32) -> Vec<Stmt> {
    let len = r.below(if depth > 3 { 2 } else { 5 });
    (0..len)
        .map(|_| {
            let val = |r: &mut Rng| Value::from_u32(r.u32(nv + 2));
            let kind = match r.below(10) {
                0..=3 => StmtKind::Let { result: val(r), op: rand_op(r, nv, nvars, nf, nc) },
                4 => StmtKind::Store { ptr: val(r), index: if r.coin() { Some(val(r)) } else { None }, value: val(r) },
                5 => StmtKind::Set { var: Var::from_u32(r.u32(nvars + 1)), value: val(r) },
                6 => StmtKind::Call(FuncId::from_u32(r.u32(nf + 1)), if r.coin() { vec![] } else { vec![val(r)] }),
                7 => StmtKind::If {
                    cond: val(r),
                    then_body: rand_block(r, depth + 1, nv, nvars, nf, nc),
                    else_body: rand_block(r, depth + 1, nv, nvars, nf, nc),
                },
                8 => StmtKind::Loop(rand_block(r, depth + 1, nv, nvars, nf, nc)),
                _ => [
                    StmtKind::Break,
                    StmtKind::Continue,
                    StmtKind::Barrier,
                    StmtKind::Return(None),
                    StmtKind::Return(Some(val(r))),
                ][r.below(5) as usize]
                    .clone(),
            };
            st(kind)
        })
        .collect()
}

/// Renumbers the `Let`s of `b` canonically from `next`.
fn renumber(b: &mut [Stmt], next: &mut u32) {
    for s in b {
        match &mut s.kind {
            StmtKind::Let { result, .. } => {
                *result = Value::from_u32(*next);
                *next += 1;
            }
            StmtKind::If { then_body, else_body, .. } => {
                renumber(then_body, next);
                renumber(else_body, next);
            }
            StmtKind::Loop(body) => renumber(body, next),
            _ => {}
        }
    }
}

fn rand_module(r: &mut Rng) -> Module {
    let mut m = Module::new();
    let nf = r.u32(4) + 1;
    let nc = r.u32(2);
    for i in 0..nc {
        let ty = rand_type(r, 1);
        let init = if r.coin() {
            ConstInit::Scalar(r.below(4))
        } else {
            ConstInit::Array(vec![ConstInit::Scalar(1); r.below(5) as usize])
        };
        m.consts.push(ConstDecl { name: format!("c{i}"), ty, init, span: Span::default() });
    }
    for i in 0..nf {
        let kind = if r.coin() { FuncKind::Kernel } else { FuncKind::Device };
        let mut f = Function::new(format!("f{}", r.u32(nf + 2) + i * (r.u32(2))), kind);
        let nvars = r.u32(3);
        for j in 0..nvars {
            let vk = if r.coin() { VarKind::Local } else { VarKind::Shared };
            f.vars.push(VarDecl { name: format!("x{j}"), kind: vk, ty: rand_type(r, 0), span: Span::default() });
        }
        let np = r.u32(3);
        let nv = np + r.u32(6);
        f.body = rand_block(r, 0, nv, nvars, nf, nc);
        let mut next = np;
        if r.coin() {
            renumber(&mut f.body, &mut next);
        }
        let nv = if r.coin() { next } else { nv };
        for _ in 0..nv {
            // Mostly plain scalars so that phase 2 sees well-typed code often.
            let ty = if r.below(3) == 0 { rand_type(r, 0) } else { t(Scalar::ALL[r.below(7) as usize + 1]) };
            f.values.push(ValueData { ty });
        }
        f.params = (0..np).map(Value::from_u32).collect();
        if r.below(8) == 0 {
            f.params.reverse();
        }
        if r.coin() {
            f.ret = Some(rand_type(r, 1));
        }
        m.funcs.push(f);
    }
    m
}

#[test]
fn random_modules_never_panic() {
    let mut r = Rng(0x1234_5678_9abc_def1);
    let (mut ok, mut phase2) = (0, 0);
    for _ in 0..20_000 {
        let m = rand_module(&mut r);
        match verify(&m) {
            Ok(_) => ok += 1,
            Err(e) => {
                assert!(!e.is_empty());
                let _ = e.render("fuzz.rk");
                if e.iter().any(|e| {
                    !matches!(
                        e.kind,
                        K::DanglingValue(_)
                            | K::DanglingVar(_)
                            | K::DanglingFunc(_)
                            | K::DanglingConst(_)
                            | K::ParamOrder { .. }
                            | K::Redefined(_)
                            | K::OutOfOrder { .. }
                            | K::Undefined(_)
                            | K::NotDominated(_)
                    )
                }) {
                    phase2 += 1;
                }
            }
        }
    }
    // The generator reaches past phase 1 reasonably often.
    assert!(phase2 > 1000, "only {phase2} modules reached phase 2 (ok: {ok})");
}

#[test]
fn mutated_valid_module_never_panics() {
    let base = sample();
    let mut r = Rng(42);
    for _ in 0..5_000 {
        let mut m = base.clone();
        let fi = FuncId::from_u32(r.u32(m.funcs.len() as u32));
        let f = &mut m.funcs[fi];
        let nv = f.values.len() as u32;
        match r.below(5) {
            0 => {
                let extra = rand_block(&mut r, 2, nv, f.vars.len() as u32, 5, 1);
                let at = r.below(f.body.len() as u64 + 1) as usize;
                f.body.splice(at..at, extra);
            }
            1 if !f.body.is_empty() => {
                let at = r.below(f.body.len() as u64) as usize;
                f.body.remove(at);
            }
            2 if !f.values.is_empty() => {
                let at = Value::from_u32(r.u32(nv));
                f.values[at].ty = rand_type(&mut r, 0);
            }
            3 if f.body.len() > 1 => {
                let (a, b) = (r.below(f.body.len() as u64) as usize, r.below(f.body.len() as u64) as usize);
                f.body.swap(a, b);
            }
            _ => {
                let vi = Var::from_u32(r.u32(f.vars.len() as u32 + 1));
                if let Some(d) = f.vars.get_mut(vi) {
                    d.ty = rand_type(&mut r, 0);
                    d.kind = if r.coin() { VarKind::Local } else { VarKind::Shared };
                }
            }
        }
        let _ = verify(&m);
    }
}

#[test]
fn deep_nesting_is_fine() {
    let mut body = vec![st(StmtKind::Break)];
    for _ in 0..2_000 {
        body = vec![st(StmtKind::Loop(body))];
    }
    let m = module(vec![kernel(&[], 0, body)]);
    // Run on a thread with a modest stack, as a host application might.
    let r = std::thread::Builder::new().stack_size(8 << 20).spawn(move || verify(&m).is_ok()).unwrap().join();
    assert_eq!(r.ok(), Some(true));
}
