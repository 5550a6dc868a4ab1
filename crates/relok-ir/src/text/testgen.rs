//! A generator of random well-typed modules, built with the builder, for the
//! round-trip property tests. Every `Op` variant and statement kind occurs;
//! a seed determines the module.

use crate::builder::{FunctionBuilder, ModuleBuilder};
use crate::ir::{
    AtomicOp, Axis, BinaryOp, Builtin, CmpOp, ConstId, ConstInit, FuncId, HostRef, Module, Op, Stage, StateField,
    Strategy, UnaryOp, Value, Var, VarKind,
};
use crate::types::{AddrSpace, Scalar, Type};
use std::cell::RefCell;

/// splitmix64.
pub(super) struct Rng(u64);

impl Rng {
    pub(super) fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub(super) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub(super) fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { (self.next() % n as u64) as usize }
    }
    fn chance(&mut self, num: u64, den: u64) -> bool {
        self.next() % den < num
    }
    fn pick<T: Clone>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())].clone()
    }
}

const NON_WORD: [Scalar; 7] =
    [Scalar::Bool, Scalar::I32, Scalar::U32, Scalar::I64, Scalar::U64, Scalar::F32, Scalar::F64];
const INTS: [Scalar; 4] = [Scalar::I32, Scalar::U32, Scalar::I64, Scalar::U64];
const NUMERIC: [Scalar; 6] = [Scalar::I32, Scalar::U32, Scalar::I64, Scalar::U64, Scalar::F32, Scalar::F64];

/// Random literal bits of `s`, with the interesting float values
/// (signed zeros, infinities, NaN payloads, subnormals) well represented.
pub(super) fn literal(rng: &mut Rng, s: Scalar) -> u64 {
    let r = rng.next();
    match s {
        Scalar::Bool => r & 1,
        Scalar::I32 | Scalar::U32 => rng.pick(&[0, 1, 0xffff_ffff, 0x8000_0000, 0x7fff_ffff, 42, r & 0xffff_ffff]),
        Scalar::U8 | Scalar::I8 => rng.pick(&[0, 1, 0xff, 0x80, 0x7f, r & 0xff]),
        Scalar::U16 | Scalar::I16 => rng.pick(&[0, 1, 0xffff, 0x8000, 0x7fff, r & 0xffff]),
        Scalar::I64 | Scalar::U64 => rng.pick(&[0, 1, u64::MAX, 1 << 63, i64::MAX as u64, 7, r]),
        Scalar::F32 => {
            let specials: [u32; 16] = [
                0.0f32.to_bits(),
                (-0.0f32).to_bits(),
                1.0f32.to_bits(),
                (-1.5f32).to_bits(),
                f32::INFINITY.to_bits(),
                f32::NEG_INFINITY.to_bits(),
                0x7fc0_0000,
                0xffc0_0000,
                0x7fc0_0001,
                0x7f80_0001,
                1,
                f32::MAX.to_bits(),
                f32::MIN_POSITIVE.to_bits(),
                1e-10f32.to_bits(),
                0.1f32.to_bits(),
                16_777_217.0f32.to_bits(),
            ];
            if rng.chance(1, 3) { r & 0xffff_ffff } else { u64::from(rng.pick(&specials)) }
        }
        Scalar::F64 => {
            let specials: [u64; 15] = [
                0.0f64.to_bits(),
                (-0.0f64).to_bits(),
                1.0f64.to_bits(),
                (-2.5f64).to_bits(),
                f64::INFINITY.to_bits(),
                f64::NEG_INFINITY.to_bits(),
                0x7ff8_0000_0000_0000,
                0xfff8_0000_0000_0000,
                0x7ff8_0000_0000_0001,
                0x7ff0_0000_0000_0001,
                1,
                f64::MAX.to_bits(),
                f64::MIN_POSITIVE.to_bits(),
                1e300f64.to_bits(),
                0.1f64.to_bits(),
            ];
            if rng.chance(1, 3) { r } else { rng.pick(&specials) }
        }
        Scalar::Word => r,
    }
}

/// A random sized type for memory: scalars (never `word` when `no_word`),
/// arrays and structs, nested up to `depth`.
fn data_type(rng: &mut Rng, depth: u32, no_word: bool) -> Type {
    let choice = if depth == 0 { 0 } else { rng.below(4) };
    match choice {
        1 => Type::array(data_type(rng, depth - 1, no_word), 1 + rng.below(4) as u32),
        2 => Type::Struct((0..1 + rng.below(3)).map(|_| data_type(rng, depth - 1, no_word)).collect()),
        _ if no_word => {
            // Every scalar memory may hold but `word`: the value types and
            // the storage types.
            let choices: Vec<Scalar> = Scalar::ALL.into_iter().filter(|&s| s != Scalar::Word).collect();
            Type::Scalar(rng.pick(&choices))
        }
        _ => Type::Scalar(rng.pick(&Scalar::ALL)),
    }
}

/// An initializer for `ty`; `word` leaves are `ref`s in source modules and
/// baked words (or 0) in lowered ones.
fn init_for(rng: &mut Rng, ty: &Type, stage: Stage, consts: &[ConstId]) -> ConstInit {
    match ty {
        Type::Scalar(Scalar::Word) if stage == Stage::Source => ConstInit::Ref(host_ref(rng, consts)),
        Type::Scalar(s) => ConstInit::Scalar(literal(rng, *s)),
        Type::Array(e, n) => ConstInit::Array((0..*n).map(|_| init_for(rng, e, stage, consts)).collect()),
        Type::Struct(fields) => ConstInit::Struct(fields.iter().map(|f| init_for(rng, f, stage, consts)).collect()),
        Type::Ptr(..) => ConstInit::Scalar(0),
    }
}

/// A random name of the characters in `chars`, at least one long.
fn name_from(rng: &mut Rng, chars: &str) -> String {
    let chars: Vec<char> = chars.chars().collect();
    (0..1 + rng.below(8)).map(|_| rng.pick(&chars)).collect()
}

const NAME_CHARS: &str = "abcxyzABZ0189_";

/// A random host reference; `@c` only of `value_consts` (which hold no words).
fn host_ref(rng: &mut Rng, value_consts: &[ConstId]) -> HostRef {
    match rng.below(4) {
        0 if !value_consts.is_empty() => HostRef::Value(rng.pick(value_consts)),
        1 => {
            let pieces = [
                "", "a", "\"", "\\", "\n", "\r", "\t", "\0", "'", "é", "\u{301}", "\u{7f}", "\u{200b}", "🚀", " ", "{}",
            ];
            HostRef::Str((0..rng.below(6)).map(|_| rng.pick(&pieces)).collect())
        }
        2 => {
            let any = rng.next();
            let offset = rng.pick(&[0, 8, 16, u64::MAX, any]);
            HostRef::Global { name: name_from(rng, NAME_CHARS), offset }
        }
        _ => HostRef::Symbol(name_from(rng, "abcz.Z09_.")),
    }
}

fn value_type(rng: &mut Rng) -> Type {
    if rng.chance(1, 4) {
        let s = rng.pick(&Scalar::ALL);
        let pointee = rng.pick(&[
            Type::Scalar(s),
            Type::array(Scalar::U32.into(), 8),
            Type::Struct(vec![Scalar::F32.into(), Scalar::U32.into()]),
        ]);
        Type::ptr(AddrSpace::Global, pointee)
    } else {
        Type::Scalar(rng.pick(&Scalar::VALUES))
    }
}

struct St {
    rng: Rng,
    /// Values in scope, innermost last.
    pool: Vec<Value>,
    loops: usize,
    kernel: bool,
    ret: Option<Type>,
    callees: Vec<(FuncId, Vec<Type>, Option<Type>)>,
    consts: Vec<ConstId>,
    /// Constants without words (`ref @c` may name them).
    value_consts: Vec<ConstId>,
    vars: Vec<Var>,
    stage: Stage,
}

type Fb<'m> = FunctionBuilder<'m>;

fn ty_of(k: &Fb<'_>, v: Value) -> Type {
    k.func().ty(v).clone()
}

impl St {
    fn find(&mut self, k: &Fb<'_>, ok: impl Fn(&Type) -> bool) -> Option<Value> {
        let found: Vec<Value> = self.pool.iter().copied().filter(|&v| ok(k.func().ty(v))).collect();
        if found.is_empty() { None } else { Some(self.rng.pick(&found)) }
    }

    fn def(&mut self, v: Value) -> Value {
        self.pool.push(v);
        v
    }

    /// A value of type `ty`: an existing one, or a new literal (words by
    /// bitcasting a `u64`). Pointers only exist if some value has the type.
    fn ensure(&mut self, k: &mut Fb<'_>, ty: &Type) -> Option<Value> {
        if self.rng.chance(2, 3)
            && let Some(v) = self.find(k, |t| t == ty)
        {
            return Some(v);
        }
        match ty {
            Type::Scalar(Scalar::Word) => {
                let u = self.ensure(k, &Type::Scalar(Scalar::U64))?;
                let w = k.bitcast(u, Scalar::Word);
                Some(self.def(w))
            }
            Type::Scalar(s) => {
                let bits = literal(&mut self.rng, *s);
                let v = k.const_bits(*s, bits);
                Some(self.def(v))
            }
            _ => self.find(k, |t| t == ty),
        }
    }

    fn ensure_scalar(&mut self, k: &mut Fb<'_>, s: Scalar) -> Value {
        match self.ensure(k, &Type::Scalar(s)) {
            Some(v) => v,
            None => unreachable!("scalars can always be made"),
        }
    }

    fn index(&mut self, k: &mut Fb<'_>) -> Value {
        let s = self.rng.pick(&INTS);
        self.ensure_scalar(k, s)
    }

    fn maybe_index(&mut self, k: &mut Fb<'_>) -> Option<Value> {
        if self.rng.chance(1, 2) { Some(self.index(k)) } else { None }
    }

    /// One statement that opens no block; false if it could not be made.
    fn simple(&mut self, k: &mut Fb<'_>, choice: usize) -> bool {
        let rng = &mut self.rng;
        match choice {
            0 => {
                let s = rng.pick(&NON_WORD);
                let bits = literal(rng, s);
                let v = k.const_bits(s, bits);
                self.def(v);
            }
            1 => {
                let u = rng.pick(UnaryOp::ALL);
                let s = match u {
                    UnaryOp::Neg | UnaryOp::Abs => rng.pick(&NUMERIC),
                    UnaryOp::Not => rng.pick(&[Scalar::Bool, Scalar::I32, Scalar::U32, Scalar::I64, Scalar::U64]),
                    UnaryOp::Sqrt => rng.pick(&[Scalar::F32, Scalar::F64]),
                };
                let a = self.ensure_scalar(k, s);
                let v = k.unary(u, a);
                self.def(v);
            }
            2 => {
                let b = rng.pick(BinaryOp::ALL);
                let s = match b {
                    BinaryOp::And | BinaryOp::Or | BinaryOp::Xor => {
                        rng.pick(&[Scalar::Bool, Scalar::I32, Scalar::U32, Scalar::I64, Scalar::U64])
                    }
                    BinaryOp::Shl | BinaryOp::Shr => rng.pick(&INTS),
                    _ => rng.pick(&NUMERIC),
                };
                let x = self.ensure_scalar(k, s);
                let y = self.ensure_scalar(k, s);
                let v = k.op(Op::Binary(b, x, y));
                self.def(v);
            }
            3 => {
                let c = rng.pick(CmpOp::ALL);
                let (x, y) = if matches!(c, CmpOp::Eq | CmpOp::Ne) && rng.chance(1, 4) {
                    match self.find(k, |t| t.as_ptr().is_some()) {
                        Some(p) => (p, p),
                        None => return false,
                    }
                } else {
                    let s =
                        if matches!(c, CmpOp::Eq | CmpOp::Ne) { rng.pick(&Scalar::VALUES) } else { rng.pick(&NUMERIC) };
                    (self.ensure_scalar(k, s), self.ensure_scalar(k, s))
                };
                let v = k.op(Op::Compare(c, x, y));
                self.def(v);
            }
            4 => {
                let c = self.ensure_scalar(k, Scalar::Bool);
                let s = self.rng.pick(&Scalar::VALUES);
                let a = self.ensure_scalar(k, s);
                let b = self.ensure_scalar(k, s);
                let v = k.select(c, a, b);
                self.def(v);
            }
            5 => {
                let from = rng.pick(&NON_WORD);
                let to = rng.pick(&NON_WORD);
                let a = self.ensure_scalar(k, from);
                let v = k.convert(a, to);
                self.def(v);
            }
            6 => {
                let groups: [&[Scalar]; 3] = [
                    &[Scalar::I32, Scalar::U32, Scalar::F32],
                    &[Scalar::I64, Scalar::U64, Scalar::F64],
                    &[Scalar::U64, Scalar::Word],
                ];
                let g = rng.pick(&groups);
                let (from, to) = (rng.pick(g), rng.pick(g));
                let a = self.ensure_scalar(k, from);
                let v = k.bitcast(a, to);
                self.def(v);
            }
            7 => {
                let Some(p) = self.find(k, |t| t.as_ptr().is_some_and(|(_, e)| e.is_loadable())) else {
                    return false;
                };
                let i = self.maybe_index(k);
                let v = k.load(p, i);
                self.def(v);
            }
            8 => {
                let Some(p) =
                    self.find(k, |t| t.as_ptr().is_some_and(|(s, e)| s != AddrSpace::Const && e.is_loadable()))
                else {
                    return false;
                };
                let Some((_, pointee)) = ty_of(k, p).as_ptr().map(|(s, e)| (s, e.clone())) else { return false };
                let Some(x) = self.ensure(k, &pointee.loaded()) else { return false };
                let i = self.maybe_index(k);
                k.store(p, i, x);
            }
            9 => {
                let Some(p) = self.find(k, |t| t.as_ptr().is_some()) else { return false };
                let i = self.index(k);
                let v = k.offset(p, i);
                self.def(v);
            }
            10 => {
                let Some(p) = self.find(k, |t| matches!(t.as_ptr(), Some((_, Type::Array(..))))) else { return false };
                let i = self.index(k);
                let v = k.elem(p, i);
                self.def(v);
            }
            11 => {
                let Some(p) = self.find(k, |t| matches!(t.as_ptr(), Some((_, Type::Struct(..))))) else { return false };
                let n = match ty_of(k, p).as_ptr() {
                    Some((_, Type::Struct(fields))) => fields.len(),
                    _ => return false,
                };
                let field = self.rng.below(n) as u32;
                let v = k.field(p, field);
                self.def(v);
            }
            12 => {
                if self.vars.is_empty() {
                    return false;
                }
                let x = self.rng.pick(&self.vars);
                let v = k.addr(x);
                self.def(v);
            }
            13 => {
                if self.consts.is_empty() {
                    return false;
                }
                let c = self.rng.pick(&self.consts);
                let v = k.const_addr(c);
                self.def(v);
            }
            14 | 15 => {
                let gettable: Vec<Var> = self
                    .vars
                    .iter()
                    .copied()
                    .filter(|&x| {
                        let d = &k.func().vars[x];
                        d.kind == VarKind::Local && d.ty.is_value_type()
                    })
                    .collect();
                if gettable.is_empty() {
                    return false;
                }
                let x = self.rng.pick(&gettable);
                if choice == 14 {
                    let v = k.get(x);
                    self.def(v);
                } else {
                    let ty = k.func().vars[x].ty.clone();
                    let Some(v) = self.ensure(k, &ty) else { return false };
                    k.set(x, v);
                }
            }
            16 => {
                let axis = rng.pick(&Axis::ALL);
                let make: fn(Axis) -> Builtin = rng.pick(&[
                    Builtin::ThreadId as fn(Axis) -> Builtin,
                    Builtin::BlockId,
                    Builtin::BlockDim,
                    Builtin::GridDim,
                ]);
                let v = k.builtin(make(axis));
                self.def(v);
            }
            17 | 18 => {
                let candidates: Vec<usize> =
                    (0..self.callees.len()).filter(|&i| (choice == 18) == self.callees[i].2.is_none()).collect();
                if candidates.is_empty() {
                    return false;
                }
                let i = self.rng.pick(&candidates);
                let (f, params) = (self.callees[i].0, self.callees[i].1.clone());
                let mut args = Vec::new();
                for p in &params {
                    let Some(a) = self.ensure(k, p) else { return false };
                    args.push(a);
                }
                if choice == 17 {
                    let v = k.call(f, args);
                    self.def(v);
                } else {
                    k.call_void(f, args);
                }
            }
            19 | 20 => {
                let Some(p) = self.find(k, |t| {
                    matches!(t.as_ptr(), Some((AddrSpace::Global | AddrSpace::Shared, Type::Scalar(s))) if s.is_int())
                }) else {
                    return false;
                };
                let Some(s) = ty_of(k, p).as_ptr().and_then(|(_, e)| e.as_scalar()) else { return false };
                let i = self.maybe_index(k);
                let x = self.ensure_scalar(k, s);
                let v = if choice == 19 {
                    let op = self.rng.pick(AtomicOp::ALL);
                    k.atomic(op, p, i, x)
                } else {
                    let y = self.ensure_scalar(k, s);
                    k.atomic_cas(p, i, x, y)
                };
                self.def(v);
            }
            24 => {
                // The word of a host object, as the stage writes it.
                let v = match self.stage {
                    Stage::Source => {
                        let r = host_ref(&mut self.rng, &self.value_consts);
                        k.host_ref(r)
                    }
                    Stage::Lowered(Strategy::Bake) => {
                        let bits = self.rng.next();
                        k.op(Op::BakedWord(bits))
                    }
                    Stage::Lowered(Strategy::Patch) => {
                        let name = name_from(&mut self.rng, "ab_$09Z");
                        k.op(Op::Patch(name))
                    }
                    Stage::Lowered(Strategy::Table) => {
                        let t = k.op(Op::State(StateField::RelocTable));
                        self.def(t);
                        let i = self.index(k);
                        k.load(t, Some(i))
                    }
                };
                self.def(v);
            }
            25 => {
                let Some(w) = self.find(k, |t| *t == Type::Scalar(Scalar::Word)) else { return false };
                let pointee = self.rng.pick(&[
                    Type::Scalar(Scalar::U32),
                    Type::Scalar(Scalar::Word),
                    Type::array(Scalar::U32.into(), 8),
                    Type::Struct(vec![Scalar::F32.into(), Scalar::U32.into()]),
                ]);
                let v = k.op_typed(Op::WordPtr(w), Type::ptr(AddrSpace::Global, pointee));
                self.def(v);
            }
            26 => {
                let field = self.rng.pick(&StateField::ALL);
                let v = k.op(Op::State(field));
                self.def(v);
            }
            27 => {
                if !self.rng.chance(1, 3) {
                    return false;
                }
                k.exit();
            }
            21 => k.barrier(),
            22 => {
                if self.loops == 0 {
                    return false;
                }
                if self.rng.chance(1, 2) { k.break_() } else { k.continue_() }
            }
            _ => {
                let value = match self.ret.clone() {
                    Some(t) => match self.ensure(k, &t) {
                        Some(v) => Some(v),
                        None => return false,
                    },
                    None => None,
                };
                k.ret(value);
            }
        }
        true
    }
}

const SIMPLE_KINDS: usize = 28;

fn gen_block(k: &mut Fb<'_>, st: &RefCell<St>, depth: u32) {
    let n = {
        let mut s = st.borrow_mut();
        s.rng.below(if depth < 2 { 9 } else { 4 })
    };
    for _ in 0..n {
        gen_stmt(k, st, depth);
    }
}

fn nested(k: &mut Fb<'_>, st: &RefCell<St>, depth: u32, in_loop: bool) {
    let scope = {
        let mut s = st.borrow_mut();
        s.loops += usize::from(in_loop);
        s.pool.len()
    };
    gen_block(k, st, depth + 1);
    let mut s = st.borrow_mut();
    s.pool.truncate(scope);
    s.loops -= usize::from(in_loop);
}

fn gen_stmt(k: &mut Fb<'_>, st: &RefCell<St>, depth: u32) {
    let choice = {
        let mut s = st.borrow_mut();
        let nest = if depth < 4 { 2 } else { 0 };
        s.rng.below(SIMPLE_KINDS + nest)
    };
    match choice {
        SIMPLE_KINDS => {
            let (cond, with_else) = {
                let mut s = st.borrow_mut();
                let c = s.ensure_scalar(k, Scalar::Bool);
                (c, s.rng.chance(1, 2))
            };
            if with_else {
                k.if_else(cond, |k| nested(k, st, depth, false), |k| nested(k, st, depth, false));
            } else {
                k.if_(cond, |k| nested(k, st, depth, false));
            }
        }
        c if c > SIMPLE_KINDS => k.loop_(|k| nested(k, st, depth, true)),
        c => {
            let mut s = st.borrow_mut();
            if !s.simple(k, c) {
                s.simple(k, 0);
            }
        }
    }
}

/// A random well-typed source-stage module determined by `seed`.
pub(super) fn random_module(seed: u64) -> Module {
    random_staged_module(seed, Stage::Source)
}

/// A random well-typed lowered module determined by `seed` (the strategy too).
pub(super) fn random_lowered_module(seed: u64) -> Module {
    let strategy = Strategy::ALL[(seed % 3) as usize];
    random_staged_module(seed, Stage::Lowered(strategy))
}

fn random_staged_module(seed: u64, stage: Stage) -> Module {
    let mut rng = Rng::new(seed);
    let mut mb = ModuleBuilder::new();
    mb.stage(stage);
    let mut consts = Vec::new();
    let mut value_consts = Vec::new();
    for i in 0..rng.below(4) {
        let ty = data_type(&mut rng, 3, true);
        let init = init_for(&mut rng, &ty, stage, &[]);
        let c = mb.constant(format!("c{i}"), ty, init);
        consts.push(c);
        value_consts.push(c);
    }
    // Constants with word fields (interior sites); none under `table`.
    if stage != Stage::Lowered(Strategy::Table) {
        for i in 0..rng.below(3) {
            let ty = data_type(&mut rng, 2, false);
            let init = init_for(&mut rng, &ty, stage, &value_consts);
            consts.push(mb.constant(format!("w{i}"), ty, init));
        }
    }
    let mut callees: Vec<(FuncId, Vec<Type>, Option<Type>)> = Vec::new();
    for i in 0..rng.below(3) {
        let params: Vec<Type> = (0..rng.below(3)).map(|_| value_type(&mut rng)).collect();
        let ret = if rng.chance(1, 2) { Some(Type::Scalar(rng.pick(&Scalar::VALUES))) } else { None };
        let id = mb.import_fn(format!("lib{i}"), params.clone(), ret.clone());
        callees.push((id, params, ret));
    }
    let devices = rng.below(4);
    let kernels = 1 + rng.below(3);
    for i in 0..devices + kernels {
        let kernel = i >= devices;
        let ret = if !kernel && rng.chance(2, 3) { Some(Type::Scalar(rng.pick(&Scalar::VALUES))) } else { None };
        let mut k = if kernel { mb.kernel(format!("k{i}")) } else { mb.device_fn(format!("f_{i}"), ret.clone()) };
        let mut st = St {
            rng: Rng::new(rng.next()),
            pool: Vec::new(),
            loops: 0,
            kernel,
            ret: ret.clone(),
            callees: callees.clone(),
            consts: consts.clone(),
            value_consts: value_consts.clone(),
            vars: Vec::new(),
            stage,
        };
        let params: Vec<Type> = (0..st.rng.below(5)).map(|_| value_type(&mut st.rng)).collect();
        for p in &params {
            let v = k.param(p.clone());
            st.pool.push(v);
        }
        for j in 0..st.rng.below(4) {
            let shared = st.kernel && st.rng.chance(1, 2);
            let ty = if st.rng.chance(1, 5) {
                Type::ptr(AddrSpace::Global, Scalar::F32.into())
            } else {
                data_type(&mut st.rng, 2, false)
            };
            let x = if shared { k.shared(format!("s{j}"), ty) } else { k.local(format!("l{j}"), ty) };
            st.vars.push(x);
        }
        let st = RefCell::new(st);
        gen_block(&mut k, &st, 0);
        let mut st = st.into_inner();
        if let Some(t) = &ret
            && let Some(v) = st.ensure(&mut k, t)
        {
            k.ret(Some(v));
        }
        let f = match k.finish() {
            Ok(f) => f,
            Err(e) => panic!("the generator built an ill-typed function (seed {seed}): {e}"),
        };
        let id = mb.add(f);
        if !kernel {
            callees.push((id, params, ret));
        }
    }
    mb.build()
}
