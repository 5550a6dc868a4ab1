//! Lowering a kernel and the device functions it calls to one flat program.
//!
//! Every function becomes a run of [`Inst`]s in one code vector; structured
//! `if`/`loop`/`break`/`continue` become jumps. A function's frame has one
//! `u64` register per SSA value (register `i` is value `vi`, so parameters
//! are registers `0..params`), then one register per scalar `local` variable
//! whose address is never taken, then one scratch register. Other `local`
//! variables live in the frame's slice of the thread's local memory;
//! `shared` variables in the block's shared memory; module constants in the
//! const region. Types are resolved here, so an instruction carries the
//! scalar type, address space and element stride it needs.

use super::memory::{CONST_BASE, SHARED_BASE};
use crate::error::LaunchError;
use relok_ir::{
    AddrSpace, AtomicOp, BinaryOp, Block, Builtin, CmpOp, EntityRef, FuncId, FuncKind, Function, Module, Op, Scalar,
    Stage, StmtKind, Strategy, Type, UnaryOp, Value, Var, VarKind,
};
use std::collections::{HashMap, HashSet};

/// A register of the current frame.
pub(crate) type Reg = u32;
/// "No register": no index, no result, no return value.
pub(crate) const NO_REG: Reg = Reg::MAX;

/// Shared memory a kernel may declare, per block (the limit of every
/// device: `relok_compiler::memory_limits`).
pub(crate) const SHARED_LIMIT: u64 = relok_compiler::memory_limits::SHARED_LIMIT;
/// Local memory a thread may use, over all its live frames (one frame's
/// limit on every device: `relok_compiler::memory_limits`).
pub(crate) const LOCAL_LIMIT: u64 = relok_compiler::memory_limits::LOCAL_LIMIT;

/// An address operand: `regs[ptr] + index * stride`.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Addr {
    pub(crate) ptr: Reg,
    /// [`NO_REG`] when there is no index.
    pub(crate) index: Reg,
    /// Bytes per index step.
    pub(crate) stride: u32,
    /// The index is an `i32` (sign-extend its low half); other integer
    /// registers are already the right 64-bit value.
    pub(crate) sext32: bool,
}

/// One instruction. Registers are frame-relative.
#[derive(Clone, Debug)]
pub(crate) enum Inst {
    Const {
        dst: Reg,
        bits: u64,
    },
    Mov {
        dst: Reg,
        src: Reg,
    },
    Unary {
        op: UnaryOp,
        ty: Scalar,
        dst: Reg,
        a: Reg,
    },
    Binary {
        op: BinaryOp,
        ty: Scalar,
        dst: Reg,
        a: Reg,
        b: Reg,
    },
    /// `ty` is `None` for pointers.
    Compare {
        op: CmpOp,
        ty: Option<Scalar>,
        dst: Reg,
        a: Reg,
        b: Reg,
    },
    Select {
        dst: Reg,
        c: Reg,
        a: Reg,
        b: Reg,
    },
    Convert {
        from: Scalar,
        to: Scalar,
        dst: Reg,
        a: Reg,
    },
    /// 0..3 thread_id, 3..6 block_id, 6..9 block_dim, 9..12 grid_dim.
    Geometry {
        dst: Reg,
        which: u8,
    },
    /// The address of byte `offset` of the current frame's local memory.
    LocalAddr {
        dst: Reg,
        offset: u32,
    },
    /// `dst = addr` (offset, elem).
    AddrCalc {
        dst: Reg,
        addr: Addr,
    },
    /// `dst = src + imm` (field).
    AddImm {
        dst: Reg,
        src: Reg,
        imm: u32,
    },
    /// `ty` is the accessed scalar; pointers are accessed as `u64`.
    Load {
        space: AddrSpace,
        ty: Scalar,
        dst: Reg,
        addr: Addr,
    },
    Store {
        space: AddrSpace,
        ty: Scalar,
        src: Reg,
        addr: Addr,
    },
    Atomic {
        op: AtomicOp,
        space: AddrSpace,
        ty: Scalar,
        dst: Reg,
        addr: Addr,
        val: Reg,
    },
    Cas {
        space: AddrSpace,
        ty: Scalar,
        dst: Reg,
        addr: Addr,
        expected: Reg,
        new: Reg,
    },
    /// An exact math function ([`relok_ir::MathFn::is_exact`]) of
    /// `args[..arity]`.
    Math {
        f: relok_ir::MathFn,
        ty: Scalar,
        dst: Reg,
        args: [Reg; 3],
    },
    /// Arguments are `Program::args[args..args + nargs]`.
    Call {
        func: u32,
        args: u32,
        nargs: u32,
        dst: Reg,
    },
    Jump {
        target: u32,
    },
    JumpIfNot {
        cond: Reg,
        target: u32,
    },
    Barrier,
    /// `exit`: the thread is finished, whatever its call depth.
    Exit,
    /// `dst` = the kernel-state field at byte `offset` (a `u64` load from the
    /// launch's state block in global memory).
    State {
        dst: Reg,
        offset: u32,
    },
    /// `dst` = the word in patch cell `cell` ([`Program::patch_names`]).
    Patch {
        dst: Reg,
        cell: u32,
    },
    /// `val` is [`NO_REG`] for a plain `return`.
    Return {
        val: Reg,
    },
    /// The end of a function that must return a value.
    MissingReturn,
}

/// A compiled function.
#[derive(Clone, Debug)]
pub(crate) struct FuncCode {
    pub(crate) name: String,
    pub(crate) entry: u32,
    /// Registers per frame.
    pub(crate) nregs: u32,
    /// Bytes of local memory per frame (a multiple of 8).
    pub(crate) local_size: u32,
    /// Which of those bytes belong to a variable (the others are red
    /// zones).
    pub(crate) local_valid: Vec<bool>,
}

/// A kernel with everything it calls. The kernel is `funcs[0]`.
#[derive(Clone, Debug)]
pub(crate) struct Program {
    pub(crate) code: Vec<Inst>,
    pub(crate) funcs: Vec<FuncCode>,
    /// Call arguments (caller registers), referenced by [`Inst::Call`].
    pub(crate) args: Vec<Reg>,
    /// The module's constants, laid out from [`CONST_BASE`].
    pub(crate) consts: Vec<u8>,
    /// Which bytes of `consts` belong to a constant (the others are red
    /// zones).
    pub(crate) consts_valid: Vec<bool>,
    /// Bytes of shared memory per block.
    pub(crate) shared_size: u64,
    /// Which of those bytes belong to a variable (the others are red
    /// zones).
    pub(crate) shared_valid: Vec<bool>,
    /// The patch cells `Op::Patch` reads, by [`Inst::Patch`] index, in
    /// order of first use.
    pub(crate) patch_names: Vec<String>,
    /// Every module constant: name, byte offset in `consts`, size.
    pub(crate) const_layout: Vec<(String, u64, u64)>,
}

/// The scalar a memory access of a value of type `ty` moves.
fn mem_scalar(ty: &Type) -> Option<Scalar> {
    match ty {
        Type::Scalar(s) => Some(*s),
        Type::Ptr(..) => Some(Scalar::U64),
        _ => None,
    }
}

/// Unowned bytes before every variable and after the last.
const REDZONE: u64 = 16;

/// `size` flags, true inside the `(offset, size)` extents.
fn valid_mask(size: u64, extents: &[(u64, u64)]) -> Vec<bool> {
    let mut mask = vec![false; size as usize];
    for &(off, len) in extents {
        mask[off as usize..(off + len) as usize].fill(true);
    }
    mask
}

/// Where a variable lives.
#[derive(Copy, Clone, Debug)]
enum VarLoc {
    Reg(Reg),
    Local(u32),
    Shared(u64),
}

struct Compiler<'m> {
    module: &'m Module,
    kernel: String,
    prog: Program,
    /// FuncId index → compiled index.
    index_of: Vec<Option<u32>>,
    queue: Vec<FuncId>,
    const_offsets: Vec<u64>,
    /// Patch cell name → [`Inst::Patch`] index.
    patch_index: HashMap<String, u32>,
}

type Res<T> = Result<T, LaunchError>;

/// Compiles `kernel` of `module` and the device functions it reaches.
pub(crate) fn compile(module: &Module, kernel: FuncId) -> Res<Program> {
    let kname = module.funcs.get(kernel).map(|f| f.name.clone()).unwrap_or_default();
    let mut c = Compiler {
        module,
        kernel: kname,
        prog: Program {
            code: Vec::new(),
            funcs: Vec::new(),
            args: Vec::new(),
            consts: Vec::new(),
            shared_size: 0,
            shared_valid: Vec::new(),
            patch_names: Vec::new(),
            const_layout: Vec::new(),
            consts_valid: Vec::new(),
        },
        index_of: vec![None; module.funcs.len()],
        queue: Vec::new(),
        const_offsets: Vec::new(),
        patch_index: HashMap::new(),
    };
    c.layout_consts()?;
    c.func_index(kernel)?;
    while let Some(id) = c.queue.pop() {
        c.compile_func(id)?;
    }
    Ok(c.prog)
}

fn stage_name(s: Stage) -> String {
    match s {
        Stage::Source => "source".to_owned(),
        Stage::Lowered(t) => format!("lowered {t}"),
    }
}

fn to_u32(x: usize) -> Option<u32> {
    u32::try_from(x).ok()
}

impl Compiler<'_> {
    fn invalid(&self, reason: impl Into<String>) -> LaunchError {
        LaunchError::InvalidModule { kernel: self.kernel.clone(), reason: reason.into() }
    }

    fn layout_consts(&mut self) -> Res<()> {
        for c in self.module.consts.values() {
            let align = u64::from(c.ty.align().max(1));
            let size = c.ty.size().map_err(|e| self.invalid(format!("const @{}: {e}", c.name)))?;
            // A red zone before each constant (and after the last, below):
            // an overrun from one constant into the next faults.
            let off = (self.prog.consts.len() as u64 + REDZONE).next_multiple_of(align);
            let end = off + u64::from(size);
            if end > 1 << 28 {
                return Err(self.invalid("module constants exceed 256 MiB"));
            }
            let image =
                relok_compiler::lower::const_image(c).map_err(|r| self.invalid(format!("const @{}: {r}", c.name)))?;
            self.prog.consts.resize(off as usize, 0);
            self.prog.consts.extend_from_slice(&image);
            self.prog.consts_valid.resize(off as usize, false);
            self.prog.consts_valid.resize(end as usize, true);
            self.const_offsets.push(off);
            self.prog.const_layout.push((c.name.clone(), off, u64::from(size)));
        }
        let end = self.prog.consts.len() + REDZONE as usize;
        self.prog.consts.resize(end, 0);
        self.prog.consts_valid.resize(end, false);
        Ok(())
    }

    /// The index of patch cell `name`, added on first use.
    fn patch_cell(&mut self, name: &str) -> Res<u32> {
        if let Some(&i) = self.patch_index.get(name) {
            return Ok(i);
        }
        let i = to_u32(self.prog.patch_names.len()).ok_or_else(|| self.invalid("too many patch cells"))?;
        self.prog.patch_names.push(name.to_owned());
        self.patch_index.insert(name.to_owned(), i);
        Ok(i)
    }

    /// The compiled index of `id`, queueing it for compilation on first use.
    fn func_index(&mut self, id: FuncId) -> Res<u32> {
        let slot =
            self.index_of.get(id.index()).copied().ok_or_else(|| self.invalid(format!("{id} does not exist")))?;
        if let Some(i) = slot {
            return Ok(i);
        }
        let f = &self.module.funcs[id];
        let i = to_u32(self.prog.funcs.len()).ok_or_else(|| self.invalid("too many functions"))?;
        self.prog.funcs.push(FuncCode {
            name: f.name.clone(),
            entry: 0,
            nregs: 0,
            local_size: 0,
            local_valid: Vec::new(),
        });
        self.index_of[id.index()] = Some(i);
        self.queue.push(id);
        Ok(i)
    }

    fn compile_func(&mut self, id: FuncId) -> Res<()> {
        let module = self.module;
        let f = &module.funcs[id];
        let Some(index) = self.index_of[id.index()] else {
            return Err(self.invalid("function compiled before being indexed"));
        };
        let is_kernel = index == 0;
        if is_kernel != (f.kind == FuncKind::Kernel) {
            return Err(self.invalid(format!("@{}: kernels cannot be called", f.name)));
        }
        for (i, p) in f.params.iter().enumerate() {
            if p.index() != i {
                return Err(self.invalid(format!("@{}: parameter {i} is {p}, not v{i}", f.name)));
            }
        }
        // Where each variable lives.
        let mut addr_taken = HashSet::new();
        relok_ir::walk_stmts(&f.body, &mut |s| {
            if let StmtKind::Let { op: Op::VarAddr(v), .. } = &s.kind {
                addr_taken.insert(*v);
            }
        });
        let nvalues =
            to_u32(f.values.len()).filter(|&n| n < NO_REG / 2).ok_or_else(|| self.invalid("too many values"))?;
        let mut next_reg = nvalues;
        // Variables are laid out with a red zone before each and after the
        // last: bytes no variable owns, so an access that runs off one
        // variable faults instead of reading its neighbour (`*_need` is
        // what the variables themselves take, for the limits).
        let mut local_size: u64 = 0;
        let mut shared_size: u64 = 0;
        let (mut local_need, mut shared_need) = (0u64, 0u64);
        let (mut local_extents, mut shared_extents) = (Vec::new(), Vec::new());
        let mut vars = Vec::with_capacity(f.vars.len());
        for (v, d) in f.vars.iter() {
            let loc = match d.kind {
                VarKind::Local if d.ty.is_value_type() && !addr_taken.contains(&v) => {
                    next_reg += 1;
                    VarLoc::Reg(next_reg - 1)
                }
                VarKind::Local => {
                    let too_large = || LaunchError::LocalMemoryTooLarge {
                        func: f.name.clone(),
                        bytes: u64::MAX,
                        limit: LOCAL_LIMIT,
                    };
                    let size = d.ty.size().map_err(|_| too_large())?;
                    local_need = local_need.next_multiple_of(u64::from(d.ty.align().max(1))) + u64::from(size);
                    if local_need > LOCAL_LIMIT {
                        return Err(LaunchError::LocalMemoryTooLarge {
                            func: f.name.clone(),
                            bytes: local_need,
                            limit: LOCAL_LIMIT,
                        });
                    }
                    let off = (local_size + REDZONE).next_multiple_of(u64::from(d.ty.align().max(1)));
                    local_size = off + u64::from(size);
                    local_extents.push((off, u64::from(size)));
                    VarLoc::Local(off as u32)
                }
                VarKind::Shared if is_kernel => {
                    let too_large = || LaunchError::SharedMemoryTooLarge {
                        kernel: f.name.clone(),
                        bytes: u64::MAX,
                        limit: SHARED_LIMIT,
                    };
                    let size = d.ty.size().map_err(|_| too_large())?;
                    shared_need = shared_need.next_multiple_of(u64::from(d.ty.align().max(1))) + u64::from(size);
                    if shared_need > SHARED_LIMIT {
                        return Err(LaunchError::SharedMemoryTooLarge {
                            kernel: f.name.clone(),
                            bytes: shared_need,
                            limit: SHARED_LIMIT,
                        });
                    }
                    let off = (shared_size + REDZONE).next_multiple_of(u64::from(d.ty.align().max(1)));
                    shared_size = off + u64::from(size);
                    shared_extents.push((off, u64::from(size)));
                    VarLoc::Shared(off)
                }
                VarKind::Shared => {
                    return Err(self.invalid(format!("@{}: shared variable %{} outside a kernel", f.name, d.name)));
                }
            };
            vars.push(loc);
        }
        if is_kernel {
            let size = shared_size + if shared_extents.is_empty() { 0 } else { REDZONE };
            self.prog.shared_size = size;
            self.prog.shared_valid = valid_mask(size, &shared_extents);
        }
        let local_size = (local_size + if local_extents.is_empty() { 0 } else { REDZONE }).next_multiple_of(8);
        let scratch = next_reg;
        let entry = to_u32(self.prog.code.len()).ok_or_else(|| self.invalid("program too large"))?;
        let mut fc = FnCx { c: self, f, vars, scratch, loops: Vec::new() };
        fc.block(&f.body)?;
        let end = if f.ret.is_some() { Inst::MissingReturn } else { Inst::Return { val: NO_REG } };
        self.prog.code.push(end);
        let code = &mut self.prog.funcs[index as usize];
        code.entry = entry;
        code.nregs = scratch + 1;
        code.local_size = local_size as u32;
        code.local_valid = valid_mask(local_size, &local_extents);
        Ok(())
    }
}

struct FnCx<'c, 'm> {
    c: &'c mut Compiler<'m>,
    f: &'m Function,
    vars: Vec<VarLoc>,
    scratch: Reg,
    /// Open loops: head pc and the jumps to patch to the loop's end.
    loops: Vec<(u32, Vec<usize>)>,
}

impl FnCx<'_, '_> {
    fn invalid(&self, reason: impl std::fmt::Display) -> LaunchError {
        self.c.invalid(format!("@{}: {reason}", self.f.name))
    }
    fn emit(&mut self, i: Inst) {
        self.c.prog.code.push(i);
    }
    fn pc(&self) -> Res<u32> {
        to_u32(self.c.prog.code.len()).ok_or_else(|| self.invalid("program too large"))
    }
    fn reg(&self, v: Value) -> Res<Reg> {
        if v.index() < self.f.values.len() { Ok(v.as_u32()) } else { Err(self.invalid(format!("{v} does not exist"))) }
    }
    fn ty(&self, v: Value) -> Res<&Type> {
        self.f.values.get(v).map(|d| &d.ty).ok_or_else(|| self.invalid(format!("{v} does not exist")))
    }
    fn scalar(&self, v: Value) -> Res<Scalar> {
        self.ty(v)?.as_scalar().ok_or_else(|| self.invalid(format!("{v} is not a scalar")))
    }
    fn var(&self, v: Var) -> Res<VarLoc> {
        self.vars.get(v.index()).copied().ok_or_else(|| self.invalid(format!("{v} does not exist")))
    }
    /// The pointer's space and pointee.
    fn pointee(&self, p: Value) -> Res<(AddrSpace, &Type)> {
        self.ty(p)?.as_ptr().ok_or_else(|| self.invalid(format!("{p} is not a pointer")))
    }
    fn size_of(&self, t: &Type) -> Res<u32> {
        t.size().map_err(|e| self.invalid(e))
    }
    fn addr(&self, ptr: Value, index: Option<Value>, stride: u32) -> Res<Addr> {
        let (index, sext32) = match index {
            Some(i) => (self.reg(i)?, self.scalar(i)? == Scalar::I32),
            None => (NO_REG, false),
        };
        Ok(Addr { ptr: self.reg(ptr)?, index, stride, sext32 })
    }
    /// Address, space and accessed scalar of `load`/`store`/atomics.
    fn mem(&self, ptr: Value, index: Option<Value>) -> Res<(AddrSpace, Scalar, Addr)> {
        let (space, pointee) = self.pointee(ptr)?;
        let ty =
            mem_scalar(pointee).ok_or_else(|| self.invalid(format!("{ptr} does not point at a scalar or pointer")))?;
        let stride = self.size_of(pointee)?;
        Ok((space, ty, self.addr(ptr, index, stride)?))
    }
    fn call(&mut self, callee: FuncId, args: &[Value], dst: Reg) -> Res<()> {
        let g = self.c.module.funcs.get(callee).ok_or_else(|| self.invalid(format!("{callee} does not exist")))?;
        match g.kind {
            FuncKind::Device => {}
            FuncKind::Kernel => return Err(self.invalid(format!("calls kernel @{}", g.name))),
            FuncKind::Import => {
                return Err(
                    self.invalid(format!("calls @{}, an import without a body: link its library first", g.name))
                );
            }
        }
        if g.params.len() != args.len() {
            return Err(self.invalid(format!(
                "call of @{} with {} arguments, it takes {}",
                g.name,
                args.len(),
                g.params.len()
            )));
        }
        if (dst != NO_REG) && g.ret.is_none() {
            return Err(self.invalid(format!("uses the result of @{}, which returns none", g.name)));
        }
        let func = self.c.func_index(callee)?;
        let start = to_u32(self.c.prog.args.len()).ok_or_else(|| self.invalid("too many call arguments"))?;
        for &a in args {
            let r = self.reg(a)?;
            self.c.prog.args.push(r);
        }
        self.emit(Inst::Call { func, args: start, nargs: args.len() as u32, dst });
        Ok(())
    }

    fn block(&mut self, b: &Block) -> Res<()> {
        for s in b {
            match &s.kind {
                StmtKind::Let { result, op } => self.op(*result, op)?,
                StmtKind::Exit => self.emit(Inst::Exit),
                StmtKind::Store { ptr, index, value } => {
                    let (space, ty, addr) = self.mem(*ptr, *index)?;
                    let src = self.reg(*value)?;
                    self.emit(Inst::Store { space, ty, src, addr });
                }
                StmtKind::Set { var, value } => {
                    let src = self.reg(*value)?;
                    match self.var(*var)? {
                        VarLoc::Reg(dst) => self.emit(Inst::Mov { dst, src }),
                        VarLoc::Local(offset) => {
                            let ty = self.var_scalar(*var)?;
                            self.emit(Inst::LocalAddr { dst: self.scratch, offset });
                            let addr = Addr { ptr: self.scratch, index: NO_REG, stride: 0, sext32: false };
                            self.emit(Inst::Store { space: AddrSpace::Local, ty, src, addr });
                        }
                        VarLoc::Shared(_) => return Err(self.invalid(format!("`set` of shared variable {var}"))),
                    }
                }
                StmtKind::Call(f, args) => self.call(*f, args, NO_REG)?,
                StmtKind::Barrier => self.emit(Inst::Barrier),
                StmtKind::If { cond, then_body, else_body } => {
                    let cond = self.reg(*cond)?;
                    let jump_else = self.c.prog.code.len();
                    self.emit(Inst::JumpIfNot { cond, target: 0 });
                    self.block(then_body)?;
                    if else_body.is_empty() {
                        let end = self.pc()?;
                        self.c.prog.code[jump_else] = Inst::JumpIfNot { cond, target: end };
                    } else {
                        let jump_end = self.c.prog.code.len();
                        self.emit(Inst::Jump { target: 0 });
                        let else_pc = self.pc()?;
                        self.c.prog.code[jump_else] = Inst::JumpIfNot { cond, target: else_pc };
                        self.block(else_body)?;
                        let end = self.pc()?;
                        self.c.prog.code[jump_end] = Inst::Jump { target: end };
                    }
                }
                StmtKind::Loop(body) => {
                    let head = self.pc()?;
                    self.loops.push((head, Vec::new()));
                    self.block(body)?;
                    self.emit(Inst::Jump { target: head });
                    let end = self.pc()?;
                    let (_, breaks) = self.loops.pop().unwrap_or_default();
                    for at in breaks {
                        self.c.prog.code[at] = Inst::Jump { target: end };
                    }
                }
                StmtKind::Break => {
                    let at = self.c.prog.code.len();
                    let Some((_, breaks)) = self.loops.last_mut() else {
                        return Err(self.invalid("`break` outside a loop"));
                    };
                    breaks.push(at);
                    self.emit(Inst::Jump { target: 0 });
                }
                StmtKind::Continue => {
                    let Some(&(head, _)) = self.loops.last() else {
                        return Err(self.invalid("`continue` outside a loop"));
                    };
                    self.emit(Inst::Jump { target: head });
                }
                StmtKind::Return(v) => {
                    let val = match v {
                        Some(v) => self.reg(*v)?,
                        None if self.f.ret.is_some() => {
                            self.emit(Inst::MissingReturn);
                            continue;
                        }
                        None => NO_REG,
                    };
                    self.emit(Inst::Return { val });
                }
            }
        }
        Ok(())
    }

    fn var_scalar(&self, var: Var) -> Res<Scalar> {
        let d = self.f.vars.get(var).ok_or_else(|| self.invalid(format!("{var} does not exist")))?;
        mem_scalar(&d.ty).ok_or_else(|| self.invalid(format!("{var} is not a scalar variable")))
    }

    fn op(&mut self, result: Value, op: &Op) -> Res<()> {
        let dst = self.reg(result)?;
        let inst = match op {
            Op::Const(bits) => Inst::Const { dst, bits: *bits },
            Op::Ref(_) => return Err(self.invalid("`ref` reaches the device: lower the module first")),
            // On the cpu device the word of a value or a runtime global IS its
            // device address.
            Op::WordPtr(a) => Inst::Mov { dst, src: self.reg(*a)? },
            Op::State(field) => Inst::State { dst, offset: super::state::field_offset(*field) },
            Op::BakedWord(bits) => {
                if self.c.module.stage != Stage::Lowered(Strategy::Bake) {
                    return Err(
                        self.invalid(format!("`word` in a module at stage {}", stage_name(self.c.module.stage)))
                    );
                }
                Inst::Const { dst, bits: *bits }
            }
            Op::Patch(name) => {
                if self.c.module.stage != Stage::Lowered(Strategy::Patch) {
                    return Err(
                        self.invalid(format!("`patch` in a module at stage {}", stage_name(self.c.module.stage)))
                    );
                }
                Inst::Patch { dst, cell: self.c.patch_cell(name)? }
            }
            Op::Unary(op, a) => Inst::Unary { op: *op, ty: self.scalar(*a)?, dst, a: self.reg(*a)? },
            Op::Binary(op, a, b) => {
                Inst::Binary { op: *op, ty: self.scalar(*a)?, dst, a: self.reg(*a)?, b: self.reg(*b)? }
            }
            Op::Compare(op, a, b) => {
                let ty = self.ty(*a)?.as_scalar();
                Inst::Compare { op: *op, ty, dst, a: self.reg(*a)?, b: self.reg(*b)? }
            }
            Op::Select(c, a, b) => Inst::Select { dst, c: self.reg(*c)?, a: self.reg(*a)?, b: self.reg(*b)? },
            Op::Convert(a) => Inst::Convert { from: self.scalar(*a)?, to: self.scalar(result)?, dst, a: self.reg(*a)? },
            Op::Bitcast(a) => Inst::Mov { dst, src: self.reg(*a)? },
            Op::Load { ptr, index } => {
                let (space, ty, addr) = self.mem(*ptr, *index)?;
                Inst::Load { space, ty, dst, addr }
            }
            Op::Offset { ptr, index } => {
                let (_, pointee) = self.pointee(*ptr)?;
                let stride = self.size_of(pointee)?;
                Inst::AddrCalc { dst, addr: self.addr(*ptr, Some(*index), stride)? }
            }
            Op::Elem { ptr, index } => {
                let Type::Array(e, _) = self.pointee(*ptr)?.1 else {
                    return Err(self.invalid(format!("`elem` of {ptr}, not a pointer to an array")));
                };
                let stride = self.size_of(e)?;
                Inst::AddrCalc { dst, addr: self.addr(*ptr, Some(*index), stride)? }
            }
            Op::Field { ptr, field } => {
                let (_, pointee) = self.pointee(*ptr)?;
                let imm = match pointee.field_offset(*field as usize) {
                    Some(Ok(o)) => o,
                    _ => return Err(self.invalid(format!("bad field {field} of {pointee}"))),
                };
                Inst::AddImm { dst, src: self.reg(*ptr)?, imm }
            }
            Op::VarAddr(var) => match self.var(*var)? {
                VarLoc::Local(offset) => Inst::LocalAddr { dst, offset },
                VarLoc::Shared(off) => Inst::Const { dst, bits: SHARED_BASE + off },
                VarLoc::Reg(_) => return Err(self.invalid(format!("address of register variable {var}"))),
            },
            Op::ConstAddr(c) => {
                let off = self
                    .c
                    .const_offsets
                    .get(c.index())
                    .copied()
                    .ok_or_else(|| self.invalid(format!("{c} does not exist")))?;
                Inst::Const { dst, bits: CONST_BASE + off }
            }
            Op::Get(var) => match self.var(*var)? {
                VarLoc::Reg(src) => Inst::Mov { dst, src },
                VarLoc::Local(offset) => {
                    let ty = self.var_scalar(*var)?;
                    self.emit(Inst::LocalAddr { dst: self.scratch, offset });
                    let addr = Addr { ptr: self.scratch, index: NO_REG, stride: 0, sext32: false };
                    Inst::Load { space: AddrSpace::Local, ty, dst, addr }
                }
                VarLoc::Shared(_) => return Err(self.invalid(format!("`get` of shared variable {var}"))),
            },
            Op::Builtin(b) => {
                let family = match b {
                    Builtin::ThreadId(_) => 0,
                    Builtin::BlockId(_) => 3,
                    Builtin::BlockDim(_) => 6,
                    Builtin::GridDim(_) => 9,
                };
                Inst::Geometry { dst, which: family + b.axis().index() as u8 }
            }
            Op::Call(f, args) => return self.call(*f, args, dst),
            Op::Math(m, args) => {
                if !m.is_exact() || args.len() != m.arity() {
                    return Err(self.invalid(format!("{result}: `{m}` is computed by the math library: link it first")));
                }
                let mut regs = [0; 3];
                for (r, &a) in regs.iter_mut().zip(args) {
                    *r = self.reg(a)?;
                }
                Inst::Math { f: *m, ty: self.scalar(result)?, dst, args: regs }
            }
            Op::Atomic { op, ptr, index, value } => {
                let (space, ty, addr) = self.mem(*ptr, *index)?;
                Inst::Atomic { op: *op, space, ty, dst, addr, val: self.reg(*value)? }
            }
            Op::AtomicCas { ptr, index, expected, new } => {
                let (space, ty, addr) = self.mem(*ptr, *index)?;
                Inst::Cas { space, ty, dst, addr, expected: self.reg(*expected)?, new: self.reg(*new)? }
            }
        };
        self.emit(inst);
        Ok(())
    }
}
