//! A real `redis-server` for a test: on a free loopback port, in a
//! temporary folder, nothing saved, stopped (and waited for) on drop. Used
//! by relok-cache's and relok-cli's remote tests (`#[path]`).
//!
//! Without `redis-server` on the PATH a test skips with a message on
//! stderr, or fails when `RELOK_REQUIRE_REDIS=1` (CI installs it).

#![allow(dead_code, reason = "each test binary uses part of it")]

use std::io::Write;
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running server.
pub struct RedisServer {
    child: Option<Child>,
    port: u16,
    dir: tempfile::TempDir,
}

/// `redis-server` on the PATH, or `None` after saying the test is skipped
/// (a failure under `RELOK_REQUIRE_REDIS=1`).
fn binary(test: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH")
        .and_then(|p| std::env::split_paths(&p).map(|d| d.join("redis-server")).find(|p| p.is_file()));
    if found.is_none() {
        if std::env::var("RELOK_REQUIRE_REDIS").is_ok_and(|v| v == "1") {
            panic!("{test}: redis-server is not installed and RELOK_REQUIRE_REDIS=1 (apt-get install redis-server)");
        }
        let _ =
            writeln!(std::io::stderr(), "SKIPPED {test}: redis-server is not installed (apt-get install redis-server)");
    }
    found
}

/// A loopback port nothing listens on (as far as anyone can know).
pub fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind").local_addr().expect("addr").port()
}

impl RedisServer {
    /// Starts a server for `test`; `None` (skipped) without redis-server.
    pub fn start(test: &str) -> Option<RedisServer> {
        binary(test)?;
        let dir = tempfile::tempdir().expect("tempdir");
        let mut s = RedisServer { child: None, port: 0, dir };
        for _ in 0..5 {
            s.port = free_port();
            if s.spawn() {
                return Some(s);
            }
        }
        panic!("{test}: redis-server did not start");
    }

    /// Starts the server again on its port (after [`RedisServer::kill`]).
    pub fn restart(&mut self) {
        assert!(self.spawn(), "redis-server did not restart on port {}", self.port);
    }

    fn spawn(&mut self) -> bool {
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(["--enable-debug-command", "yes", "--protected-mode", "no", "--daemonize", "no"])
            .arg("--dir")
            .arg(self.dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn redis-server");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if self.child.as_mut().is_some_and(|c| c.try_wait().ok().flatten().is_some()) {
                self.child = None;
                return false;
            }
            if TcpStream::connect((Ipv4Addr::LOCALHOST, self.port)).is_ok() && self.cli(&["PING"]).trim() == "PONG" {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.kill();
        false
    }

    /// `redis://127.0.0.1:<port>/0`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Runs `redis-cli -p <port> ARGS…`; its standard output.
    pub fn cli(&self, args: &[&str]) -> String {
        let out =
            Command::new("redis-cli").args(["-p", &self.port.to_string()]).args(args).output().expect("redis-cli");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `redis-cli -x SET name` with `value` on its standard input (binary
    /// safe).
    pub fn set_raw(&self, name: &str, value: &[u8]) {
        let mut c = Command::new("redis-cli")
            .args(["-p", &self.port.to_string(), "-x", "SET", name])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("redis-cli");
        c.stdin.take().expect("stdin").write_all(value).expect("write");
        let out = c.wait_with_output().expect("redis-cli");
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "OK");
    }

    /// The value of `name` (binary safe), empty when absent.
    pub fn get_raw(&self, name: &str) -> Vec<u8> {
        let out = Command::new("redis-cli")
            .args(["-p", &self.port.to_string(), "--no-raw", "STRLEN", name])
            .output()
            .expect("redis-cli");
        let len: usize =
            String::from_utf8_lossy(&out.stdout).trim().trim_start_matches("(integer) ").parse().unwrap_or(0);
        if len == 0 {
            return Vec::new();
        }
        // `--raw GET` prints the bytes and a newline.
        let out = Command::new("redis-cli")
            .args(["-p", &self.port.to_string(), "--raw", "GET", name])
            .output()
            .expect("redis-cli");
        out.stdout[..len].to_vec()
    }

    /// Every name in the server, sorted.
    pub fn keys(&self) -> Vec<String> {
        let mut k: Vec<String> =
            self.cli(&["--raw", "KEYS", "*"]).lines().filter(|l| !l.is_empty()).map(str::to_owned).collect();
        k.sort();
        k
    }

    /// Runs `DEBUG SLEEP seconds` on a thread of its own and returns once
    /// the server is busy with it (a PING on another connection gets no
    /// answer within 100 ms). Join the handle to wait for the end.
    pub fn sleep_in_background(&self, seconds: u32) -> std::thread::JoinHandle<()> {
        let port = self.port.to_string();
        let handle = std::thread::spawn(move || {
            let out = Command::new("redis-cli")
                .args(["-p", &port, "DEBUG", "SLEEP", &seconds.to_string()])
                .output()
                .expect("redis-cli");
            assert!(out.status.success(), "DEBUG SLEEP: {}", String::from_utf8_lossy(&out.stderr));
        });
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            assert!(Instant::now() < deadline, "the server never became busy with DEBUG SLEEP");
            let mut s = TcpStream::connect((Ipv4Addr::LOCALHOST, self.port)).expect("connect");
            s.set_read_timeout(Some(Duration::from_millis(100))).expect("timeout");
            s.write_all(b"PING\r\n").expect("ping");
            let mut buf = [0u8; 16];
            match std::io::Read::read(&mut s, &mut buf) {
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                    return handle;
                }
                _ => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    }

    /// Stops the server now (SIGKILL) and waits for it.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}
