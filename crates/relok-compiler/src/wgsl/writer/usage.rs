//! What the code does with each memory, decided before any of it is
//! written (docs/wgpu.md, "Memory accesses and barriers"):
//!
//! - **Atomic words.** WGSL accesses an `atomic<u32>` only through atomic
//!   built-ins, and an array's element type is fixed, so an array one
//!   atomic touches is atomic throughout. A buffer parameter, the heap or a
//!   `shared` variable is declared with `atomic<u32>` words only when the IR
//!   makes an atomic (`atomic.*`, `atomic.cas`) or a sub-word (`bool`,
//!   `u8`, `i8`, `u16`, `i16`) store to it: such a store changes one byte
//!   or halfword of a word whose other
//!   bytes other threads may store meanwhile (not a race in the IR), so it
//!   is an `atomicAnd` and an `atomicOr`. Everything else is plain `u32`
//!   words, read and written with plain loads and stores.
//! - **Barriers.** The IR's `barrier` makes the writes to shared and global
//!   memory before it visible to the block's threads after it. In WGSL
//!   `workgroupBarrier()` orders workgroup memory and `storageBarrier()`
//!   storage buffers (each is also the control barrier). A barrier gets
//!   `storageBarrier()` only where a buffer or heap access before it (since
//!   the last barrier that ordered storage) and one after it conflict (one
//!   of them writes), and `workgroupBarrier()` where shared accesses do, or
//!   where it needs neither (it still waits for the block). A parameter
//!   may alias another, so all buffers are one memory here.
//!
//! The exception record is left out of the barrier rule: only the thread
//! that won its flag's compare-and-swap writes its fields, and only the
//! host reads them, after the launch.
//!
//! A pointer's base is found as the writer finds it (a pointer without a
//! static base is refused there); an atomic the analysis missed would meet
//! a plain array, which the writer refuses rather than write invalid WGSL.

use super::Base;
use relok_ir::{Block, FuncKind, Function, Module, Op, Stmt, StmtKind, Type, Value, Var, VarKind};
use std::collections::{HashMap, HashSet};

/// The buffer parameters (one memory: they may alias).
const BUFFERS: u8 = 1;
/// The device's heap.
const HEAP: u8 = 2;
/// `shared` variables.
const SHARED: u8 = 4;
/// What `storageBarrier()` orders.
const STORAGE: u8 = BUFFERS | HEAP;
/// Every memory a barrier may order.
const ALL: u8 = STORAGE | SHARED;

/// Memories read and written (a bit per memory).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Accesses {
    reads: u8,
    writes: u8,
}

impl Accesses {
    const ALL: Accesses = Accesses { reads: ALL, writes: ALL };

    fn union(self, o: Accesses) -> Accesses {
        Accesses { reads: self.reads | o.reads, writes: self.writes | o.writes }
    }

    /// The memories where an access of `self` and a later one of `after`
    /// conflict (at least one writes).
    fn conflicts(self, after: Accesses) -> u8 {
        (self.writes & (after.reads | after.writes)) | (self.reads & after.writes)
    }

    /// Without the memories `m` (a barrier ordered them).
    fn without(self, m: u8) -> Accesses {
        Accesses { reads: self.reads & !m, writes: self.writes & !m }
    }
}

/// The WGSL barriers one IR `barrier` becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Fence {
    /// `storageBarrier()`.
    pub(super) storage: bool,
    /// `workgroupBarrier()`.
    pub(super) workgroup: bool,
}

impl Fence {
    /// Both, for a barrier the analysis did not see.
    const BOTH: Fence = Fence { storage: true, workgroup: true };
}

/// What a module's code does with its memories.
#[derive(Debug, Default)]
pub(super) struct Usage<'m> {
    /// Buffer parameters (by position among the pointer parameters) with
    /// atomic words.
    params: HashSet<usize>,
    /// Whether the heap has atomic words.
    heap: bool,
    /// `shared` variables (of a function, by name) with atomic words.
    shared: HashSet<(&'m str, Var)>,
    /// What each `barrier` statement becomes.
    fences: HashMap<*const Stmt, Fence>,
}

impl<'m> Usage<'m> {
    /// The usage of every function of `module`.
    pub(super) fn of(module: &'m Module) -> Usage<'m> {
        let mut u = Usage::default();
        let bases: HashMap<&str, HashMap<Value, Base>> =
            module.funcs.values().map(|f| (f.name.as_str(), bases(f))).collect();
        let mut deep = HashMap::new();
        for f in module.funcs.values() {
            let b = &bases[f.name.as_str()];
            relok_ir::walk_stmts(&f.body, &mut |s| u.note_atomic(f, b, s));
            let mut cx = Flow { module, bases: &bases, deep: &mut deep, fences: &mut u.fences, after: HashMap::new() };
            // A device function's barrier may follow or precede anything.
            let (before, after) = if f.kind == FuncKind::Kernel {
                (Accesses::default(), Accesses::default())
            } else {
                (Accesses::ALL, Accesses::ALL)
            };
            cx.backward(f, &f.body, after);
            cx.forward(f, &f.body, before, &mut Vec::new());
        }
        u
    }

    /// Whether buffer parameter `k` has atomic words.
    pub(super) fn param_atomic(&self, k: usize) -> bool {
        self.params.contains(&k)
    }

    /// Whether the heap has atomic words.
    pub(super) fn heap_atomic(&self) -> bool {
        self.heap
    }

    /// Whether `shared` variable `v` of function `f` has atomic words.
    pub(super) fn shared_atomic(&self, f: &str, v: Var) -> bool {
        self.shared.iter().any(|&(g, w)| g == f && w == v)
    }

    /// What `barrier` statement `s` becomes.
    pub(super) fn fence(&self, s: &Stmt) -> Fence {
        self.fences.get(&std::ptr::from_ref(s)).copied().unwrap_or(Fence::BOTH)
    }

    /// Records the memory an atomic or a sub-word store in `s` touches.
    fn note_atomic(&mut self, f: &'m Function, bases: &HashMap<Value, Base>, s: &Stmt) {
        let ptr = match &s.kind {
            StmtKind::Let { op: Op::Atomic { ptr, .. } | Op::AtomicCas { ptr, .. }, .. } => *ptr,
            StmtKind::Store { ptr, .. } if matches!(&f.values[*ptr].ty, Type::Ptr(_, t) if t.size().is_ok_and(|n| n < 4)) => {
                *ptr
            }
            _ => return,
        };
        match bases.get(&ptr) {
            Some(Base::Param(k)) => {
                self.params.insert(*k);
            }
            Some(Base::Heap) => self.heap = true,
            Some(Base::Shared(v)) => {
                self.shared.insert((f.name.as_str(), *v));
            }
            _ => {}
        }
    }
}

/// The base of every pointer value of `f` (as the writer finds them).
fn bases(f: &Function) -> HashMap<Value, Base> {
    let mut bases = HashMap::new();
    if f.kind == FuncKind::Kernel {
        let buffers = f.params.iter().filter(|&&p| matches!(f.values[p].ty, Type::Ptr(..)));
        bases.extend(buffers.enumerate().map(|(k, &p)| (p, Base::Param(k))));
    }
    relok_ir::walk_stmts(&f.body, &mut |s| {
        let StmtKind::Let { result, op } = &s.kind else { return };
        if !matches!(f.values[*result].ty, Type::Ptr(..)) {
            return;
        }
        let base = match op {
            Op::Offset { ptr, .. } | Op::Elem { ptr, .. } | Op::Field { ptr, .. } => bases.get(ptr).copied(),
            Op::VarAddr(v) => Some(match f.vars[*v].kind {
                VarKind::Shared => Base::Shared(*v),
                VarKind::Local => Base::Local(*v),
            }),
            Op::ConstAddr(c) => Some(Base::Const(*c)),
            Op::WordPtr(_) => Some(Base::Heap),
            Op::State(relok_ir::StateField::RelocTable) => Some(Base::Table),
            Op::State(relok_ir::StateField::Exception) => Some(Base::Exception),
            Op::Select(_, a, b) => bases.get(a).filter(|&x| bases.get(b) == Some(x)).copied(),
            _ => None,
        };
        if let Some(base) = base {
            bases.insert(*result, base);
        }
    });
    bases
}

/// The memory a base names for the barrier rule (none: private, read-only
/// or the exception record).
fn memory(b: Option<&Base>) -> u8 {
    match b {
        Some(Base::Param(_)) => BUFFERS,
        Some(Base::Heap) => HEAP,
        Some(Base::Shared(_)) => SHARED,
        _ => 0,
    }
}

/// Where control goes out of a loop body.
#[derive(Default)]
struct Exits {
    breaks: Accesses,
    continues: Accesses,
}

/// The barrier rule's data flow over one function.
struct Flow<'a, 'm> {
    module: &'m Module,
    bases: &'a HashMap<&'m str, HashMap<Value, Base>>,
    /// Each function's accesses, its callees' included.
    deep: &'a mut HashMap<&'m str, Accesses>,
    fences: &'a mut HashMap<*const Stmt, Fence>,
    /// What may be accessed after each barrier.
    after: HashMap<*const Stmt, Accesses>,
}

impl<'m> Flow<'_, 'm> {
    /// The accesses of statement `s` of `f` itself (a call: the callee's).
    fn shallow(&mut self, f: &'m Function, s: &'m Stmt) -> Accesses {
        let bases = &self.bases[f.name.as_str()];
        match &s.kind {
            StmtKind::Let { op, .. } => match op {
                Op::Load { ptr, .. } => Accesses { reads: memory(bases.get(ptr)), writes: 0 },
                Op::Atomic { ptr, .. } | Op::AtomicCas { ptr, .. } => {
                    let m = memory(bases.get(ptr));
                    Accesses { reads: m, writes: m }
                }
                Op::Call(g, _) => self.function(&self.module.funcs[*g]),
                _ => Accesses::default(),
            },
            StmtKind::Store { ptr, .. } => Accesses { reads: 0, writes: memory(bases.get(ptr)) },
            StmtKind::Call(g, _) => self.function(&self.module.funcs[*g]),
            _ => Accesses::default(),
        }
    }

    /// Everything `f` accesses, its callees included.
    fn function(&mut self, f: &'m Function) -> Accesses {
        if let Some(&a) = self.deep.get(f.name.as_str()) {
            return a;
        }
        let a = self.block(f, &f.body);
        self.deep.insert(f.name.as_str(), a);
        a
    }

    /// Everything block `b` of `f` accesses, nested blocks included.
    fn block(&mut self, f: &'m Function, b: &'m Block) -> Accesses {
        let mut a = Accesses::default();
        for s in b {
            a = a.union(match &s.kind {
                StmtKind::If { then_body, else_body, .. } => self.block(f, then_body).union(self.block(f, else_body)),
                StmtKind::Loop(body) => self.block(f, body),
                _ => self.shallow(f, s),
            });
        }
        a
    }

    /// Backward: records what may be accessed after each barrier of `b`,
    /// given `after`, what may follow `b`; returns what may follow its
    /// start.
    fn backward(&mut self, f: &'m Function, b: &'m Block, mut after: Accesses) -> Accesses {
        for s in b.iter().rev() {
            after = match &s.kind {
                StmtKind::Barrier => {
                    self.after.insert(std::ptr::from_ref(s), after);
                    after
                }
                StmtKind::If { then_body, else_body, .. } => {
                    self.backward(f, then_body, after).union(self.backward(f, else_body, after))
                }
                // After a statement of the body: the rest of it, later
                // iterations, and what follows the loop.
                StmtKind::Loop(body) => {
                    let around = after.union(self.block(f, body));
                    self.backward(f, body, around);
                    around
                }
                _ => after.union(self.shallow(f, s)),
            };
        }
        after
    }

    /// Forward: decides each barrier of `b` from `before`, what may have
    /// been accessed since the last barrier that ordered it; returns that at
    /// the end of `b` (nothing where control cannot get there).
    fn forward(&mut self, f: &'m Function, b: &'m Block, mut before: Accesses, loops: &mut Vec<Exits>) -> Accesses {
        for s in b {
            before = match &s.kind {
                StmtKind::Barrier => {
                    let after = self.after.get(&std::ptr::from_ref(s)).copied().unwrap_or(Accesses::ALL);
                    let conflicts = before.conflicts(after);
                    let storage = conflicts & STORAGE != 0;
                    let fence = Fence { storage, workgroup: conflicts & SHARED != 0 || !storage };
                    self.fences.insert(std::ptr::from_ref(s), fence);
                    let ordered = if fence.storage { STORAGE } else { 0 } | if fence.workgroup { SHARED } else { 0 };
                    before.without(ordered)
                }
                StmtKind::If { then_body, else_body, .. } => {
                    self.forward(f, then_body, before, loops).union(self.forward(f, else_body, before, loops))
                }
                StmtKind::Loop(body) => {
                    // To a fixed point: the head is reached from before the
                    // loop, the end of the body and every `continue`.
                    let mut head = before;
                    loop {
                        loops.push(Exits::default());
                        let end = self.forward(f, body, head, loops);
                        let exits = loops.pop().unwrap_or_default();
                        let next = head.union(end).union(exits.continues);
                        if next == head {
                            break exits.breaks;
                        }
                        head = next;
                    }
                }
                StmtKind::Break | StmtKind::Continue => {
                    if let Some(e) = loops.last_mut() {
                        if matches!(s.kind, StmtKind::Break) {
                            e.breaks = e.breaks.union(before);
                        } else {
                            e.continues = e.continues.union(before);
                        }
                    }
                    Accesses::default()
                }
                StmtKind::Return(_) | StmtKind::Exit => Accesses::default(),
                _ => before.union(self.shallow(f, s)),
            };
        }
        before
    }
}
