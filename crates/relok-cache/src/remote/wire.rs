//! The Redis protocol (RESP2), as much of it as the remote tier speaks,
//! under one deadline per exchange.
//!
//! An **exchange** is connecting (when there is no connection yet: the
//! address resolved, TCP or Unix socket connected, `AUTH` and `SELECT`
//! sent and answered), then one command or one pipeline of commands
//! written, then every reply read whole. The whole of it is bounded by one
//! [`Deadline`]: before each read or write the socket's timeout is set to
//! what is left of it, so a server that answers nothing, or one byte at a
//! time, or accepts a connection and never reads, costs at most the
//! timeout, never a timeout per read. (A Unix socket's connect is not
//! bounded: it is local, and returns at once unless the server's backlog
//! is full.)
//!
//! A reply is bounded before it is read: a bulk string's length header is
//! checked against the limit the caller gives (a GETRANGE's own bound) and
//! a longer one is refused unread; a bulk string's buffer grows with the
//! bytes that arrive (at most 64 KiB ahead of them), so a header that
//! promises a large reply and sends nothing costs nothing. A status or
//! error line is at most [`MAX_LINE`] bytes; a reply that does not start
//! with one of RESP2's type bytes (`+ - : $`; arrays are never asked for)
//! is garbage and ends the exchange at once.
//!
//! Why not the `redis` crate (used before): its connection sets one
//! timeout per read, and its pipelines read every reply even after one
//! timed out, so a server that never answered cost a timeout for each of
//! the two `CLIENT SETINFO` commands it sends at connect (and 64 for a
//! pull's pipeline); its parser also took a bulk header's length at its
//! word. The tier needs five commands (GETRANGE, SET, AUTH, SELECT, and
//! INFO or DBSIZE for reports), which fit here.

use std::io::{self, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// A status or error line longer than this is garbage.
pub const MAX_LINE: usize = 16 << 10;
/// The read buffer (and how far a bulk string's buffer grows ahead of the
/// bytes received).
const CHUNK: usize = 64 << 10;

/// Why an exchange with the remote failed. Each message names the remote
/// (without its password).
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// The exchange did not finish within the timeout.
    #[error("timed out after {} ms talking to {url}", .limit.as_millis())]
    TimedOut {
        /// The remote.
        url: String,
        /// The timeout.
        limit: Duration,
    },
    /// The address could not be resolved or connected to.
    #[error("cannot connect to {url}: {source}")]
    Connect {
        /// The remote.
        url: String,
        /// What the system said.
        source: io::Error,
    },
    /// Reading or writing failed.
    #[error("lost the connection to {url}: {source}")]
    Io {
        /// The remote.
        url: String,
        /// What the system said.
        source: io::Error,
    },
    /// The server closed the connection before its reply was whole.
    #[error("{url} closed the connection")]
    Closed {
        /// The remote.
        url: String,
    },
    /// A bulk string longer than the caller's limit: refused unread.
    #[error("{url} announced a reply of {len} bytes, more than the {limit} bytes asked for (refused unread)")]
    TooLarge {
        /// The remote.
        url: String,
        /// The length the reply's header announced.
        len: u64,
        /// The most the command can return.
        limit: u64,
    },
    /// Bytes that are not a RESP2 reply.
    #[error("{url} does not speak Redis: {what}")]
    Garbage {
        /// The remote.
        url: String,
        /// What was wrong.
        what: Garbage,
    },
    /// The server refused a command that must succeed (`AUTH`, `SELECT`,
    /// `SET`, …).
    #[error("{url} refused {command}: {message}")]
    Refused {
        /// The remote.
        url: String,
        /// The command.
        command: String,
        /// The server's error line.
        message: String,
    },
}

/// What made a reply unreadable.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Garbage {
    /// Not one of RESP2's type bytes.
    #[error("a reply starting with byte {0:#04x}")]
    Type(u8),
    /// No line end within [`MAX_LINE`] bytes.
    #[error("a line longer than {MAX_LINE} bytes")]
    LongLine,
    /// A length or integer that is not a number.
    #[error("{0:?} is not a number")]
    Number(String),
    /// A bulk string not followed by CRLF.
    #[error("a bulk string not ended by CRLF")]
    Unterminated,
    /// A reply of another type than the command returns.
    #[error("{found} where {expected} was expected")]
    Unexpected {
        /// The reply's type.
        found: &'static str,
        /// What the command returns.
        expected: &'static str,
    },
}

/// When the current exchange must be over.
#[derive(Clone, Copy, Debug)]
pub struct Deadline {
    at: Instant,
    limit: Duration,
}

impl Deadline {
    /// `limit` from now.
    pub fn after(limit: Duration) -> Deadline {
        Deadline { at: Instant::now() + limit, limit }
    }

    /// The time left; `None` once it has passed.
    fn left(&self) -> Option<Duration> {
        self.at.checked_duration_since(Instant::now()).filter(|d| !d.is_zero())
    }
}

/// Where the remote listens: `RELOK_REMOTE` parsed.
#[derive(Clone, Debug)]
pub struct Endpoint {
    place: Place,
    user: Option<String>,
    password: Option<String>,
    db: u64,
    /// The address without its password, for messages.
    shown: String,
}

#[derive(Clone, Debug)]
enum Place {
    Tcp { host: String, port: u16 },
    Unix(PathBuf),
}

/// `%XX` escapes decoded (user names and passwords in a URL).
fn percent_decode(s: &str) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(h, 16).ok());
            out.push(hex.ok_or_else(|| format!("bad %-escape at byte {i}"))?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "a %-escape that is not UTF-8".to_owned())
}

/// `url` with its password replaced by `…`.
pub(crate) fn shown(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => format!("{}://…@{}", &url[..s], &url[at + 1..]),
        _ => url.to_owned(),
    }
}

impl Endpoint {
    /// Parses `redis://[user[:password]@]host[:port][/db]` (port 6379 by
    /// default, db 0; `[…]` around an IPv6 address) or
    /// `redis+unix:///path[?db=N][&user=U][&pass=P]` (also `unix://`).
    /// The error says what is wrong.
    pub fn parse(url: &str) -> Result<Endpoint, String> {
        if let Some(rest) = url.strip_prefix("redis://") {
            let (authority, path) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
            if path.contains('?') {
                return Err("query parameters are not read in a redis:// address".into());
            }
            let (userinfo, hostport) = match authority.rfind('@') {
                Some(at) => (Some(&authority[..at]), &authority[at + 1..]),
                None => (None, authority),
            };
            let (user, password) = match userinfo {
                None => (None, None),
                Some(u) => match u.split_once(':') {
                    Some((user, pass)) => (Some(percent_decode(user)?), Some(percent_decode(pass)?)),
                    None => (Some(percent_decode(u)?), None),
                },
            };
            let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
                let (h, after) = v6.split_once(']').ok_or("an IPv6 address without its closing ']'")?;
                (h, after.strip_prefix(':'))
            } else {
                match hostport.rsplit_once(':') {
                    Some((h, p)) => (h, Some(p)),
                    None => (hostport, None),
                }
            };
            if host.is_empty() {
                return Err("no host".into());
            }
            let port = match port {
                None => 6379,
                Some(p) => p.parse::<u16>().map_err(|_| format!("port {p:?} is not a port number"))?,
            };
            let db = match path.trim_start_matches('/') {
                "" => 0,
                d => d.parse::<u64>().map_err(|_| format!("database {d:?} is not a number"))?,
            };
            // An empty user or password is none (`redis://:pw@h`, `redis://u:@h`).
            let user = user.filter(|u| !u.is_empty());
            let password = password.filter(|p| !p.is_empty());
            Ok(Endpoint { place: Place::Tcp { host: host.to_owned(), port }, user, password, db, shown: shown(url) })
        } else if let Some(rest) = url.strip_prefix("redis+unix://").or_else(|| url.strip_prefix("unix://")) {
            let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
            if path.is_empty() {
                return Err("no socket path".into());
            }
            let mut e = Endpoint {
                place: Place::Unix(PathBuf::from(path)),
                user: None,
                password: None,
                db: 0,
                shown: String::new(),
            };
            for kv in query.split('&').filter(|kv| !kv.is_empty()) {
                match kv.split_once('=') {
                    Some(("db", d)) => e.db = d.parse().map_err(|_| format!("database {d:?} is not a number"))?,
                    Some(("user", u)) => e.user = Some(percent_decode(u)?),
                    Some(("pass", p)) => e.password = Some(percent_decode(p)?),
                    _ => return Err(format!("unknown parameter {kv:?} (db, user, pass)")),
                }
            }
            e.shown = match query.find("pass=") {
                Some(_) => format!("{}://{path}?…", &url[..url.find("://").unwrap_or(0)]),
                None => url.to_owned(),
            };
            Ok(e)
        } else {
            Err("not a redis:// or redis+unix:// address".into())
        }
    }

    /// The address without its password.
    pub fn shown(&self) -> &str {
        &self.shown
    }
}

/// A connected socket.
#[derive(Debug)]
enum Stream {
    Tcp(TcpStream),
    #[cfg(unix)]
    Unix(std::os::unix::net::UnixStream),
}

impl Stream {
    fn set_read_timeout(&self, t: Duration) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_read_timeout(Some(t)),
            #[cfg(unix)]
            Stream::Unix(s) => s.set_read_timeout(Some(t)),
        }
    }

    fn set_write_timeout(&self, t: Duration) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_write_timeout(Some(t)),
            #[cfg(unix)]
            Stream::Unix(s) => s.set_write_timeout(Some(t)),
        }
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            #[cfg(unix)]
            Stream::Unix(s) => s.read(buf),
        }
    }

    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            #[cfg(unix)]
            Stream::Unix(s) => s.write(buf),
        }
    }

    fn try_clone(&self) -> io::Result<Stream> {
        Ok(match self {
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
            #[cfg(unix)]
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
        })
    }
}

/// A handle that ends a connection's exchange in flight from another
/// thread (the socket shut down: a blocked read returns at once).
#[derive(Debug)]
pub struct Hangup(Stream);

impl Hangup {
    /// Shuts the connection down.
    pub fn hang_up(&self) {
        let _ = match &self.0 {
            Stream::Tcp(s) => s.shutdown(Shutdown::Both),
            #[cfg(unix)]
            Stream::Unix(s) => s.shutdown(Shutdown::Both),
        };
    }
}

/// One reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// `+…`.
    Status(String),
    /// `-…`: the server's error line.
    Error(String),
    /// `:…`.
    Int(i64),
    /// `$…`.
    Bulk(Vec<u8>),
    /// `$-1`.
    Nil,
}

impl Reply {
    /// The reply's type, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Reply::Status(_) => "a status",
            Reply::Error(_) => "an error",
            Reply::Int(_) => "an integer",
            Reply::Bulk(_) => "a bulk string",
            Reply::Nil => "a nil",
        }
    }
}

/// Appends a command (an array of bulk strings) to `out`.
pub fn encode(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// A connection to the remote.
#[derive(Debug)]
pub struct Connection {
    stream: Stream,
    url: String,
    buf: Vec<u8>,
    /// `buf[start..end]` is read and not consumed yet.
    start: usize,
    end: usize,
}

/// `host:port` resolved within the deadline (a resolver that hangs is
/// left behind on its own thread).
fn resolve(host: &str, port: u16, d: Deadline, url: &str) -> Result<Vec<SocketAddr>, WireError> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let timed_out = || WireError::TimedOut { url: url.to_owned(), limit: d.limit };
    let (tx, rx) = std::sync::mpsc::channel();
    let name = host.to_owned();
    let spawned = std::thread::Builder::new().name("relok-remote-resolve".into()).spawn(move || {
        let _ = tx.send((name.as_str(), port).to_socket_addrs().map(Iterator::collect::<Vec<_>>));
    });
    let found = match spawned {
        Ok(_) => rx.recv_timeout(d.left().ok_or_else(timed_out)?).map_err(|_| timed_out())?,
        Err(_) => (host, port).to_socket_addrs().map(Iterator::collect),
    };
    found.map_err(|source| WireError::Connect { url: url.to_owned(), source })
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut)
}

impl Connection {
    /// Connects to `ep` and authenticates (`AUTH`, `SELECT`), within `d`.
    pub fn open(ep: &Endpoint, d: Deadline) -> Result<Connection, WireError> {
        let url = ep.shown.clone();
        let timed_out = || WireError::TimedOut { url: url.clone(), limit: d.limit };
        let stream = match &ep.place {
            Place::Tcp { host, port } => {
                let mut last = None;
                let mut connected = None;
                for addr in resolve(host, *port, d, &url)? {
                    let left = d.left().ok_or_else(timed_out)?;
                    match TcpStream::connect_timeout(&addr, left) {
                        Ok(s) => {
                            let _ = s.set_nodelay(true);
                            connected = Some(s);
                            break;
                        }
                        Err(e) if is_timeout(&e) => last = Some(None),
                        Err(e) => last = Some(Some(e)),
                    }
                }
                match (connected, last) {
                    (Some(s), _) => Stream::Tcp(s),
                    (None, Some(None)) => return Err(timed_out()),
                    (None, Some(Some(source))) => return Err(WireError::Connect { url, source }),
                    (None, None) => {
                        let source = io::Error::new(io::ErrorKind::NotFound, "the name has no address");
                        return Err(WireError::Connect { url, source });
                    }
                }
            }
            #[cfg(unix)]
            Place::Unix(path) => Stream::Unix(
                std::os::unix::net::UnixStream::connect(path)
                    .map_err(|source| WireError::Connect { url: url.clone(), source })?,
            ),
            #[cfg(not(unix))]
            Place::Unix(_) => {
                let source = io::Error::new(io::ErrorKind::Unsupported, "no Unix sockets on this system");
                return Err(WireError::Connect { url, source });
            }
        };
        let mut con = Connection { stream, url, buf: vec![0; CHUNK], start: 0, end: 0 };
        let mut hello = Vec::new();
        let mut asked = Vec::new();
        if let Some(pass) = &ep.password {
            match &ep.user {
                Some(user) => encode(&mut hello, &[b"AUTH", user.as_bytes(), pass.as_bytes()]),
                None => encode(&mut hello, &[b"AUTH", pass.as_bytes()]),
            }
            asked.push("AUTH");
        }
        if ep.db != 0 {
            encode(&mut hello, &[b"SELECT", ep.db.to_string().as_bytes()]);
            asked.push("SELECT");
        }
        if !hello.is_empty() {
            con.send(&hello, d)?;
            for command in asked {
                con.expect_ok(command, d)?;
            }
        }
        Ok(con)
    }

    /// A handle that can end this connection's exchanges from another
    /// thread; `None` if the socket cannot be shared.
    pub fn hangup(&self) -> Option<Hangup> {
        self.stream.try_clone().ok().map(Hangup)
    }

    fn timed_out(&self, d: Deadline) -> WireError {
        WireError::TimedOut { url: self.url.clone(), limit: d.limit }
    }

    fn io(&self, e: io::Error, d: Deadline) -> WireError {
        if is_timeout(&e) { self.timed_out(d) } else { WireError::Io { url: self.url.clone(), source: e } }
    }

    fn garbage(&self, what: Garbage) -> WireError {
        WireError::Garbage { url: self.url.clone(), what }
    }

    /// Writes `bytes` (encoded commands) whole, within `d`.
    pub fn send(&mut self, bytes: &[u8], d: Deadline) -> Result<(), WireError> {
        let mut off = 0;
        while off < bytes.len() {
            let left = d.left().ok_or_else(|| self.timed_out(d))?;
            self.stream.set_write_timeout(left).map_err(|e| self.io(e, d))?;
            match self.stream.write(&bytes[off..]) {
                Ok(0) => return Err(WireError::Closed { url: self.url.clone() }),
                Ok(n) => off += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io(e, d)),
            }
        }
        Ok(())
    }

    /// Reads more bytes into the buffer (at least one), within `d`.
    fn fill(&mut self, d: Deadline) -> Result<(), WireError> {
        if self.start == self.end {
            (self.start, self.end) = (0, 0);
        } else if self.end == self.buf.len() {
            self.buf.copy_within(self.start..self.end, 0);
            (self.start, self.end) = (0, self.end - self.start);
        }
        loop {
            let left = d.left().ok_or_else(|| self.timed_out(d))?;
            self.stream.set_read_timeout(left).map_err(|e| self.io(e, d))?;
            let end = self.end;
            match self.stream.read(&mut self.buf[end..]) {
                Ok(0) => return Err(WireError::Closed { url: self.url.clone() }),
                Ok(n) => {
                    self.end += n;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io(e, d)),
            }
        }
    }

    /// One line without its CRLF, at most [`MAX_LINE`] bytes.
    fn line(&mut self, d: Deadline) -> Result<String, WireError> {
        let mut scanned: usize = 0;
        loop {
            let have = &self.buf[self.start..self.end];
            if let Some(i) = have[scanned.saturating_sub(1)..].windows(2).position(|w| w == b"\r\n") {
                let i = scanned.saturating_sub(1) + i;
                let text = String::from_utf8_lossy(&have[..i]).into_owned();
                self.start += i + 2;
                return Ok(text);
            }
            scanned = have.len();
            if scanned > MAX_LINE {
                return Err(self.garbage(Garbage::LongLine));
            }
            self.fill(d)?;
        }
    }

    fn number(&self, text: &str) -> Result<i64, WireError> {
        text.parse::<i64>().map_err(|_| self.garbage(Garbage::Number(text.chars().take(40).collect())))
    }

    /// Reads one reply; a bulk string longer than `limit` is refused before
    /// a byte of it is read.
    pub fn reply(&mut self, limit: u64, d: Deadline) -> Result<Reply, WireError> {
        if self.start == self.end {
            self.fill(d)?;
        }
        let kind = self.buf[self.start];
        match kind {
            b'+' | b'-' | b':' | b'$' => self.start += 1,
            other => return Err(self.garbage(Garbage::Type(other))),
        }
        let line = self.line(d)?;
        match kind {
            b'+' => Ok(Reply::Status(line)),
            b'-' => Ok(Reply::Error(line)),
            b':' => Ok(Reply::Int(self.number(&line)?)),
            _ => {
                let len = self.number(&line)?;
                if len == -1 {
                    return Ok(Reply::Nil);
                }
                let len = u64::try_from(len).map_err(|_| self.garbage(Garbage::Number(line.clone())))?;
                if len > limit {
                    return Err(WireError::TooLarge { url: self.url.clone(), len, limit });
                }
                let len = usize::try_from(len).map_err(|_| self.garbage(Garbage::Number(line)))?;
                let mut data = Vec::with_capacity(len.min(CHUNK));
                while data.len() < len {
                    if self.start == self.end {
                        self.fill(d)?;
                    }
                    let take = (len - data.len()).min(self.end - self.start);
                    if data.capacity() - data.len() < take {
                        // Doubling, but never past the announced length.
                        let want = (data.len() * 2).max(CHUNK).min(len).max(data.len() + take);
                        data.reserve_exact(want - data.len());
                    }
                    data.extend_from_slice(&self.buf[self.start..self.start + take]);
                    self.start += take;
                }
                while self.end - self.start < 2 {
                    self.fill(d)?;
                }
                if &self.buf[self.start..self.start + 2] != b"\r\n" {
                    return Err(self.garbage(Garbage::Unterminated));
                }
                self.start += 2;
                Ok(Reply::Bulk(data))
            }
        }
    }

    /// Reads a reply that must be `+OK`.
    pub fn expect_ok(&mut self, command: &str, d: Deadline) -> Result<(), WireError> {
        match self.reply(MAX_LINE as u64, d)? {
            Reply::Status(_) => Ok(()),
            Reply::Error(message) => {
                Err(WireError::Refused { url: self.url.clone(), command: command.to_owned(), message })
            }
            other => Err(self.garbage(Garbage::Unexpected { found: other.kind(), expected: "a status" })),
        }
    }

    /// `garbage(Unexpected)` for a reply the caller could not use.
    pub fn unexpected(&self, found: &Reply, expected: &'static str) -> WireError {
        self.garbage(Garbage::Unexpected { found: found.kind(), expected })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn addresses_parse() {
        let e = Endpoint::parse("redis://u%40x:p%3Aw@cache.internal:6380/3").unwrap();
        assert!(matches!(&e.place, Place::Tcp { host, port: 6380 } if host == "cache.internal"));
        assert_eq!((e.user.as_deref(), e.password.as_deref(), e.db), (Some("u@x"), Some("p:w"), 3));
        assert_eq!(e.shown(), "redis://…@cache.internal:6380/3");
        let e = Endpoint::parse("redis://:secret@[::1]/").unwrap();
        assert!(matches!(&e.place, Place::Tcp { host, port: 6379 } if host == "::1"));
        assert_eq!((e.user.as_deref(), e.password.as_deref(), e.db), (None, Some("secret"), 0));
        let e = Endpoint::parse("redis://u:@h").unwrap();
        assert_eq!((e.user.as_deref(), e.password.as_deref(), e.db), (Some("u"), None, 0));
        let e = Endpoint::parse("redis+unix:///run/redis.sock?db=2&pass=sekrit").unwrap();
        assert!(matches!(&e.place, Place::Unix(p) if p == std::path::Path::new("/run/redis.sock")));
        assert_eq!((e.db, e.password.as_deref()), (2, Some("sekrit")));
        assert!(!e.shown().contains("sekrit"), "{}", e.shown());
        for (bad, why) in [
            ("http://h:1", "not a redis://"),
            ("redis://h:99999/0", "not a port number"),
            ("redis://h:1/zero", "not a number"),
            ("redis://:1/0", "no host"),
            ("redis://[::1:1/0", "closing"),
            ("redis://h:1/0?protocol=resp3", "query"),
            ("redis+unix:///s?color=red", "unknown parameter"),
            ("redis://u:%zz@h/0", "%-escape"),
        ] {
            let e = Endpoint::parse(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    /// A server that answers each connection with `reply` (after reading
    /// whatever comes), then keeps it open.
    fn server(reply: &'static [u8]) -> Endpoint {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for s in l.incoming().flatten() {
                std::thread::spawn(move || {
                    let mut s = s;
                    let mut b = [0; 4096];
                    let _ = s.read(&mut b);
                    let _ = s.write_all(reply);
                    while s.read(&mut b).map(|n| n > 0).unwrap_or(false) {}
                });
            }
        });
        Endpoint::parse(&format!("redis://127.0.0.1:{port}/0")).unwrap()
    }

    fn ask(ep: &Endpoint, limit: u64) -> Result<Reply, WireError> {
        let d = Deadline::after(Duration::from_millis(300));
        let mut c = Connection::open(ep, d)?;
        let mut cmd = Vec::new();
        encode(&mut cmd, &[b"GETRANGE", b"k", b"0", b"9"]);
        c.send(&cmd, d)?;
        c.reply(limit, d)
    }

    #[test]
    fn replies_parse_and_bounds_hold() {
        assert_eq!(ask(&server(b"$5\r\nhello\r\n"), 10).unwrap(), Reply::Bulk(b"hello".to_vec()));
        assert_eq!(ask(&server(b"$0\r\n\r\n"), 10).unwrap(), Reply::Bulk(Vec::new()));
        assert_eq!(ask(&server(b"$-1\r\n"), 10).unwrap(), Reply::Nil);
        assert_eq!(ask(&server(b":42\r\n"), 10).unwrap(), Reply::Int(42));
        assert_eq!(ask(&server(b"-WRONGTYPE no\r\n"), 10).unwrap(), Reply::Error("WRONGTYPE no".into()));
        let start = Instant::now();
        let e = ask(&server(b"$2000000000\r\n"), 10).unwrap_err();
        assert!(matches!(e, WireError::TooLarge { len: 2_000_000_000, limit: 10, .. }), "{e}");
        assert!(start.elapsed() < Duration::from_millis(200), "refused without waiting: {:?}", start.elapsed());
        let e = ask(&server(b"$5\r\nhelloXX"), 10).unwrap_err();
        assert!(matches!(e, WireError::Garbage { what: Garbage::Unterminated, .. }), "{e}");
        let e = ask(&server(b"HTTP/1.1 400 Bad Request\r\n"), 10).unwrap_err();
        assert_eq!(e.to_string().split(": ").last(), Some("a reply starting with byte 0x48"), "{e}");
        let e = ask(&server(b"$abc\r\n"), 10).unwrap_err();
        assert!(matches!(e, WireError::Garbage { what: Garbage::Number(_), .. }), "{e}");
        let e = ask(&server(b"$-2\r\n"), 10).unwrap_err();
        assert!(matches!(e, WireError::Garbage { what: Garbage::Number(_), .. }), "{e}");
        let long: &'static [u8] = Box::leak(format!("+{}", "x".repeat(MAX_LINE + 10)).into_bytes().into_boxed_slice());
        let e = ask(&server(long), 10).unwrap_err();
        assert!(matches!(e, WireError::Garbage { what: Garbage::LongLine, .. }), "{e}");
        // A reply cut short: the rest never comes, the deadline ends it.
        let start = Instant::now();
        let e = ask(&server(b"$10\r\nhel"), 10).unwrap_err();
        assert!(e.to_string().starts_with("timed out after 300 ms talking to redis://127.0.0.1:"), "{e}");
        assert!(start.elapsed() < Duration::from_millis(450), "{:?}", start.elapsed());
    }

    #[test]
    fn a_large_reply_arrives_whole_across_reads() {
        let mut body = b"$200000\r\n".to_vec();
        body.extend((0..200_000u32).map(|i| (i % 251) as u8));
        body.extend_from_slice(b"\r\n");
        let body: &'static [u8] = Box::leak(body.into_boxed_slice());
        match ask(&server(body), 200_000).unwrap() {
            Reply::Bulk(v) => assert!(v.len() == 200_000 && v.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn encoding() {
        let mut out = Vec::new();
        encode(&mut out, &[b"SET", b"k", b"a\r\nb"]);
        assert_eq!(out, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4\r\na\r\nb\r\n");
    }
}
