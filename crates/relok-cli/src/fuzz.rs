//! `relok fuzz`: differential testing of the devices against the cpu
//! device (the oracle) on random well-typed kernels.
//!
//! Shape: [`generate`] writes one kernel as IR text from a seed and a step
//! count — integer arithmetic on `i32`/`u32`/`i64`/`u64` (every binary
//! operation, division and shifts included, whose edge cases the IR
//! defines), compares and `select`, conversions between every integer
//! type and to and from `f32`/`f64`, `f64` arithmetic (emulated bit for
//! bit in WGSL), `f32` add/sub/mul of small integers (exact on every
//! device), counted loops over a `local`, a host value (a constant table
//! read through its word), calls of a device function, `local` arrays
//! of the storage types (`u8 i8 u16 i16`), a `match` as the Rust front
//! end writes it (an `if` chain over literals and ranges setting a
//! `local`), the strides of a tree (a halving loop, and a doubling loop
//! that moves to its bound instead of past it, as `halving` and
//! `doubling` in Rust kernels), records of a struct in a `local` array
//! (each field through `offset` and `field`, as Rust kernels address a
//! slice of structs), a `shared` tile (of `u32`s
//! and of bytes, neighbours written by different threads) read across a
//! barrier, and a shared `atomic.add` — folded into one `u32` per
//! thread.
//! [`run_case`] runs it on every device and compares the output buffer
//! with the cpu device's; a mismatch is minimised (`minimise`: the
//! fewest steps that still differ; the RNG is consumed in order, so fewer
//! steps give a prefix of the same kernel) and written as a file test
//! whose expectation is the cpu device's output ([`file_test`]).

use crate::args::{ArgValue, SplitMix64};
use crate::launch::{Target, run_kernel};
use relok_ir::{Scalar, Strategy};
use relok_runtime::{Device, KernelCache, LaunchConfig, Session};
use std::fmt::Write as _;

/// Threads per block of every case (the shared tile's length).
pub const BLOCK: u32 = 64;
/// Blocks of every case.
pub const GRID: u32 = 2;

/// The generator's only source of randomness: `relok run`'s SplitMix64.
struct Rng(SplitMix64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(SplitMix64(seed))
    }
    fn next(&mut self) -> u64 {
        self.0.next_u64()
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())]
    }
}

const INTS: [Scalar; 4] = [Scalar::I32, Scalar::U32, Scalar::I64, Scalar::U64];
const INT_OPS: [&str; 12] = ["add", "sub", "mul", "div", "rem", "min", "max", "and", "or", "xor", "shl", "shr"];
const CMPS: [&str; 6] = ["eq", "ne", "lt", "le", "gt", "ge"];
const F64_OPS: [&str; 6] = ["add", "sub", "mul", "div", "min", "max"];

/// The kernel being written: its text and its values by type.
struct Gen {
    rng: Rng,
    body: String,
    next: u32,
    pool: Vec<(Scalar, u32)>,
    locals: String,
    shared: String,
    /// Values whose type is f32 and that may take part in one more f32
    /// operation (small integers converted: their sums and products are
    /// exact everywhere).
    small_f32: Vec<u32>,
}

impl Gen {
    fn value(&mut self, ty: Scalar, rhs: String) -> u32 {
        let v = self.next;
        self.next += 1;
        let _ = writeln!(self.body, "    v{v}: {ty} = {rhs}");
        self.pool.push((ty, v));
        v
    }

    /// A value of `ty` from the pool, converted from another one if none.
    fn of(&mut self, ty: Scalar) -> u32 {
        let have: Vec<u32> = self.pool.iter().filter(|(t, _)| *t == ty).map(|&(_, v)| v).collect();
        if !have.is_empty() && self.rng.below(4) != 0 {
            return self.rng.pick(&have);
        }
        let ints: Vec<u32> = self.pool.iter().filter(|(t, _)| INTS.contains(t)).map(|&(_, v)| v).collect();
        let from = self.rng.pick(&ints);
        self.value(ty, format!("convert v{from}"))
    }

    fn constant(&mut self, ty: Scalar) -> u32 {
        let r = self.rng.next();
        let lit = match ty {
            Scalar::I32 => (self.rng.pick(&[0, 1, -1, i32::MIN, i32::MAX, 3, 31, 32])
                ^ (r as i32 & self.rng.pick(&[0, -1])))
            .to_string(),
            Scalar::U32 => (self.rng.pick(&[0, 1, u32::MAX, 0x8000_0000, 7, 31, 32, 33])
                ^ (r as u32 & self.rng.pick(&[0, u32::MAX])))
            .to_string(),
            Scalar::I64 => (self.rng.pick(&[0, 1, -1, i64::MIN, i64::MAX, 63, 64])
                ^ (r as i64 & self.rng.pick(&[0, -1])))
            .to_string(),
            _ => (self.rng.pick(&[0, 1, u64::MAX, 1 << 63, 63, 64, 1 << 32]) ^ (r & self.rng.pick(&[0, u64::MAX])))
                .to_string(),
        };
        self.value(ty, format!("const {lit}"))
    }

    fn step(&mut self) {
        match self.rng.below(16) {
            0..=3 => {
                let ty = self.rng.pick(&INTS);
                let a = self.of(ty);
                let b = if self.rng.below(3) == 0 { self.constant(ty) } else { self.of(ty) };
                let op = self.rng.pick(&INT_OPS);
                self.value(ty, format!("{op} v{a}, v{b}"));
            }
            4 => {
                let ty = self.rng.pick(&INTS);
                let (a, b) = (self.of(ty), self.of(ty));
                let op = self.rng.pick(&CMPS);
                let c = self.value(Scalar::Bool, format!("{op} v{a}, v{b}"));
                let t = self.rng.pick(&INTS);
                let (x, y) = (self.of(t), self.of(t));
                self.value(t, format!("select v{c}, v{x}, v{y}"));
            }
            5 => {
                let ty = self.rng.pick(&INTS);
                let a = self.of(ty);
                let op = self.rng.pick(&["neg", "abs", "not"]);
                self.value(ty, format!("{op} v{a}"));
            }
            6 => {
                // Conversions between integers, and f64 from and back.
                let (from, to) = (self.rng.pick(&INTS), self.rng.pick(&INTS));
                let a = self.of(from);
                if self.rng.below(2) == 0 {
                    self.value(to, format!("convert v{a}"));
                } else {
                    let f = self.value(Scalar::F64, format!("convert v{a}"));
                    self.value(to, format!("convert v{f}"));
                }
            }
            7 => {
                let (a, b) = (self.of(Scalar::F64), self.of(Scalar::F64));
                let op = self.rng.pick(&F64_OPS);
                let r = if matches!(op, "min" | "max") {
                    // The sign of min(-0.0, +0.0) is unspecified (IEEE
                    // minNum; the H200 gave either, by instruction
                    // selection): adding +0.0 makes every zero +0.0.
                    let r = self.unhashed(&format!("f64 = {op}"), &format!("v{a}, v{b}"));
                    let zero = self.value(Scalar::F64, "const 0.0".into());
                    self.value(Scalar::F64, format!("add v{r}, v{zero}"))
                } else {
                    self.value(Scalar::F64, format!("{op} v{a}, v{b}"))
                };
                if self.rng.below(4) == 0 {
                    self.value(Scalar::F64, format!("sqrt v{r}"));
                }
            }
            8 => {
                // f32 of 16-bit integers: one add, sub or mul is exact.
                let x = self.of(Scalar::U32);
                let m = self.value(Scalar::U32, "const 65535".to_owned());
                let small = self.value(Scalar::U32, format!("and v{x}, v{m}"));
                let f = self.value(Scalar::F32, format!("convert v{small}"));
                match self.small_f32.pop() {
                    Some(g) => {
                        let op = self.rng.pick(&["add", "sub", "mul"]);
                        self.value(Scalar::F32, format!("{op} v{f}, v{g}"));
                    }
                    None => self.small_f32.push(f),
                }
            }
            9 => self.counted_loop(),
            12 => self.small_ints(),
            13 => self.match_chain(),
            14 => self.strides(),
            15 => self.struct_records(),
            10 => {
                // A host value: the module's constant table, through its word.
                let x = self.of(Scalar::U32);
                let seven = self.value(Scalar::U32, "const 7".into());
                let i = self.value(Scalar::U32, format!("and v{x}, v{seven}"));
                let w = self.value_ptr("word = ref @fuzz_table");
                let t = self.value_ptr("ptr<global, u32> = wordptr v{w}".replace("{w}", &w.to_string()).as_str());
                self.value(Scalar::U32, format!("load v{t}[v{i}]"));
            }
            _ => {
                let (a, b) = (self.of(Scalar::U64), self.of(Scalar::U32));
                self.value(Scalar::U64, format!("call @fuzz_mix(v{a}, v{b})"));
            }
        }
    }

    /// Four values stored into a `local` array of a storage type (`u8 i8
    /// u16 i16`: each keeps its low bits, beside its neighbours in one
    /// word) and one loaded back by a computed index (widened to `u32` or
    /// `i32`).
    fn small_ints(&mut self) {
        let storage = self.rng.pick(&[Scalar::U8, Scalar::I8, Scalar::U16, Scalar::I16]);
        let wide = storage.widened();
        let n = self.next;
        let _ = writeln!(self.locals, "    local %b{n}: [{storage}; 4]");
        let p = self.value_ptr(&format!("ptr<local, {storage}> = addr %b{n}"));
        for k in 0..4 {
            let v = self.of(wide);
            let at = self.unhashed("u32 = const", &k.to_string());
            let _ = writeln!(self.body, "    store v{p}[v{at}], v{v}");
        }
        let x = self.of(Scalar::U32);
        let three = self.value(Scalar::U32, "const 3".into());
        let i = self.value(Scalar::U32, format!("and v{x}, v{three}"));
        self.value(wide, format!("load v{p}[v{i}]"));
    }

    /// `match x { K => a, lo..=hi => b, _ => c }` as the Rust front end
    /// lowers it: an `if` chain whose arms set a `local`.
    fn match_chain(&mut self) {
        let ty = self.rng.pick(&INTS);
        let x = self.of(ty);
        let (k, lo, hi) = (self.constant(ty), self.constant(ty), self.constant(ty));
        let (a, b, c) = (self.of(ty), self.of(ty), self.of(ty));
        let n = self.next;
        let _ = writeln!(self.locals, "    local %m{n}: {ty}");
        let is_k = self.value(Scalar::Bool, format!("eq v{x}, v{k}"));
        let _ = writeln!(self.body, "    if v{is_k} {{\n        set %m{n}, v{a}\n    }} else {{");
        let above = self.unhashed("bool = le", &format!("v{lo}, v{x}"));
        let below = self.unhashed("bool = le", &format!("v{x}, v{hi}"));
        let inside = self.unhashed("bool = and", &format!("v{above}, v{below}"));
        let _ = writeln!(
            self.body,
            "        if v{inside} {{\n            set %m{n}, v{b}\n        }} else {{\n            set %m{n}, v{c}\n        }}\n    }}"
        );
        self.value(ty, format!("get %m{n}"));
    }

    /// `for s in halving(x & 255) { acc ^= s * 3 }` then `for s in
    /// doubling(1 + (y & 3), z) { acc += s }` (any `z`: a doubling never
    /// wraps), over `local`s, in the Rust front end's shapes.
    fn strides(&mut self) {
        let (x, y, z, init) = (self.of(Scalar::U32), self.of(Scalar::U32), self.of(Scalar::U32), self.of(Scalar::U32));
        let n = self.next;
        let _ = writeln!(self.locals, "    local %h{n}: u32\n    local %d{n}: u32\n    local %s{n}: u32");
        let c = |g: &mut Gen, v: &str| g.value(Scalar::U32, format!("const {v}"));
        let (zero, one, three, mask) = (c(self, "0"), c(self, "1"), c(self, "3"), c(self, "255"));
        let start = self.value(Scalar::U32, format!("and v{x}, v{mask}"));
        let low = self.value(Scalar::U32, format!("and v{y}, v{three}"));
        let from = self.value(Scalar::U32, format!("add v{low}, v{one}"));
        let before = self.value(Scalar::U32, format!("sub v{z}, v{one}"));
        let last = self.value(Scalar::U32, format!("shr v{before}, v{one}"));
        let _ = writeln!(self.body, "    set %s{n}, v{init}\n    set %h{n}, v{start}\n    loop {{");
        let v = self.unhashed("u32 = get", &format!("%h{n}"));
        let done = self.unhashed("bool = eq", &format!("v{v}, v{zero}"));
        let _ = writeln!(self.body, "        if v{done} {{\n            break\n        }}");
        let half = self.unhashed("u32 = shr", &format!("v{v}, v{one}"));
        let acc = self.unhashed("u32 = get", &format!("%s{n}"));
        let term = self.unhashed("u32 = mul", &format!("v{v}, v{three}"));
        let next = self.unhashed("u32 = xor", &format!("v{acc}, v{term}"));
        let _ = writeln!(self.body, "        set %h{n}, v{half}\n        set %s{n}, v{next}\n    }}");
        let _ = writeln!(self.body, "    set %d{n}, v{from}\n    loop {{");
        let v = self.unhashed("u32 = get", &format!("%d{n}"));
        let done = self.unhashed("bool = ge", &format!("v{v}, v{z}"));
        let _ = writeln!(self.body, "        if v{done} {{\n            break\n        }}");
        let more = self.unhashed("bool = le", &format!("v{v}, v{last}"));
        let twice = self.unhashed("u32 = shl", &format!("v{v}, v{one}"));
        let moved = self.unhashed("u32 = select", &format!("v{more}, v{twice}, v{z}"));
        let acc = self.unhashed("u32 = get", &format!("%s{n}"));
        let next = self.unhashed("u32 = add", &format!("v{acc}, v{v}"));
        let _ = writeln!(self.body, "        set %d{n}, v{moved}\n        set %s{n}, v{next}\n    }}");
        self.value(Scalar::U32, format!("get %s{n}"));
    }

    /// Two records of a struct laid out as `#[derive(relok::Struct)]`
    /// requires (`{u64, u32, u16, u8, i8}`: largest first, no padding), in a
    /// `local` array: every field of each stored through `offset` and
    /// `field` (the Rust front end's `ps[i].f = v`), then every field of
    /// one chosen by a computed index loaded back (`let p = ps[i];`).
    fn struct_records(&mut self) {
        const FIELDS: [Scalar; 5] = [Scalar::U64, Scalar::U32, Scalar::U16, Scalar::U8, Scalar::I8];
        let ty = "{u64, u32, u16, u8, i8}";
        let n = self.next;
        let _ = writeln!(self.locals, "    local %r{n}: [{ty}; 2]");
        let p = self.value_ptr(&format!("ptr<local, {ty}> = addr %r{n}"));
        let field =
            |g: &mut Gen, rec: u32, k: usize| g.value_ptr(&format!("ptr<local, {}> = field v{rec}, {k}", FIELDS[k]));
        for r in 0..2 {
            let at = self.unhashed("u32 = const", &r.to_string());
            let rec = self.value_ptr(&format!("ptr<local, {ty}> = offset v{p}, v{at}"));
            for (k, ty) in FIELDS.iter().enumerate() {
                let v = self.of(ty.widened());
                let f = field(self, rec, k);
                let _ = writeln!(self.body, "    store v{f}, v{v}");
            }
        }
        let x = self.of(Scalar::U32);
        let one = self.value(Scalar::U32, "const 1".into());
        let i = self.value(Scalar::U32, format!("and v{x}, v{one}"));
        let rec = self.value_ptr(&format!("ptr<local, {ty}> = offset v{p}, v{i}"));
        for (k, ty) in FIELDS.iter().enumerate() {
            let f = field(self, rec, k);
            self.value(ty.widened(), format!("load v{f}"));
        }
    }

    /// `acc = acc OP y` for `x & 7` iterations, over a `local`.
    fn counted_loop(&mut self) {
        let ty = self.rng.pick(&INTS);
        let (init, y) = (self.of(ty), self.of(ty));
        let x = self.of(Scalar::U32);
        let n = self.next;
        let _ = writeln!(self.locals, "    local %i{n}: u32\n    local %acc{n}: {ty}");
        let op = self.rng.pick(&["add", "mul", "xor", "sub", "max"]);
        let (seven, zero, one) = (
            self.value(Scalar::U32, "const 7".into()),
            self.value(Scalar::U32, "const 0".into()),
            self.value(Scalar::U32, "const 1".into()),
        );
        let count = self.value(Scalar::U32, format!("and v{x}, v{seven}"));
        let _ = writeln!(self.body, "    set %i{n}, v{zero}\n    set %acc{n}, v{init}\n    loop {{");
        let (i, stop, acc, next_acc, next_i) = (self.next, self.next + 1, self.next + 2, self.next + 3, self.next + 4);
        self.next += 5;
        let _ = writeln!(
            self.body,
            "        v{i}: u32 = get %i{n}\n        v{stop}: bool = ge v{i}, v{count}\n        if v{stop} {{\n            break\n        }}\n        v{acc}: {ty} = get %acc{n}\n        v{next_acc}: {ty} = {op} v{acc}, v{y}\n        set %acc{n}, v{next_acc}\n        v{next_i}: u32 = add v{i}, v{one}\n        set %i{n}, v{next_i}\n    }}"
        );
        self.value(ty, format!("get %acc{n}"));
    }

    /// Every value folded into one u32.
    fn fold(&mut self) -> u32 {
        let values = self.pool.clone();
        let mut h = self.value(Scalar::U32, "const 2166136261".into());
        let prime = self.value(Scalar::U32, "const 16777619".into());
        let thirty_two = self.value(Scalar::U64, "const 32".into());
        for (ty, v) in values {
            let words: Vec<u32> = match ty {
                Scalar::U32 => vec![v],
                Scalar::I32 => vec![self.value(Scalar::U32, format!("bitcast v{v}"))],
                Scalar::F32 => {
                    // A zero's sign is left out: WGSL lets a driver ignore
                    // it (NVIDIA's Vulkan driver gave -0.0 for x - x); and a
                    // NaN's bits, which the IR leaves unspecified (x86 and
                    // the GPUs make different NaNs for 0/0): every NaN folds
                    // as one.
                    let bits = self.value(Scalar::U32, format!("bitcast v{v}"));
                    let mag_mask = self.value(Scalar::U32, "const 2147483647".into());
                    let mag = self.value(Scalar::U32, format!("and v{bits}, v{mag_mask}"));
                    let zero = self.value(Scalar::U32, "const 0".into());
                    let is_zero = self.value(Scalar::Bool, format!("eq v{mag}, v{zero}"));
                    let bits = self.value(Scalar::U32, format!("select v{is_zero}, v{zero}, v{bits}"));
                    vec![self.nan_folded(Scalar::U32, v, bits, "2143289344")]
                }
                Scalar::F64 => {
                    let bits = self.value(Scalar::U64, format!("bitcast v{v}"));
                    let bits = self.nan_folded(Scalar::U64, v, bits, "9221120237041090560");
                    let hi = self.value(Scalar::U64, format!("shr v{bits}, v{thirty_two}"));
                    vec![
                        self.value(Scalar::U32, format!("convert v{bits}")),
                        self.value(Scalar::U32, format!("convert v{hi}")),
                    ]
                }
                Scalar::Bool => vec![self.value(Scalar::U32, format!("convert v{v}"))],
                _ => {
                    let bits = if ty == Scalar::U64 { v } else { self.value(Scalar::U64, format!("bitcast v{v}")) };
                    let hi = self.value(Scalar::U64, format!("shr v{bits}, v{thirty_two}"));
                    vec![
                        self.value(Scalar::U32, format!("convert v{bits}")),
                        self.value(Scalar::U32, format!("convert v{hi}")),
                    ]
                }
            };
            for w in words {
                let x = self.value(Scalar::U32, format!("xor v{h}, v{w}"));
                h = self.value(Scalar::U32, format!("mul v{x}, v{prime}"));
            }
        }
        h
    }
}

/// The text of case `seed` with `steps` random steps: kernel `@fuzz(in,
/// out)` over a grid of [`GRID`] blocks of [`BLOCK`] threads.
pub fn generate(seed: u64, steps: usize) -> String {
    let mut g = Gen {
        rng: Rng::new(seed),
        body: String::new(),
        next: 2,
        pool: Vec::new(),
        locals: String::new(),
        shared: String::new(),
        small_f32: Vec::new(),
    };
    let (bid, bdim, tid) = (
        g.value(Scalar::U32, "block_id.x".into()),
        g.value(Scalar::U32, "block_dim.x".into()),
        g.value(Scalar::U32, "thread_id.x".into()),
    );
    let base = g.value(Scalar::U32, format!("mul v{bid}, v{bdim}"));
    let gid = g.value(Scalar::U32, format!("add v{base}, v{tid}"));
    let x = g.value(Scalar::U32, format!("load v0[v{gid}]"));
    let wide = g.value(Scalar::U64, format!("convert v{x}"));
    let _ = g.value(Scalar::I64, format!("bitcast v{wide}"));
    for _ in 0..steps {
        g.step();
    }
    // A shared tile read across a barrier (the next thread's value) and a
    // block-wide atomic sum, both deterministic.
    let own = g.of(Scalar::U32);
    g.shared =
        format!("    shared %tile: [u32; {BLOCK}]\n    shared %bytes: [u8; {BLOCK}]\n    shared %sum: [u32; 1]\n");
    let tile = g.value_ptr("ptr<shared, u32> = addr %tile");
    let bytes = g.value_ptr("ptr<shared, u8> = addr %bytes");
    let sum = g.value_ptr("ptr<shared, u32> = addr %sum");
    let _ = writeln!(g.body, "    store v{tile}[v{tid}], v{own}");
    // Its low byte too, beside three other threads' in one word.
    let _ = writeln!(g.body, "    store v{bytes}[v{tid}], v{own}");
    // Shared memory starts undefined (docs/ir.md; on CUDA it holds what
    // the previous launch left): thread 0 zeroes the sum first.
    let zero = g.unhashed("u32 = const", "0");
    let first = g.unhashed("bool = eq", &format!("v{tid}, v{zero}"));
    let _ = writeln!(g.body, "    if v{first} {{\n        store v{sum}, v{zero}\n    }}\n    barrier");
    // The old value an `atomic.add` returns depends on the order the
    // threads ran in (sequential on the cpu device and on lavapipe, not on
    // an NVIDIA GPU): kept out of the hash; the sum after the barrier is in.
    let _ = g.unhashed("u32 = atomic.add", &format!("v{sum}, v{own}"));
    g.body.push_str("    barrier\n");
    let one = g.value(Scalar::U32, "const 1".into());
    let next = g.value(Scalar::U32, format!("add v{tid}, v{one}"));
    let wrapped = g.value(Scalar::U32, format!("rem v{next}, v{bdim}"));
    let _ = g.value(Scalar::U32, format!("load v{tile}[v{wrapped}]"));
    let _ = g.value(Scalar::U32, format!("load v{bytes}[v{wrapped}]"));
    let _ = g.value(Scalar::U32, format!("load v{sum}"));
    let h = g.fold();
    let _ = writeln!(g.body, "    store v1[v{gid}], v{h}\n    return");
    let mut table = Rng::new(seed ^ 0x7ab1e);
    let table: Vec<String> = (0..8).map(|_| (table.next() as u32).to_string()).collect();
    format!(
        "const @fuzz_table: [u32; 8] = [{}]\n\n{MIX}\nkernel @fuzz(v0: ptr<global, u32>, v1: ptr<global, u32>) {{\n{}{}{}}}\n",
        table.join(", "),
        g.shared,
        g.locals,
        g.body
    )
}

impl Gen {
    /// A pointer value (kept out of the pool: it is not folded).
    fn value_ptr(&mut self, decl: &str) -> u32 {
        let v = self.next;
        self.next += 1;
        let _ = writeln!(self.body, "    v{v}: {decl}");
        v
    }

    /// `bits` (the bits of float `v`, of integer type `int`), or the
    /// quiet NaN `nan` when `v` is a NaN (`ne v, v`).
    fn nan_folded(&mut self, int: Scalar, v: u32, bits: u32, nan: &str) -> u32 {
        let is_nan = self.value(Scalar::Bool, format!("ne v{v}, v{v}"));
        let canonical = self.value(int, format!("const {nan}"));
        self.value(int, format!("select v{is_nan}, v{canonical}, v{bits}"))
    }

    /// A value kept out of the pool that is folded into the result: one
    /// whose bits a device may choose (`ty_op` is `type = op`).
    fn unhashed(&mut self, ty_op: &str, operands: &str) -> u32 {
        self.value_ptr(&format!("{ty_op} {operands}"))
    }
}

/// The device function every case may call: 64-bit arithmetic and an
/// early return.
const MIX: &str = "fn @fuzz_mix(v0: u64, v1: u32) -> u64 {
    v2: u64 = convert v1
    v3: u64 = const 11400714819323198485
    v4: u64 = mul v0, v3
    v5: u64 = xor v4, v2
    v6: u32 = const 1
    v7: u32 = and v1, v6
    v8: u32 = const 0
    v9: bool = eq v7, v8
    if v9 {
        return v5
    }
    v10: u64 = const 29
    v11: u64 = shr v5, v10
    v12: u64 = sub v5, v11
    return v12
}
";

/// The input buffer of case `seed`.
pub fn input(seed: u64) -> Vec<u64> {
    let mut r = Rng::new(seed ^ 0x5eed);
    (0..GRID * BLOCK).map(|_| r.next() & 0xffff_ffff).collect()
}

/// What one device gave for a case: the output buffer, or the error text.
pub type Outcome = Result<Vec<u64>, String>;

/// Runs case `text` on `device` with `input`.
pub fn run_on(device: &Device, strategy: Strategy, text: &str, input: &[u64]) -> Outcome {
    let module = relok_ir::parse(text).map_err(|e| format!("generated text does not parse: {e}"))?;
    let module = relok_ir::VerifiedModule::new(module).map_err(|e| format!("generated kernel does not verify: {e}"))?;
    let (session, cache) = (Session::new(), KernelCache::uncached());
    let target = Target { device, session: &session, cache: &cache, strategy };
    let config = LaunchConfig::linear(GRID, BLOCK);
    let args = [ArgValue::Buffer(Scalar::U32, input.to_vec()), ArgValue::Buffer(Scalar::U32, vec![0; input.len()])];
    let out = run_kernel(&target, &module, "fuzz", &config, &args).map_err(|e| e.to_string())?;
    match out.args.get(1) {
        Some(ArgValue::Buffer(_, bits)) => Ok(bits.clone()),
        _ => Err("no output buffer".to_owned()),
    }
}

/// A device's result differing from the cpu device's.
#[derive(Debug)]
pub struct Mismatch {
    /// The case's seed.
    pub seed: u64,
    /// The fewest steps that still differ.
    pub steps: usize,
    /// The device and strategy.
    pub on: String,
    /// What differs (the first element, or the errors).
    pub what: String,
    /// The minimised case as a file test (the cpu device's output as the
    /// expectation).
    pub file_test: String,
}

/// Runs case `seed` of `steps` steps on `cpu` and every device of `others`
/// under each of its strategies; `None` when all agree.
pub fn run_case(cpu: &Device, others: &[Device], seed: u64, steps: usize) -> Option<Mismatch> {
    let input = input(seed);
    let differs = |device: &Device, strategy: Strategy, steps: usize| -> Option<String> {
        let text = generate(seed, steps);
        let want = run_on(cpu, Strategy::Table, &text, &input);
        let got = run_on(device, strategy, &text, &input);
        compare(&want, &got)
    };
    for device in others {
        for &strategy in device.strategies() {
            if let Some(what) = differs(device, strategy, steps) {
                let steps = minimise(steps, |s| differs(device, strategy, s).is_some());
                let text = generate(seed, steps);
                let want = run_on(cpu, Strategy::Table, &text, &input);
                let what = differs(device, strategy, steps).unwrap_or(what);
                return Some(Mismatch {
                    seed,
                    steps,
                    on: format!("{} ({strategy})", device.name()),
                    what,
                    file_test: file_test(seed, steps, &text, &input, &want),
                });
            }
        }
    }
    None
}

/// The first difference between the cpu device's outcome and another's.
fn compare(want: &Outcome, got: &Outcome) -> Option<String> {
    match (want, got) {
        (Ok(w), Ok(g)) => {
            w.iter().zip(g).position(|(a, b)| a != b).map(|i| format!("out[{i}]: cpu {:#x}, device {:#x}", w[i], g[i]))
        }
        (Err(w), Err(g)) if w == g => None,
        (Ok(_), Err(g)) => Some(format!("the device failed: {}", g.trim_end())),
        (Err(w), Ok(_)) => Some(format!("the cpu device failed ({}), the device ran", w.trim_end())),
        (Err(w), Err(g)) => Some(format!("cpu: {}; device: {}", w.trim_end(), g.trim_end())),
    }
}

/// The fewest steps in `0..=steps` for which `fails` holds (`fails(steps)`
/// is known to): a scan from 0, as a failure need not be monotonic.
fn minimise(steps: usize, fails: impl Fn(usize) -> bool) -> usize {
    (0..steps).find(|&s| fails(s)).unwrap_or(steps)
}

/// Case `text` as a `test run` file whose expectation is `want`.
pub fn file_test(seed: u64, steps: usize, text: &str, input: &[u64], want: &Outcome) -> String {
    let list = |bits: &[u64]| bits.iter().map(u64::to_string).collect::<Vec<_>>().join(", ");
    let expect = match want {
        Ok(out) => format!("_, [{}]", list(out)),
        Err(e) => format!("error: {e}"),
    };
    format!(
        "test run\n; relok fuzz --seed {seed}: a case ({steps} steps) on which a device differed from the cpu device\n; run: @fuzz([{}], zeros:{}) grid={GRID} block={BLOCK} => {expect}\n\n{text}",
        list(input),
        input.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_kernels_verify_run_on_the_cpu_device_and_are_byte_stable() {
        let cpu = Device::Cpu(relok_runtime::CpuDevice::new(0));
        for seed in 0..40 {
            let text = generate(seed, 24);
            assert_eq!(text, generate(seed, 24));
            let out = run_on(&cpu, Strategy::Table, &text, &input(seed));
            assert!(out.is_ok(), "seed {seed}: {out:?}\n{text}");
        }
        // Every kind of step occurs.
        let all: String = (0..40).map(|seed| generate(seed, 24)).collect();
        for what in [
            "wordptr",
            "call @fuzz_mix",
            "loop {",
            ": f64 = sqrt",
            ": f32 = ",
            "select ",
            "barrier",
            "atomic.add",
            "ptr<local, i8>",
            "local %m",
            ": u32 = select v",
            "local %h",
            "ptr<local, u16>",
            "local %r",
            "ptr<local, i8> = field v",
        ] {
            assert!(all.contains(what), "no `{what}` in 40 cases");
        }
        // Fewer steps give a prefix of the same kernel's random steps.
        assert!(generate(7, 24).contains(generate(7, 3).lines().nth(8).unwrap_or_default()));
    }
}
