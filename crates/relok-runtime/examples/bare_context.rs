//! The floor of a CUDA program's start: initialise the driver and create
//! GPU 0's primary context, nothing else (no relok). `relok bench start`
//! times it from exec to exit beside a whole relok program.
#![expect(clippy::print_stdout, reason = "the one JSON line is this program's output")]

fn main() -> std::process::ExitCode {
    let t = std::time::Instant::now();
    match cudarc::driver::CudaContext::new(0) {
        Ok(_ctx) => {
            println!("{{\"context_us\":{:.1}}}", t.elapsed().as_secs_f64() * 1e6);
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            println!("{{\"error\":\"{e:?}\"}}");
            std::process::ExitCode::FAILURE
        }
    }
}
