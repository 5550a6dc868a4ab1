//! Running a compiled [`Program`]: blocks one after another, the threads of
//! a block as resumable state machines scheduled cooperatively at barriers.
//!
//! A thread is a program counter, a register stack (one window of
//! `nregs` registers per live call frame), a local-memory stack (one slice
//! per live frame) and a call stack. The scheduler runs each runnable thread
//! of a block, in linear thread order, until it finishes or reaches a
//! barrier. When none is runnable: if all finished, the block is done; if
//! every thread waits at the same barrier with the same call stack, all are
//! released; otherwise the first thread (in linear order) that finished or
//! waits elsewhere faults with [`FaultKind::BarrierDivergence`](crate::FaultKind::BarrierDivergence).

use super::compile::{Addr, Inst, LOCAL_LIMIT, NO_REG, Program, Reg};
use super::memory::{CONST_BASE, GlobalMem, LOCAL_BASE, SHARED_BASE};
use super::race::Shadow;
use crate::error::{Access, FaultKind};
use relok_ir::eval as ops;
use relok_ir::{AddrSpace, Scalar};

/// Deepest call stack a thread may have (frames below the kernel's).
pub(crate) const MAX_CALL_DEPTH: u32 = 64;

/// A fault and where it happened.
#[derive(Debug)]
pub(crate) struct Located {
    pub(crate) block: [u32; 3],
    pub(crate) thread: [u32; 3],
    pub(crate) kind: FaultKind,
}

#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
enum State {
    Running,
    Waiting,
    #[default]
    Done,
}

enum Stop {
    Barrier,
    Done,
}

#[derive(Copy, Clone, Debug)]
struct Frame {
    ret_pc: u32,
    func: u32,
    base: usize,
    local_base: usize,
    dst: Reg,
}

#[derive(Debug, Default)]
struct Thread {
    tid: [u32; 3],
    /// Next instruction (while waiting: the one after the barrier).
    pc: u32,
    /// Compiled index of the running function.
    func: u32,
    /// First register of the current frame.
    base: usize,
    /// First local-memory byte of the current frame.
    local_base: usize,
    regs: Vec<u64>,
    local: Vec<u8>,
    /// Which bytes of `local` belong to a variable (frame by frame, as the
    /// functions' layouts say); the others are red zones.
    local_valid: Vec<bool>,
    /// Callers' frames, outermost first.
    frames: Vec<Frame>,
    state: State,
}

impl Thread {
    /// Whether `self` and `other` wait at the same barrier from the same
    /// call sites.
    fn same_barrier(&self, other: &Thread) -> bool {
        self.pc == other.pc
            && self.frames.len() == other.frames.len()
            && self.frames.iter().zip(&other.frames).all(|(a, b)| a.ret_pc == b.ret_pc)
    }
}

/// What one launch supplies besides its geometry and arguments.
pub(crate) struct Env<'a> {
    /// Global address of the kernel state block.
    pub(crate) state: u64,
    /// Words of the program's patch cells, by [`Inst::Patch`] index.
    pub(crate) patch: &'a [u64],
    /// The const image this launch reads (the program's, or a patched copy).
    pub(crate) consts: &'a [u8],
    /// Whether to run the race detector (`race.rs`).
    pub(crate) races: bool,
}

/// Runs every block of the launch; returns the steps executed.
pub(crate) fn run(
    prog: &Program,
    env: &Env<'_>,
    global: &mut GlobalMem,
    grid: [u32; 3],
    block: [u32; 3],
    args: &[u64],
    budget: u64,
) -> Result<u64, Located> {
    let Some(kernel) = prog.funcs.first() else {
        return Err(Located { block: [0; 3], thread: [0; 3], kind: internal("no kernel") });
    };
    let nthreads = block.iter().map(|&d| d as usize).product::<usize>();
    let mut threads: Vec<Thread> = (0..nthreads).map(|_| Thread::default()).collect();
    let mut m = Machine {
        prog,
        env,
        global,
        shared: Vec::new(),
        geometry: [0, 0, 0, block[0], block[1], block[2], grid[0], grid[1], grid[2]],
        steps_left: budget,
        budget,
        races: (env.races && nthreads > 1).then(Shadow::default),
        thread: 0,
    };
    for bz in 0..grid[2] {
        for by in 0..grid[1] {
            for bx in 0..grid[0] {
                let bid = [bx, by, bz];
                m.geometry[..3].copy_from_slice(&bid);
                m.shared.clear();
                m.shared.resize(prog.shared_size as usize, 0);
                for (i, t) in threads.iter_mut().enumerate() {
                    let i = i as u32;
                    t.tid = [i % block[0], (i / block[0]) % block[1], i / (block[0] * block[1])];
                    t.pc = kernel.entry;
                    t.func = 0;
                    t.base = 0;
                    t.local_base = 0;
                    t.regs.clear();
                    t.regs.resize(kernel.nregs as usize, 0);
                    let n = args.len().min(t.regs.len());
                    t.regs[..n].copy_from_slice(&args[..n]);
                    t.local.clear();
                    t.local.resize(kernel.local_size as usize, 0);
                    t.local_valid.clear();
                    t.local_valid.extend_from_slice(&kernel.local_valid);
                    t.frames.clear();
                    t.state = State::Running;
                }
                m.run_block(&mut threads).map_err(|(thread, kind)| Located { block: bid, thread, kind })?;
            }
        }
    }
    Ok(budget - m.steps_left)
}

fn internal(reason: &str) -> FaultKind {
    FaultKind::Internal { reason: reason.to_owned() }
}

struct Machine<'a> {
    prog: &'a Program,
    env: &'a Env<'a>,
    global: &'a mut GlobalMem,
    shared: Vec<u8>,
    /// block_id, block_dim, grid_dim.
    geometry: [u32; 9],
    steps_left: u64,
    budget: u64,
    /// The race detector's record of this block phase, when it is on
    /// (`race.rs`).
    races: Option<Shadow>,
    /// The running thread's linear index in its block.
    thread: u32,
}

#[inline]
fn ea(regs: &[u64], base: usize, a: &Addr) -> u64 {
    let p = regs[base + a.ptr as usize];
    if a.index == NO_REG {
        return p;
    }
    let i = regs[base + a.index as usize];
    let i = if a.sext32 { i as u32 as i32 as i64 as u64 } else { i };
    p.wrapping_add(i.wrapping_mul(u64::from(a.stride)))
}

#[inline]
fn decode(b: &[u8]) -> u64 {
    let mut buf = [0u8; 8];
    buf[..b.len()].copy_from_slice(b);
    u64::from_le_bytes(buf)
}

#[inline]
fn encode(dst: &mut [u8], v: u64) {
    let n = dst.len();
    dst.copy_from_slice(&v.to_le_bytes()[..n]);
}

/// `len` bytes of `mem` at `addr`, where `mem` starts at address `start`,
/// if every one of them belongs to a variable (`valid`; red zones fault).
#[inline]
fn region<'m>(mem: &'m mut [u8], valid: &[bool], start: u64, addr: u64, len: u64) -> Option<&'m mut [u8]> {
    let off = usize::try_from(addr.checked_sub(start)?).ok()?;
    let range = off..off.checked_add(len as usize)?;
    if !valid.get(range.clone())?.iter().all(|&v| v) {
        return None;
    }
    mem.get_mut(range)
}

impl Machine<'_> {
    fn run_block(&mut self, threads: &mut [Thread]) -> Result<(), ([u32; 3], FaultKind)> {
        let block = [self.geometry[3], self.geometry[4], self.geometry[5]];
        loop {
            if let Some(r) = &mut self.races {
                r.clear(block);
            }
            for (i, t) in threads.iter_mut().enumerate() {
                if t.state != State::Running {
                    continue;
                }
                self.thread = i as u32;
                match self.run_thread(t) {
                    Ok(Stop::Barrier) => t.state = State::Waiting,
                    Ok(Stop::Done) => t.state = State::Done,
                    Err(kind) => return Err((t.tid, kind)),
                }
            }
            let Some(w) = threads.iter().position(|t| t.state == State::Waiting) else {
                return Ok(());
            };
            let waiting = &threads[w];
            if let Some(bad) = threads.iter().find(|t| t.state != State::Waiting || !t.same_barrier(waiting)) {
                return Err((bad.tid, FaultKind::BarrierDivergence { waiting: waiting.tid }));
            }
            for t in threads.iter_mut() {
                t.state = State::Running;
            }
        }
    }

    /// Bytes of a writable space (global, shared, local).
    #[inline]
    fn bytes<'s>(
        &'s mut self,
        local: &'s mut [u8],
        local_valid: &[bool],
        space: AddrSpace,
        addr: u64,
        size: u64,
    ) -> Option<&'s mut [u8]> {
        match space {
            AddrSpace::Global => self.global.bytes_mut(addr, size),
            AddrSpace::Shared => region(&mut self.shared, &self.prog.shared_valid, SHARED_BASE, addr, size),
            AddrSpace::Local => region(local, local_valid, LOCAL_BASE, addr, size),
            AddrSpace::Const => None,
        }
    }

    #[inline]
    fn check_align(space: AddrSpace, access: Access, addr: u64, ty: Scalar) -> Result<u64, FaultKind> {
        let size = u64::from(ty.size());
        if addr & (size - 1) != 0 {
            return Err(FaultKind::Misaligned { space, access, addr, align: ty.size() });
        }
        Ok(size)
    }

    #[inline]
    fn load(
        &mut self,
        local: &mut [u8],
        local_valid: &[bool],
        space: AddrSpace,
        ty: Scalar,
        addr: u64,
    ) -> Result<u64, FaultKind> {
        let size = Self::check_align(space, Access::Read, addr, ty)?;
        let oob = || FaultKind::OutOfBounds { space, access: Access::Read, addr, size: ty.size() };
        let v = if space == AddrSpace::Const {
            // Module constants, else read-only global memory (a `ptr<const, T>`
            // argument pointing at a device allocation).
            let consts = self.env.consts;
            let in_consts = addr >= CONST_BASE && addr - CONST_BASE < consts.len() as u64;
            if in_consts {
                let off = (addr - CONST_BASE) as usize;
                let range = off..off.saturating_add(size as usize);
                match (consts.get(range.clone()), self.prog.consts_valid.get(range)) {
                    (Some(b), Some(valid)) if valid.iter().all(|&v| v) => decode(b),
                    _ => return Err(oob()),
                }
            } else {
                decode(self.global.bytes_mut(addr, size).ok_or_else(oob)?)
            }
        } else {
            let v = decode(self.bytes(local, local_valid, space, addr, size).ok_or_else(oob)?);
            self.race_check(space, Access::Read, addr, size)?;
            v
        };
        match ty {
            Scalar::Bool if v > 1 => Err(FaultKind::InvalidBool { space, addr, byte: v as u8 }),
            // Widened to the loaded i32, sign-extended (u8 and u16 are
            // already zero-extended).
            Scalar::I8 => Ok(u64::from(v as u8 as i8 as i32 as u32)),
            Scalar::I16 => Ok(u64::from(v as u16 as i16 as i32 as u32)),
            _ => Ok(v),
        }
    }

    #[inline]
    fn store(
        &mut self,
        local: &mut [u8],
        local_valid: &[bool],
        space: AddrSpace,
        ty: Scalar,
        addr: u64,
        v: u64,
    ) -> Result<(), FaultKind> {
        let size = Self::check_align(space, Access::Write, addr, ty)?;
        if space == AddrSpace::Const || (space == AddrSpace::Global && self.global.sealed(addr)) {
            return Err(FaultKind::ReadOnly { addr });
        }
        let b = self.bytes(local, local_valid, space, addr, size).ok_or(FaultKind::OutOfBounds {
            space,
            access: Access::Write,
            addr,
            size: ty.size(),
        })?;
        encode(b, v);
        self.race_check(space, Access::Write, addr, size)
    }

    /// Records a global or shared access with the race detector, if on.
    #[inline]
    fn race_check(&mut self, space: AddrSpace, access: Access, addr: u64, size: u64) -> Result<(), FaultKind> {
        match &mut self.races {
            Some(r) if matches!(space, AddrSpace::Global | AddrSpace::Shared) => {
                r.access(space, access, addr, size, self.thread)
            }
            _ => Ok(()),
        }
    }

    /// Applies `f` to the old value; stores its result; returns the old value.
    #[inline]
    fn rmw(
        &mut self,
        local: &mut [u8],
        local_valid: &[bool],
        space: AddrSpace,
        ty: Scalar,
        addr: u64,
        f: impl FnOnce(u64) -> u64,
    ) -> Result<u64, FaultKind> {
        let size = Self::check_align(space, Access::Atomic, addr, ty)?;
        if space == AddrSpace::Const || (space == AddrSpace::Global && self.global.sealed(addr)) {
            return Err(FaultKind::ReadOnly { addr });
        }
        let b = self.bytes(local, local_valid, space, addr, size).ok_or(FaultKind::OutOfBounds {
            space,
            access: Access::Atomic,
            addr,
            size: ty.size(),
        })?;
        let old = decode(b);
        encode(b, f(old));
        self.race_check(space, Access::Atomic, addr, size)?;
        Ok(old)
    }

    /// Runs `t` until it finishes, reaches a barrier or faults.
    fn run_thread(&mut self, t: &mut Thread) -> Result<Stop, FaultKind> {
        let prog = self.prog;
        let code = &prog.code[..];
        let mut pc = t.pc as usize;
        let mut base = t.base;
        let mut steps = self.steps_left;
        macro_rules! r {
            ($x:expr) => {
                t.regs[base + $x as usize]
            };
        }
        let result = loop {
            if steps == 0 {
                break Err(FaultKind::StepBudgetExceeded { budget: self.budget });
            }
            steps -= 1;
            let Some(inst) = code.get(pc) else {
                break Err(internal("jump out of the program"));
            };
            pc += 1;
            match *inst {
                Inst::Const { dst, bits } => r!(dst) = bits,
                Inst::Mov { dst, src } => r!(dst) = r!(src),
                Inst::Unary { op, ty, dst, a } => r!(dst) = ops::unary(op, ty, r!(a)),
                Inst::Binary { op, ty, dst, a, b } => r!(dst) = ops::binary(op, ty, r!(a), r!(b)),
                Inst::Compare { op, ty, dst, a, b } => r!(dst) = ops::compare(op, ty, r!(a), r!(b)),
                Inst::Select { dst, c, a, b } => r!(dst) = if r!(c) != 0 { r!(a) } else { r!(b) },
                Inst::Convert { from, to, dst, a } => r!(dst) = ops::convert(from, to, r!(a)),
                Inst::Math { f, ty, dst, args } => {
                    let vals = [r!(args[0]), r!(args[1]), r!(args[2])];
                    match ops::math(f, ty, &vals[..f.arity()]) {
                        Some(v) => r!(dst) = v,
                        None => break Err(internal("a math function the compiler let through")),
                    }
                }
                Inst::Geometry { dst, which } => {
                    let w = which as usize;
                    let v = if w < 3 { t.tid[w] } else { self.geometry.get(w - 3).copied().unwrap_or(0) };
                    r!(dst) = u64::from(v);
                }
                Inst::LocalAddr { dst, offset } => r!(dst) = LOCAL_BASE + (t.local_base as u64) + u64::from(offset),
                Inst::AddrCalc { dst, ref addr } => r!(dst) = ea(&t.regs, base, addr),
                Inst::AddImm { dst, src, imm } => r!(dst) = r!(src).wrapping_add(u64::from(imm)),
                Inst::Load { space, ty, dst, ref addr } => {
                    let a = ea(&t.regs, base, addr);
                    match self.load(&mut t.local, &t.local_valid, space, ty, a) {
                        Ok(v) => r!(dst) = v,
                        Err(e) => break Err(e),
                    }
                }
                Inst::Store { space, ty, src, ref addr } => {
                    let a = ea(&t.regs, base, addr);
                    if let Err(e) = self.store(&mut t.local, &t.local_valid, space, ty, a, r!(src)) {
                        break Err(e);
                    }
                }
                Inst::Atomic { op, space, ty, dst, ref addr, val } => {
                    let a = ea(&t.regs, base, addr);
                    let v = r!(val);
                    match self.rmw(&mut t.local, &t.local_valid, space, ty, a, |old| ops::atomic(op, ty, old, v)) {
                        Ok(old) => r!(dst) = old,
                        Err(e) => break Err(e),
                    }
                }
                Inst::Cas { space, ty, dst, ref addr, expected, new } => {
                    let a = ea(&t.regs, base, addr);
                    let (e, n) = (r!(expected), r!(new));
                    match self.rmw(&mut t.local, &t.local_valid, space, ty, a, |old| if old == e { n } else { old }) {
                        Ok(old) => r!(dst) = old,
                        Err(e) => break Err(e),
                    }
                }
                Inst::Jump { target } => pc = target as usize,
                Inst::JumpIfNot { cond, target } => {
                    if r!(cond) == 0 {
                        pc = target as usize;
                    }
                }
                Inst::Barrier => break Ok(Stop::Barrier),
                Inst::Exit => break Ok(Stop::Done),
                Inst::State { dst, offset } => {
                    let a = self.env.state.wrapping_add(u64::from(offset));
                    match self.load(&mut t.local, &t.local_valid, AddrSpace::Global, Scalar::U64, a) {
                        Ok(v) => r!(dst) = v,
                        Err(e) => break Err(e),
                    }
                }
                Inst::Patch { dst, cell } => match self.env.patch.get(cell as usize) {
                    Some(&w) => r!(dst) = w,
                    None => break Err(internal("patch cell index out of range")),
                },
                Inst::Call { func, args, nargs, dst } => {
                    if t.frames.len() >= MAX_CALL_DEPTH as usize {
                        break Err(FaultKind::CallDepthExceeded { limit: MAX_CALL_DEPTH });
                    }
                    let (Some(caller), Some(callee)) = (prog.funcs.get(t.func as usize), prog.funcs.get(func as usize))
                    else {
                        break Err(internal("call of a missing function"));
                    };
                    let Some(arg_regs) = prog.args.get(args as usize..(args as usize).saturating_add(nargs as usize))
                    else {
                        break Err(internal("call arguments out of range"));
                    };
                    let new_base = base + caller.nregs as usize;
                    let new_local = t.local.len();
                    if (new_local + callee.local_size as usize) as u64 > LOCAL_LIMIT {
                        break Err(FaultKind::LocalMemoryExceeded { limit: LOCAL_LIMIT });
                    }
                    t.regs.resize(new_base + callee.nregs as usize, 0);
                    for (i, &a) in arg_regs.iter().enumerate() {
                        t.regs[new_base + i] = t.regs[base + a as usize];
                    }
                    t.local.resize(new_local + callee.local_size as usize, 0);
                    t.local_valid.extend_from_slice(&callee.local_valid);
                    t.frames.push(Frame { ret_pc: pc as u32, func: t.func, base, local_base: t.local_base, dst });
                    t.func = func;
                    base = new_base;
                    t.local_base = new_local;
                    pc = callee.entry as usize;
                }
                Inst::Return { val } => {
                    let v = if val == NO_REG { 0 } else { r!(val) };
                    let Some(f) = t.frames.pop() else {
                        break Ok(Stop::Done);
                    };
                    t.regs.truncate(base);
                    t.local.truncate(t.local_base);
                    t.local_valid.truncate(t.local_base);
                    base = f.base;
                    t.local_base = f.local_base;
                    t.func = f.func;
                    pc = f.ret_pc as usize;
                    if f.dst != NO_REG {
                        r!(f.dst) = v;
                    }
                }
                Inst::MissingReturn => {
                    let func = prog.funcs.get(t.func as usize).map(|f| f.name.clone()).unwrap_or_default();
                    break Err(FaultKind::MissingReturn { func });
                }
            }
        };
        t.pc = pc as u32;
        t.base = base;
        self.steps_left = steps;
        result
    }
}
