//! Host objects through the facade: the words a context delivers for each
//! kind (a runtime global and an offset into it, a symbol, a value, a
//! string), the runtime global `relok_counter` per context, and two
//! contexts kept apart.

use super::examples::{example, run_example};
use super::values::{Value, run};
use relok::{Context, DeviceKind, Error, Global, Grid, Program, Word};

/// `examples/reloc/words.rk`: `@words(out)` stores the words of a runtime
/// global + 8, a symbol, a value and a string.
pub const WORDS: &str = include_str!("../../../../examples/reloc/words.rk");
/// `examples/reloc/counter.rk`: every thread of `@count(out)` takes one
/// ticket of `relok_counter` and stores the old value.
pub const COUNTER: &str = include_str!("../../../../examples/reloc/counter.rk");

/// `@probe(out, sym, bytes)`: the words of `relok_counter` + 8 and + 0,
/// `:alpha`, the value `@t` and the string `"hello"`, and its `sym`
/// argument's, as `u64`s; and the bytes read through the value's and the
/// string's words.
const PROBE: &str = "const @t: [u32; 2] = [7, 9]

kernel @probe(v0: ptr<global, u64>, v1: word, v2: ptr<global, u32>) {
    v3: word = ref global relok_counter + 8
    v4: word = ref global relok_counter
    v5: word = ref :alpha
    v6: word = ref @t
    v7: word = ref \"hello\"
    v8: u32 = const 0
    v9: u32 = const 1
    v10: u32 = const 2
    v11: u32 = const 3
    v12: u32 = const 4
    v13: u32 = const 5
    v14: u64 = bitcast v3
    store v0[v8], v14
    v15: u64 = bitcast v4
    store v0[v9], v15
    v16: u64 = bitcast v5
    store v0[v10], v16
    v17: u64 = bitcast v6
    store v0[v11], v17
    v18: u64 = bitcast v7
    store v0[v12], v18
    v19: u64 = bitcast v1
    store v0[v13], v19
    v20: ptr<global, u32> = wordptr v6
    v21: u32 = load v20[v8]
    store v2[v8], v21
    v22: u32 = load v20[v9]
    store v2[v9], v22
    v23: ptr<global, u32> = wordptr v7
    v24: u32 = load v23[v8]
    store v2[v10], v24
    return
}
";

/// The words `words.rk` writes on `ctx`, in its order: `relok_counter` +
/// 8, `:alpha`, `@t`, `"hello"`.
pub fn words(ctx: &Context) -> Vec<u64> {
    let out = run(ctx, &Program::parse(WORDS).expect("parses"), "words", Grid::new(1, 1), &[buffer(4)])
        .unwrap_or_else(|e| panic!("words.rk on {}: {e}", ctx.device_name()));
    out[0].buffer().to_vec()
}

fn buffer(n: usize) -> Value {
    Value::Buffer(relok_ir::Scalar::Word, vec![0; n])
}

/// Checks the words `ctx` delivers and returns `words.rk`'s: the offset
/// into a global's cell is delivered (its word is the cell's + 8), a
/// kernel's `ref :alpha` is the word of the host's `Symbol` `alpha`, the
/// value's and the string's copies hold their bytes, the objects' words
/// differ, and every kernel and launch of the context gets the same words
/// (`words.rk`, twice, against the probe's). On wgpu, host objects live in
/// the device's heap: their words are heap offsets.
pub fn check_words(ctx: &Context) -> Vec<u64> {
    let on = ctx.device_name();
    let probe = Program::parse(PROBE).expect("parses");
    let args = [
        Value::Buffer(relok_ir::Scalar::U64, vec![0; 6]),
        Value::Symbol("alpha".into()),
        Value::Buffer(relok_ir::Scalar::U32, vec![0; 3]),
    ];
    let out = run(ctx, &probe, "probe", Grid::new(1, 1), &args).unwrap_or_else(|e| panic!("probe on {on}: {e}"));
    let (w, bytes) = (out[0].buffer(), out[2].buffer());
    assert_eq!(w[0], w[1].wrapping_add(8), "{on}: the word of relok_counter + 8 is its cell's + 8");
    assert_eq!(w[2], w[5], "{on}: `ref :alpha` is the word of the host's symbol alpha");
    assert_eq!(bytes, [7, 9, u64::from(u32::from_le_bytes(*b"hell"))], "{on}: the copies hold their bytes");
    for i in 1..5 {
        for j in i + 1..5 {
            assert_ne!(w[i], w[j], "{on}: words {i} and {j} of different objects");
        }
    }
    if ctx.device_kind() == DeviceKind::Wgpu {
        assert!(w[3] < 1 << 32 && w[4] < 1 << 32, "{on}: heap offsets: {w:x?}");
    }
    let expected = vec![w[0], w[2], w[3], w[4]];
    assert_eq!(words(ctx), expected, "{on}: words.rk gets the probe's words");
    assert_eq!(words(ctx), expected, "{on}: and again");
    expected
}

/// The runtime global `relok_counter`.
pub static RELOK_COUNTER: Global<u64> = Global::new("relok_counter");

/// `relok_counter` on `ctx` (0 before its first use).
pub fn counter(ctx: &Context) -> u64 {
    ctx.global_value(&RELOK_COUNTER).unwrap_or_else(|e| panic!("relok_counter on {}: {e}", ctx.device_name()))
}

/// Runs `counter.rk` with `blocks` × `threads` threads on `ctx`: the
/// tickets they took, sorted.
pub fn count(ctx: &Context, blocks: u32, threads: u32) -> Vec<u64> {
    let n = (blocks * threads) as usize;
    let args = [Value::Buffer(relok_ir::Scalar::U64, vec![0; n])];
    let out = run(ctx, &Program::parse(COUNTER).expect("parses"), "count", Grid::new(blocks, threads), &args)
        .unwrap_or_else(|e| panic!("counter.rk on {}: {e}", ctx.device_name()));
    let mut tickets = out[0].buffer().to_vec();
    tickets.sort_unstable();
    tickets
}

/// Each of `gpus` counts in its own `relok_counter`, which `other` (a
/// second context on the same device) never sees; an exception comes back
/// with its text, and the device runs the next example correctly.
pub fn globals_are_per_context_and_exceptions_leave_the_device_usable(gpus: &[Context], other: &Context) {
    for ctx in gpus {
        let strategy = ctx.strategy();
        let start = counter(ctx);
        assert_eq!(count(ctx, 2, 64), (start..start + 128).collect::<Vec<_>>(), "{strategy}: one ticket a thread");
        assert_eq!(counter(ctx), start + 128, "{strategy}");
        assert_eq!(counter(other), 0, "{strategy}: the other context's counter is untouched");
    }
    // An exception comes back with its text, and the device runs on.
    for ctx in gpus {
        let strategy = ctx.strategy();
        let o = run_example(ctx, example("throw")).expect("runs");
        assert!(
            o.matches && o.exception.as_deref().is_some_and(|e| e.contains("negative input")),
            "{strategy}: {:?}",
            o.exception
        );
        let saxpy = run_example(ctx, example("saxpy")).expect("saxpy after an exception");
        assert!(saxpy.matches, "{strategy}");
    }
}

/// Two contexts are two devices: each delivers its own words (with
/// `distinct_words`, where both share one address space as two contexts
/// on CUDA GPUs do, the copies' and cells' words differ too), counts in
/// its own runtime global, and refuses the other's buffers.
pub fn isolated(a: &Context, b: &Context, what: &str, distinct_words: bool) {
    let (wa, wb) = (check_words(a), check_words(b));
    for i in [0, 2, 3].into_iter().filter(|_| distinct_words) {
        assert_ne!(wa[i], wb[i], "{what}: word {i} must be each context's own copy");
    }
    let (before_a, before_b) = (counter(a), counter(b));
    assert_eq!(count(a, 1, 64), (before_a..before_a + 64).collect::<Vec<_>>(), "{what}");
    assert_eq!((counter(a), counter(b)), (before_a + 64, before_b), "{what}: counters are per context");
    let k = a.kernel(&Program::parse(WORDS).expect("parses"), "words").expect("loads");
    let foreign = b.zeros::<Word>(4).expect("zeros");
    let e = k.launch(&a.stream(), Grid::new(1, 1), (&foreign,)).expect_err("another context's buffer");
    assert!(matches!(e, Error::WrongContext { .. }), "{what}: {e}");
}
