//! What relok's opening of a cuda device costs beyond the driver's
//! context: the driver is initialised and GPU 0's primary context made
//! first (untimed), then relok's `CudaDevice::open(0)` on that context —
//! its allocations, stream and first copies — is timed, apart from the
//! driver's start-up and its spread between processes. `relok bench
//! start` runs it beside `bare_context` (the whole process's floor).
//! Prints one JSON line, `{"relok_open_us":…}`; on a failure, the reason
//! on stderr and a non-zero exit.
#![expect(clippy::print_stdout, reason = "the one JSON line is this program's output")]
#![expect(clippy::print_stderr, reason = "the reason for a failure")]

fn main() -> std::process::ExitCode {
    let ctx = match cudarc::driver::CudaContext::new(0) {
        Ok(ctx) => ctx,
        Err(e) => {
            eprintln!("no CUDA context on GPU 0: {e:?}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let t = std::time::Instant::now();
    match relok_runtime::cuda::CudaDevice::open(0) {
        Ok(device) => {
            let us = t.elapsed().as_secs_f64() * 1e6;
            println!("{{\"relok_open_us\":{us:.1}}}");
            drop(device);
            drop(ctx);
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("relok could not open GPU 0: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
