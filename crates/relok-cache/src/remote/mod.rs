//! The remote tier (docs/design.md §11, docs/cache.md "The remote tier"):
//! a Redis server behind a [`Store`](crate::Store), shared by machines.
//!
//! ```text
//! Store::get(key)   local entry ─► hit
//!                   local miss  ─► GETRANGE name 0 cap (one round trip, bounded)
//!                                  ─► signature (signed::open) ─► entry::decode ─► written locally ─► hit
//!                                  ─► absent: miss; anything invalid: rejected (a miss)
//! Store::put(key)   local write ─► queue (bounded) ─► writer thread: sign, SET name value
//! drop(Store)       waits for the queue, at most the flush time limit
//! ```
//!
//! - **Names.** An entry's name in Redis is
//!   `relok:<family>/<folder>/<key hex>`: the folder is the compiler build
//!   for artifacts and the device and driver build for machine code, so
//!   machine code is only ever read by a machine whose device and driver
//!   identity are the same, byte for byte.
//! - **Trust.** Values are signed (see [`signed`]) over the name and the
//!   framed entry's digest. A process with the signing key reads and
//!   writes; one with the public key only reads (it never writes: no
//!   signing key, no queue, no writer thread). No key, no tier. A key file
//!   is read only when no other user can change it (see [`keys`]).
//! - **Failure policy.** Each exchange with the server (connecting if
//!   needed, then one command or pipeline and every byte of its replies)
//!   is bounded as a whole by one timeout (250 ms unless
//!   `RELOK_REMOTE_TIMEOUT_MS` says otherwise), and each reply by what its
//!   command can return (see [`wire`]). The first connection error,
//!   timeout, refusal or unreadable reply switches the remote off for the
//!   rest of the process, with one warning, and ends the exchanges other
//!   threads have in flight (their sockets are shut down); from then on it
//!   costs nothing. A remote that is dead, silent, slow or speaks garbage
//!   costs a process at most one timeout.
//! - **Costs nothing unless configured.** [`RemoteConfig::from_env`] reads
//!   no file and [`Remote::open`] opens no connection when `RELOK_REMOTE`
//!   is unset; the reader connects on the first lookup, the writer thread
//!   starts on the first write.
//!
//! The client is relok's own ([`wire`]: RESP2, five commands), so that a
//! deadline covers a whole exchange and a reply's size is checked before
//! it is read; an async client would bring a runtime into every process
//! that loads a kernel. TLS (`rediss://`) is not built in: it would add a
//! TLS stack to every build; reach a remote Redis through a private
//! network or a TLS tunnel.

pub mod keys;
pub mod signed;
pub mod wire;

use crate::stats::{RemoteCounter, RemoteCounters};
use crate::{Key, RemoteStats};
use ed25519_dalek::{SigningKey, VerifyingKey};
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use wire::{Connection, Deadline, Endpoint, Hangup, Reply, WireError, encode};

/// The default time limit of one exchange with the server: connecting
/// (when needed), one command or pipeline, and every byte of its replies.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(250);
/// The default time a process waits at exit for its queued writes.
pub const DEFAULT_FLUSH_TIMEOUT: Duration = Duration::from_secs(2);
/// Writes queued at most; more are dropped (counted).
pub const QUEUE_LEN: usize = 256;

/// Why the remote tier cannot be used as configured, or an explicit
/// remote operation failed.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// An environment variable's value is not usable.
    #[error("{var}={value:?}: {reason}")]
    Setting {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
        /// What is wrong.
        reason: String,
    },
    /// A key file could not be read or written, is not one relok trusts
    /// (another user could change it: see [`keys`]), or holds no Ed25519
    /// key.
    #[error("key file {}: {problem}", .path.display())]
    KeyFile {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: keys::KeyProblem,
    },
    /// Both keys are configured and are not one pair.
    #[error("RELOK_REMOTE_SIGNING_KEY ({signing}) and RELOK_REMOTE_PUBLIC_KEY ({public}) are not one key pair")]
    KeysDisagree {
        /// The signing key's public id.
        signing: String,
        /// The public key's id.
        public: String,
    },
    /// A remote is named but no key is.
    #[error("no key configured: set RELOK_REMOTE_PUBLIC_KEY (to read) or RELOK_REMOTE_SIGNING_KEY (to read and write)")]
    NoKey,
    /// A write was asked of a process without the signing key.
    #[error("this process holds no signing key (RELOK_REMOTE_SIGNING_KEY): only a writer can push")]
    ReadOnly,
    /// The remote is off for this process (an earlier failure).
    #[error("the remote {url} is off for this process after an earlier failure")]
    Off {
        /// The remote.
        url: String,
    },
    /// Redis refused, could not be reached, timed out or sent what it
    /// should not have.
    #[error(transparent)]
    Redis(#[from] WireError),
}

/// How to reach the remote and which keys this process holds.
#[derive(Clone, Debug)]
pub struct RemoteConfig {
    /// `redis://[user:password@]host:port/db` (or `redis+unix://`).
    pub url: String,
    /// One exchange as a whole: connecting (when needed), one command or
    /// pipeline, and every byte of its replies.
    pub timeout: Duration,
    /// How long a process waits at exit for its queued writes.
    pub flush_timeout: Duration,
    /// The key entries must be signed with.
    pub verifier: VerifyingKey,
    /// The signing key: a writer has it, a reader does not.
    pub signer: Option<SigningKey>,
}

/// Milliseconds from `var`, if set.
fn millis(var: &'static str) -> Result<Option<Duration>, RemoteError> {
    match std::env::var(var) {
        Ok(v) if !v.trim().is_empty() => {
            v.trim().parse::<u64>().ok().filter(|&ms| ms > 0).map(|ms| Some(Duration::from_millis(ms))).ok_or_else(
                || RemoteError::Setting { var, value: v, reason: "not a positive number of milliseconds".into() },
            )
        }
        _ => Ok(None),
    }
}

impl RemoteConfig {
    /// A configuration with the default timeouts.
    pub fn new(url: &str, verifier: VerifyingKey, signer: Option<SigningKey>) -> RemoteConfig {
        RemoteConfig {
            url: url.to_owned(),
            timeout: DEFAULT_TIMEOUT,
            flush_timeout: DEFAULT_FLUSH_TIMEOUT,
            verifier,
            signer,
        }
    }

    /// The configuration the environment names: `None` when `RELOK_REMOTE`
    /// is unset or empty (then nothing else is read). Otherwise the keys
    /// (`RELOK_REMOTE_SIGNING_KEY`, `RELOK_REMOTE_PUBLIC_KEY`: paths; the
    /// public key is derived from the signing key when only that is given)
    /// and the timeouts (`RELOK_REMOTE_TIMEOUT_MS`,
    /// `RELOK_REMOTE_FLUSH_MS`). A key file another user could change, or
    /// that is not an Ed25519 key, is an error ([`keys`]).
    pub fn from_env() -> Result<Option<RemoteConfig>, RemoteError> {
        let url = match std::env::var("RELOK_REMOTE") {
            Ok(u) if !u.trim().is_empty() => u.trim().to_owned(),
            _ => return Ok(None),
        };
        let path = |var| std::env::var_os(var).filter(|v| !v.is_empty()).map(PathBuf::from);
        let signer = path("RELOK_REMOTE_SIGNING_KEY").map(|p| keys::read_signing_key(&p)).transpose()?;
        let public = path("RELOK_REMOTE_PUBLIC_KEY").map(|p| keys::read_public_key(&p)).transpose()?;
        let verifier = match (&signer, public) {
            (Some(s), Some(p)) if s.verifying_key() != p => {
                return Err(RemoteError::KeysDisagree {
                    signing: signed::key_id_hex(&s.verifying_key()),
                    public: signed::key_id_hex(&p),
                });
            }
            (_, Some(p)) => p,
            (Some(s), None) => s.verifying_key(),
            (None, None) => return Err(RemoteError::NoKey),
        };
        let mut c = RemoteConfig::new(&url, verifier, signer);
        if let Some(t) = millis("RELOK_REMOTE_TIMEOUT_MS")? {
            c.timeout = t;
        }
        if let Some(t) = millis("RELOK_REMOTE_FLUSH_MS")? {
            c.flush_timeout = t;
        }
        Ok(Some(c))
    }
}

/// `url` without its password (for messages).
fn redact(url: &str) -> String {
    wire::shown(url)
}

/// A queued write: a framed entry to sign and store under its name.
struct Job {
    name: String,
    entry: Vec<u8>,
    counters: Arc<RemoteCounters>,
}

/// What the writer thread shares with the process.
struct Shared {
    url: String,
    endpoint: Endpoint,
    timeout: Duration,
    off: AtomicBool,
    /// The reader's and the writer's connections, to end their exchanges
    /// in flight when the remote is switched off.
    hangups: Mutex<[Option<Hangup>; 2]>,
    /// Queued writes not finished yet.
    pending: Mutex<usize>,
    drained: Condvar,
}

/// Which of [`Shared::hangups`].
const READER: usize = 0;
const WRITER: usize = 1;

impl Shared {
    /// Switches the remote off for the rest of the process; the first time
    /// with one warning, and every exchange in flight ended. True when
    /// this call switched it off (false: it was off already, and `why` is
    /// most likely the end of an exchange cut short by that).
    fn switch_off(&self, why: &WireError) -> bool {
        if self.off.swap(true, Ordering::AcqRel) {
            return false;
        }
        tracing::warn!("remote cache off for the rest of this process: {why}");
        let hangups = std::mem::take(&mut *self.hangups.lock().unwrap_or_else(|e| e.into_inner()));
        for h in hangups.iter().flatten() {
            h.hang_up();
        }
        true
    }

    fn is_off(&self) -> bool {
        self.off.load(Ordering::Acquire)
    }

    /// A connection, within `d`; registered under `role` (to be ended if
    /// the remote is switched off), unless `role` is `None`.
    fn connect(&self, d: Deadline, role: Option<usize>) -> Result<Connection, WireError> {
        let con = Connection::open(&self.endpoint, d)?;
        if let Some(role) = role {
            self.hangups.lock().unwrap_or_else(|e| e.into_inner())[role] = con.hangup();
        }
        Ok(con)
    }

    fn finish_one(&self) {
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        *p = p.saturating_sub(1);
        if *p == 0 {
            self.drained.notify_all();
        }
    }
}

/// A process's connection to the remote (share one: `Arc<Remote>`; every
/// [`Store`](crate::Store) given it uses it).
pub struct Remote {
    shared: Arc<Shared>,
    flush_timeout: Duration,
    verifier: VerifyingKey,
    signer: Option<Arc<SigningKey>>,
    reader: Mutex<Option<Connection>>,
    writer: Mutex<Option<SyncSender<Job>>>,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote")
            .field("url", &self.shared.url)
            .field("key", &signed::key_id_hex(&self.verifier))
            .field("writer", &self.signer.is_some())
            .field("off", &self.shared.is_off())
            .finish_non_exhaustive()
    }
}

/// What one lookup of a name found.
pub(crate) enum Fetched {
    /// The value, at most the bound plus one byte.
    Value(Vec<u8>),
    /// No value under the name.
    Absent,
    /// Not a string value (WRONGTYPE): someone else's key under our name.
    WrongType,
    /// The remote failed (and is now off).
    Failed,
    /// The remote was off already.
    Off,
}

/// `GETRANGE name 0 bound`: at most `bound + 1` bytes.
fn getrange(out: &mut Vec<u8>, name: &str, bound: u64) {
    encode(out, &[b"GETRANGE", name.as_bytes(), b"0", bound.to_string().as_bytes()]);
}

/// A batch of [`Remote::put_now`] holds at most this many entries …
const PUT_BATCH: usize = 64;
/// … and at most this many bytes (or one entry).
const PUT_BATCH_BYTES: u64 = 4 << 20;

impl Remote {
    /// A remote for `config`. Parses the address; connects nothing (the
    /// first lookup does).
    pub fn open(config: RemoteConfig) -> Result<Remote, RemoteError> {
        let url = redact(&config.url);
        if config.url.starts_with("rediss://") {
            return Err(RemoteError::Setting {
                var: "RELOK_REMOTE",
                value: url,
                reason: "TLS (rediss://) is not built into relok; reach Redis over a private network or a TLS tunnel"
                    .into(),
            });
        }
        let endpoint = Endpoint::parse(&config.url).map_err(|reason| RemoteError::Setting {
            var: "RELOK_REMOTE",
            value: url.clone(),
            reason,
        })?;
        let shared = Shared {
            url: endpoint.shown().to_owned(),
            endpoint,
            timeout: config.timeout,
            off: AtomicBool::new(false),
            hangups: Mutex::default(),
            pending: Mutex::new(0),
            drained: Condvar::new(),
        };
        Ok(Remote {
            shared: Arc::new(shared),
            flush_timeout: config.flush_timeout,
            verifier: config.verifier,
            signer: config.signer.map(Arc::new),
            reader: Mutex::new(None),
            writer: Mutex::new(None),
        })
    }

    /// The address, without a password.
    pub fn url(&self) -> &str {
        &self.shared.url
    }

    /// Whether this process may write (holds the signing key).
    pub fn is_writer(&self) -> bool {
        self.signer.is_some()
    }

    /// Whether the remote was switched off by a failure.
    pub fn is_off(&self) -> bool {
        self.shared.is_off()
    }

    /// The trusted public key's id (hex).
    pub fn key_id(&self) -> String {
        signed::key_id_hex(&self.verifier)
    }

    /// The trusted public key.
    pub fn verifier(&self) -> &VerifyingKey {
        &self.verifier
    }

    /// The time limit of a flush at exit.
    pub fn flush_timeout(&self) -> Duration {
        self.flush_timeout
    }

    /// The time limit of one exchange.
    pub fn timeout(&self) -> Duration {
        self.shared.timeout
    }

    /// `Failed` after switching the remote off for `e`; `Off` when it was
    /// off already (another thread's failure cut this exchange short).
    fn fail(&self, e: &WireError) -> Fetched {
        if self.shared.switch_off(e) { Fetched::Failed } else { Fetched::Off }
    }

    /// Reads at most `bound + 1` bytes of `name`'s value (GETRANGE: one
    /// round trip, bounded before it starts; a longer reply is refused
    /// unread), connecting first if needed, all within one timeout.
    pub(crate) fn fetch(&self, name: &str, bound: u64) -> Fetched {
        let d = Deadline::after(self.shared.timeout);
        let mut slot = match self.connected_reader(d) {
            Ok(slot) => slot,
            Err(why) => return why,
        };
        let Some(con) = slot.as_mut() else { return Fetched::Off };
        let mut cmd = Vec::new();
        getrange(&mut cmd, name, bound);
        let fetched = match con.send(&cmd, d).and_then(|()| con.reply(bound.saturating_add(1), d)) {
            Ok(reply) => self.fetched(con, reply),
            Err(e) => self.fail(&e),
        };
        if matches!(fetched, Fetched::Failed | Fetched::Off) {
            *slot = None;
        }
        fetched
    }

    /// The reader's connection, locked, connected first (within `d`) if it
    /// was not: `Off` when the remote is off (checked after the lock:
    /// another thread may have switched it off meanwhile), `Failed` when
    /// connecting fails (which switches it off).
    fn connected_reader(&self, d: Deadline) -> Result<std::sync::MutexGuard<'_, Option<Connection>>, Fetched> {
        let mut slot = self.reader.lock().unwrap_or_else(|e| e.into_inner());
        if self.shared.is_off() {
            return Err(Fetched::Off);
        }
        if slot.is_none() {
            match self.shared.connect(d, Some(READER)) {
                Ok(c) => *slot = Some(c),
                Err(e) => return Err(self.fail(&e)),
            }
        }
        Ok(slot)
    }

    /// What one GETRANGE reply means; a reply other than a string or a
    /// wrong type switches the remote off.
    fn fetched(&self, con: &Connection, reply: Reply) -> Fetched {
        match reply {
            Reply::Bulk(v) if v.is_empty() => Fetched::Absent,
            Reply::Bulk(v) => Fetched::Value(v),
            Reply::Nil => Fetched::Absent,
            Reply::Error(e) if e.starts_with("WRONGTYPE") => Fetched::WrongType,
            Reply::Error(message) => {
                self.fail(&WireError::Refused { url: self.shared.url.clone(), command: "GETRANGE".into(), message })
            }
            other => self.fail(&con.unexpected(&other, "a bulk string")),
        }
    }

    /// [`Remote::fetch`] of many names in one round trip (a pipeline, one
    /// timeout for the whole of it); each reply is handed to `each` (with
    /// its index) as it arrives, so only one is held at a time.
    pub(crate) fn fetch_many(&self, names: &[String], bound: u64, mut each: impl FnMut(usize, Fetched)) {
        if names.is_empty() {
            return;
        }
        let d = Deadline::after(self.shared.timeout);
        let rest_off = |from: usize, each: &mut dyn FnMut(usize, Fetched)| {
            for i in from..names.len() {
                each(i, Fetched::Off);
            }
        };
        let mut slot = match self.connected_reader(d) {
            Ok(slot) => slot,
            Err(why) => {
                each(0, why);
                return rest_off(1, &mut each);
            }
        };
        let Some(con) = slot.as_mut() else { return rest_off(0, &mut each) };
        let mut cmds = Vec::new();
        for n in names {
            getrange(&mut cmds, n, bound);
        }
        if let Err(e) = con.send(&cmds, d) {
            *slot = None;
            each(0, self.fail(&e));
            return rest_off(1, &mut each);
        }
        // Each reply on its own: a value of the wrong type is that name's
        // rejection; any other error, or a connection failure, the
        // remote's (and the rest are not read).
        for i in 0..names.len() {
            let fetched = match con.reply(bound.saturating_add(1), d) {
                Ok(reply) => self.fetched(con, reply),
                Err(e) => self.fail(&e),
            };
            let failed = matches!(fetched, Fetched::Failed | Fetched::Off);
            each(i, fetched);
            if failed {
                *slot = None;
                return rest_off(i + 1, &mut each);
            }
        }
    }

    /// Queues `entry` (framed) to be signed and written under `name` by the
    /// writer thread (started on the first call). False when it was not
    /// queued: no signing key, the remote is off, or the queue is full.
    pub(crate) fn enqueue(&self, name: String, entry: Vec<u8>, counters: &Arc<RemoteCounters>) -> bool {
        let Some(signer) = &self.signer else { return false };
        if self.shared.is_off() {
            return false;
        }
        let mut slot = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            let (tx, rx) = mpsc::sync_channel(QUEUE_LEN);
            let (shared, signer) = (Arc::clone(&self.shared), Arc::clone(signer));
            let started = std::thread::Builder::new()
                .name("relok-remote-writer".into())
                .spawn(move || write_loop(&shared, &signer, rx));
            if started.is_err() {
                return false;
            }
            *slot = Some(tx);
        }
        let Some(tx) = slot.as_ref() else { return false };
        *self.shared.pending.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        match tx.try_send(Job { name, entry, counters: Arc::clone(counters) }) {
            Ok(()) => true,
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.shared.finish_one();
                false
            }
        }
    }

    /// Waits until every queued write is done or `limit` has passed;
    /// returns how many are left.
    pub fn flush(&self, limit: Duration) -> usize {
        let deadline = Instant::now() + limit;
        let mut p = self.shared.pending.lock().unwrap_or_else(|e| e.into_inner());
        while *p > 0 {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            p = self
                .shared
                .drained
                .wait_timeout(p, deadline - now)
                .map(|(g, _)| g)
                .unwrap_or_else(|e| e.into_inner().0);
        }
        *p
    }

    /// Signs and writes framed entries now, on a connection of its own
    /// (`relok cache push`), pipelined in batches (at most 64 entries and
    /// 4 MiB, or one larger entry), each batch one exchange within the
    /// timeout. Returns the bytes written.
    pub fn put_now(&self, items: &[(String, Vec<u8>)]) -> Result<u64, RemoteError> {
        let signer = self.signer.as_ref().ok_or(RemoteError::ReadOnly)?;
        let mut con: Option<Connection> = None;
        let mut bytes = 0;
        let mut rest = items;
        while !rest.is_empty() {
            let mut n = 0;
            let mut size = 0;
            while n < rest.len() && n < PUT_BATCH && (n == 0 || size + rest[n].1.len() as u64 <= PUT_BATCH_BYTES) {
                size += rest[n].1.len() as u64;
                n += 1;
            }
            let (batch, after) = rest.split_at(n);
            rest = after;
            let d = Deadline::after(self.shared.timeout);
            let c = match &mut con {
                Some(c) => c,
                None => con.insert(self.shared.connect(d, None)?),
            };
            let mut cmds = Vec::new();
            for (name, entry) in batch {
                let value = signed::seal(signer, name, entry);
                bytes += value.len() as u64;
                encode(&mut cmds, &[b"SET", name.as_bytes(), &value]);
            }
            c.send(&cmds, d)?;
            for _ in batch {
                c.expect_ok("SET", d)?;
            }
        }
        Ok(bytes)
    }

    /// Runs `cmd` on a connection of its own, within the timeout, and
    /// returns its reply as text (`INFO`, `DBSIZE`: for reports and
    /// benchmarks; at most 1 MiB).
    pub fn query_text(&self, cmd: &[&str]) -> Result<String, RemoteError> {
        let d = Deadline::after(self.shared.timeout);
        let mut con = self.shared.connect(d, None)?;
        let mut c = Vec::new();
        encode(&mut c, &cmd.iter().map(|a| a.as_bytes()).collect::<Vec<_>>());
        con.send(&c, d)?;
        Ok(match con.reply(1 << 20, d)? {
            Reply::Int(n) => n.to_string(),
            Reply::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
            Reply::Status(s) => s,
            Reply::Nil => "(nil)".into(),
            Reply::Error(message) => {
                let command = cmd.first().copied().unwrap_or_default().to_owned();
                return Err(WireError::Refused { url: self.shared.url.clone(), command, message }.into());
            }
        })
    }
}

/// Signs `job` and writes it on `con` (connected first, if needed), all
/// within one timeout.
fn write_one(shared: &Shared, con: &mut Option<Connection>, value: &[u8], name: &str) -> Result<(), WireError> {
    let d = Deadline::after(shared.timeout);
    let c = match con {
        Some(c) => c,
        None => con.insert(shared.connect(d, Some(WRITER))?),
    };
    let mut cmd = Vec::new();
    encode(&mut cmd, &[b"SET", name.as_bytes(), value]);
    c.send(&cmd, d)?;
    c.expect_ok("SET", d)
}

/// The writer thread: signs and writes each queued entry; after a failure
/// the remote is off and the rest are dropped (counted).
fn write_loop(shared: &Shared, signer: &SigningKey, rx: Receiver<Job>) {
    let mut con: Option<Connection> = None;
    for job in rx {
        let written = if shared.is_off() {
            false
        } else {
            let value = signed::seal(signer, &job.name, &job.entry);
            match write_one(shared, &mut con, &value, &job.name) {
                Ok(()) => {
                    job.counters.add(RemoteCounter::Writes, 1);
                    job.counters.add(RemoteCounter::BytesWritten, value.len() as u64);
                    true
                }
                Err(e) => {
                    con = None;
                    if shared.switch_off(&e) {
                        job.counters.add(RemoteCounter::Errors, 1);
                    }
                    false
                }
            }
        };
        if !written {
            job.counters.add(RemoteCounter::Dropped, 1);
        }
        shared.finish_one();
    }
}

/// A store's use of a remote: its names, its counters.
#[derive(Debug)]
pub(crate) struct Tier {
    pub(crate) remote: Arc<Remote>,
    /// `relok:<family>/<folder>/`.
    prefix: String,
    pub(crate) counters: Arc<RemoteCounters>,
    /// Keys this process took from the remote (a caller's `reject` of one
    /// counts against the remote, not the local store).
    served: Mutex<HashSet<Key>>,
    /// What of the counters was last appended to the store's stats log.
    pub(crate) flushed: Mutex<RemoteStats>,
}

/// The most bytes a remote value holding an entry of at most `bound` bytes
/// has: the entry and its signature block.
fn value_bound(bound: u64) -> u64 {
    bound.saturating_add(signed::HEADER as u64)
}

/// What [`Tier::get`] found.
pub(crate) enum TierLookup {
    /// A framed entry that verified (signature; the caller checks the
    /// entry).
    Entry(Vec<u8>),
    /// Nothing usable; counted.
    Miss,
}

impl Tier {
    pub(crate) fn new(remote: Arc<Remote>, family: &str, folder: &str) -> Tier {
        Tier {
            remote,
            prefix: format!("relok:{family}/{folder}/"),
            counters: Arc::default(),
            served: Mutex::default(),
            flushed: Mutex::default(),
        }
    }

    /// The name of `key`'s entry in the remote.
    pub(crate) fn name(&self, key: Key) -> String {
        format!("{}{key}", self.prefix)
    }

    /// Looks `key` up; `check` checks the framed entry (kind, identity,
    /// key, checksum) and says why it is not valid. At most `bound` bytes
    /// of entry (and its signature block).
    pub(crate) fn get(&self, key: Key, bound: u64, check: impl Fn(Key, &[u8]) -> Result<(), String>) -> TierLookup {
        let name = self.name(key);
        let bound = value_bound(bound);
        let start = Instant::now();
        let fetched = self.remote.fetch(&name, bound);
        self.counters.add(RemoteCounter::GetUs, start.elapsed().as_micros() as u64);
        self.judge(key, &name, fetched, bound, &check)
    }

    /// [`Tier::get`] of many keys in one round trip (a pipeline of
    /// GETRANGEs), in order.
    pub(crate) fn get_many(
        &self,
        keys: &[Key],
        bound: u64,
        check: impl Fn(Key, &[u8]) -> Result<(), String>,
    ) -> Vec<TierLookup> {
        let names: Vec<String> = keys.iter().map(|&k| self.name(k)).collect();
        let bound = value_bound(bound);
        let start = Instant::now();
        // Judged as each reply arrives: a rejected value is dropped before
        // the next one is read.
        let mut found = Vec::with_capacity(keys.len());
        self.remote.fetch_many(&names, bound, |i, f| found.push(self.judge(keys[i], &names[i], f, bound, &check)));
        self.counters.add(RemoteCounter::GetUs, start.elapsed().as_micros() as u64);
        found
    }

    /// What a fetched value is worth: verified, counted.
    fn judge(
        &self,
        key: Key,
        name: &str,
        fetched: Fetched,
        bound: u64,
        check: &impl Fn(Key, &[u8]) -> Result<(), String>,
    ) -> TierLookup {
        use RemoteCounter as C;
        let c = &self.counters;
        let reject = |why: String| {
            tracing::warn!("remote cache entry {name} rejected: {why}; compiling it here");
            c.add(C::Rejected, 1);
            TierLookup::Miss
        };
        match fetched {
            Fetched::Off => TierLookup::Miss,
            Fetched::Absent => {
                c.add(C::Misses, 1);
                TierLookup::Miss
            }
            Fetched::Failed => {
                c.add(C::Errors, 1);
                TierLookup::Miss
            }
            Fetched::WrongType => reject("not a string value".into()),
            Fetched::Value(v) if v.len() as u64 > bound => {
                let cap = bound.saturating_sub(signed::HEADER as u64);
                reject(format!("larger than this store's cap of {cap} bytes (and the signature block)"))
            }
            Fetched::Value(v) => match signed::open(&self.remote.verifier, name, &v) {
                Err(e) => reject(e.to_string()),
                Ok(entry) => match check(key, entry) {
                    Err(why) => reject(why),
                    Ok(()) => {
                        c.add(C::Hits, 1);
                        c.add(C::BytesRead, v.len() as u64);
                        self.served.lock().unwrap_or_else(|e| e.into_inner()).insert(key);
                        TierLookup::Entry(entry.to_vec())
                    }
                },
            },
        }
    }

    /// Queues a framed entry for the remote (writers only).
    pub(crate) fn put(&self, key: Key, entry: Vec<u8>) {
        if !self.remote.is_writer() {
            return;
        }
        if !self.remote.enqueue(self.name(key), entry, &self.counters) {
            self.counters.add(RemoteCounter::Dropped, 1);
        }
    }

    /// Whether `key` came from the remote in this process; if so, its hit
    /// becomes a rejection (the caller could not use the payload).
    pub(crate) fn take_back(&self, key: Key) -> bool {
        if self.served.lock().unwrap_or_else(|e| e.into_inner()).remove(&key) {
            self.counters.sub(RemoteCounter::Hits, 1);
            self.counters.add(RemoteCounter::Rejected, 1);
            true
        } else {
            false
        }
    }

    pub(crate) fn stats(&self) -> RemoteStats {
        self.counters.snapshot()
    }
}
