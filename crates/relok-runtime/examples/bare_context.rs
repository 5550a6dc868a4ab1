//! The floor of a CUDA program's start: initialise the driver and create
//! GPU 0's primary context, nothing else (no relok). `relok bench start`
//! times it from exec to exit beside a whole relok program; its "result"
//! (`result_at_unix_ns`, the wall clock) is the context's existence.
#![expect(clippy::print_stdout, reason = "the one JSON line is this program's output")]

fn main() -> std::process::ExitCode {
    let t = std::time::Instant::now();
    match cudarc::driver::CudaContext::new(0) {
        Ok(_ctx) => {
            let context_us = t.elapsed().as_secs_f64() * 1e6;
            let at = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
            println!("{{\"context_us\":{context_us:.1},\"result_at_unix_ns\":{at}}}");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            println!("{{\"error\":\"{e:?}\"}}");
            std::process::ExitCode::FAILURE
        }
    }
}
