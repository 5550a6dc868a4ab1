//! The floor of a CUDA program's start: initialise the driver and create
//! GPU 0's primary context, nothing else (no relok). `relok bench start`
//! times it from exec to exit beside a whole relok program; its "result"
//! (`result_at_unix_ns`, the wall clock) is the context's existence.
//!
//! `bare_context --relok` then opens relok's cuda device on that context
//! and adds `relok_open_us`: what relok's opening costs beyond the
//! driver's context (its allocations, stream and first copies), timed in
//! one process, apart from the driver's start-up and its spread.
#![expect(clippy::print_stdout, reason = "the one JSON line is this program's output")]

fn main() -> std::process::ExitCode {
    let relok = std::env::args().nth(1).as_deref() == Some("--relok");
    let t = std::time::Instant::now();
    match cudarc::driver::CudaContext::new(0) {
        Ok(_ctx) => {
            let context_us = t.elapsed().as_secs_f64() * 1e6;
            let at = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
            let mut opened = String::new();
            if relok {
                let t = std::time::Instant::now();
                match relok_runtime::cuda::CudaDevice::open(0) {
                    Ok(_device) => opened = format!(",\"relok_open_us\":{:.1}", t.elapsed().as_secs_f64() * 1e6),
                    Err(e) => {
                        println!("{{\"error\":\"{}\"}}", e.to_string().escape_default());
                        return std::process::ExitCode::FAILURE;
                    }
                }
            }
            println!("{{\"context_us\":{context_us:.1},\"result_at_unix_ns\":{at}{opened}}}");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            println!("{{\"error\":\"{e:?}\"}}");
            std::process::ExitCode::FAILURE
        }
    }
}
