//! Key files another user could change are refused (issue 32, items 2, 4
//! and 7): for the public key and the signing key alike, a file or a
//! folder above it that others can write, a link, a FIFO (which must not
//! block), a file owned by another user (as root: `chown`; skipped with a
//! message otherwise); a sticky folder such as /tmp is allowed. Keys of
//! other algorithms are named; OpenSSL reads what `keygen` writes and
//! relok reads what OpenSSL writes (with the `openssl` binary; skipped
//! with a message without it). A refused key turns the remote off
//! (`RemoteConfig::from_env` fails with the key file's error).

#![cfg(unix)]

use relok_cache::remote::keys::{self, KeyProblem};
use relok_cache::remote::{RemoteConfig, RemoteError};
use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

/// Which key file.
#[derive(Clone, Copy, Debug)]
enum Half {
    Public,
    Signing,
}
use Half::{Public, Signing};

impl Half {
    fn file(self) -> &'static str {
        match self {
            Public => keys::PUBLIC_KEY_FILE,
            Signing => keys::SIGNING_KEY_FILE,
        }
    }

    /// Reads the key at `p`, within ten seconds (a FIFO opened without
    /// `O_NONBLOCK` would wait forever for a writer).
    fn read(self, p: &Path) -> Result<(), RemoteError> {
        let (tx, rx) = mpsc::channel();
        let p = p.to_owned();
        std::thread::spawn(move || {
            let r = match self {
                Public => keys::read_public_key(&p).map(|_| ()),
                Signing => keys::read_signing_key(&p).map(|_| ()),
            };
            let _ = tx.send(r);
        });
        rx.recv_timeout(Duration::from_secs(10)).unwrap_or_else(|_| panic!("reading the {self:?} key hung"))
    }

    /// The error reading `p` gives, as text; asserts it names `p`.
    fn refused(self, p: &Path) -> String {
        let e = self.read(p).expect_err("refused").to_string();
        assert!(e.starts_with(&format!("key file {}: ", p.display())), "{e}");
        e
    }
}

/// A key pair in a private folder under a temporary folder.
fn pair() -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("keys");
    keys::keygen(&dir).unwrap();
    (t, dir)
}

fn mode(p: &Path, m: u32) {
    fs::set_permissions(p, fs::Permissions::from_mode(m)).unwrap();
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Whether the test can change owners; says so when it cannot.
fn root_or_skip(test: &str) -> bool {
    if !is_root() {
        let _ = writeln!(std::io::stderr(), "SKIPPED {test}: needs root (chown to another user)");
    }
    is_root()
}

#[test]
fn the_good_case_reads_both_keys() {
    let (_t, dir) = pair();
    for half in [Public, Signing] {
        half.read(&dir.join(half.file())).unwrap();
    }
    let s = keys::read_signing_key(&dir.join(Signing.file())).unwrap();
    assert_eq!(keys::read_public_key(&dir.join(Public.file())).unwrap(), s.verifying_key());
}

#[test]
fn a_key_file_others_can_write_is_refused() {
    for half in [Public, Signing] {
        for m in [0o666, 0o646, 0o620] {
            let (_t, dir) = pair();
            let p = dir.join(half.file());
            mode(&p, m);
            let e = half.refused(&p);
            assert!(e.contains(&format!("mode {m:o} lets other users rewrite the key")), "{half:?} {m:o}: {e}");
            assert!(e.contains(&format!("chmod go-w {}", p.display())), "{e}");
        }
    }
}

#[test]
fn a_folder_above_others_can_write_is_refused() {
    for half in [Public, Signing] {
        for m in [0o775, 0o777, 0o757] {
            let t = tempfile::tempdir().unwrap();
            let shared = t.path().join("shared");
            let dir = shared.join("keys");
            keys::keygen(&dir).unwrap();
            mode(&shared, m);
            let e = half.refused(&dir.join(half.file()));
            assert!(
                e.contains(&format!(
                    "the folder {} (mode {m:o}, no sticky bit) lets other users replace the key",
                    shared.display()
                )),
                "{half:?} {m:o}: {e}"
            );
            // The key's own folder too.
            mode(&shared, 0o700);
            mode(&dir, m);
            let e = half.refused(&dir.join(half.file()));
            assert!(e.contains(&format!("the folder {} (mode {m:o}", dir.display())), "{e}");
        }
    }
}

/// A sticky folder (as /tmp) lets others add names, not replace this
/// user's: allowed, as the temporary folders the tests use show.
#[test]
fn a_sticky_folder_above_is_allowed() {
    let t = tempfile::tempdir().unwrap();
    let sticky = t.path().join("tmp-like");
    fs::DirBuilder::new().mode(0o700).create(&sticky).unwrap();
    mode(&sticky, 0o1777);
    let dir = sticky.join("keys");
    keys::keygen(&dir).unwrap();
    for half in [Public, Signing] {
        half.read(&dir.join(half.file())).unwrap();
    }
    // Without the sticky bit it is refused.
    mode(&sticky, 0o777);
    for half in [Public, Signing] {
        half.refused(&dir.join(half.file()));
    }
}

#[test]
fn a_linked_key_is_refused_and_a_linked_folder_followed_and_checked() {
    for half in [Public, Signing] {
        let (t, dir) = pair();
        let link = t.path().join("link.pem");
        symlink(dir.join(half.file()), &link).unwrap();
        let e = half.refused(&link);
        assert!(e.contains("a symbolic link (never followed for a key"), "{half:?}: {e}");
        // A link to the folder is followed, and what it leads to checked.
        let folder_link = t.path().join("keys-link");
        symlink(&dir, &folder_link).unwrap();
        half.read(&folder_link.join(half.file())).unwrap();
        mode(&dir, 0o777);
        let e = half.refused(&folder_link.join(half.file()));
        assert!(e.contains(&format!("the folder {} (mode 777", dir.display())), "{e}");
        // A relative link through `..`.
        mode(&dir, 0o700);
        let rel = t.path().join("sub");
        fs::DirBuilder::new().mode(0o700).create(&rel).unwrap();
        symlink("../keys", rel.join("k")).unwrap();
        half.read(&rel.join("k").join(half.file())).unwrap();
    }
}

#[test]
fn a_fifo_or_a_folder_as_the_key_is_refused_at_once() {
    for half in [Public, Signing] {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("key.fifo");
        assert!(Command::new("mkfifo").arg("-m").arg("600").arg(&p).status().unwrap().success());
        let e = half.refused(&p);
        assert!(e.ends_with("not a regular file (a FIFO)"), "{half:?}: {e}");
        let d = t.path().join("key.dir");
        fs::DirBuilder::new().mode(0o700).create(&d).unwrap();
        let e = half.refused(&d);
        assert!(e.ends_with("not a regular file (a directory)"), "{half:?}: {e}");
    }
}

#[test]
fn a_long_file_is_not_a_key() {
    for half in [Public, Signing] {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("big");
        fs::write(&p, vec![b'A'; keys::MAX_KEY_FILE as usize + 1]).unwrap();
        mode(&p, 0o600);
        let e = half.refused(&p);
        assert!(e.ends_with("longer than 16384 bytes: not a key file"), "{e}");
    }
}

#[test]
fn a_key_or_folder_owned_by_another_user_is_refused() {
    if !root_or_skip("a_key_or_folder_owned_by_another_user_is_refused") {
        return;
    }
    let other = 54321;
    for half in [Public, Signing] {
        let (t, dir) = pair();
        let p = dir.join(half.file());
        std::os::unix::fs::chown(&p, Some(other), None).unwrap();
        let e = half.refused(&p);
        assert!(e.contains("owned by user 54321, not by this user (0) or root"), "{half:?}: {e}");
        std::os::unix::fs::chown(&p, Some(0), None).unwrap();
        half.read(&p).unwrap();
        std::os::unix::fs::chown(&dir, Some(other), None).unwrap();
        let e = half.refused(&p);
        assert!(e.contains(&format!("the folder {} is owned by user 54321", dir.display())), "{e}");
        std::os::unix::fs::chown(&dir, Some(0), None).unwrap();
        // A link on the way owned by another user could be pointed
        // elsewhere by them.
        let link = t.path().join("keys-link");
        symlink(&dir, &link).unwrap();
        std::os::unix::fs::lchown(&link, Some(other), None).unwrap();
        let e = half.refused(&link.join(half.file()));
        assert!(e.contains("is a symbolic link owned by user 54321"), "{e}");
    }
}

/// DER of a PKCS#8 v1 private key (or SPKI public key) of `oid` (DER
/// bytes of the OBJECT IDENTIFIER's value) with `params` (DER, or none).
fn der_key(private: bool, oid: &[u8], params: &[u8]) -> Vec<u8> {
    let mut alg = vec![0x06, oid.len() as u8];
    alg.extend_from_slice(oid);
    alg.extend_from_slice(params);
    let mut alg_seq = vec![0x30, alg.len() as u8];
    alg_seq.extend(alg);
    let mut body = Vec::new();
    if private {
        body.extend_from_slice(&[0x02, 0x01, 0x00]);
        body.extend(alg_seq);
        body.extend_from_slice(&[0x04, 0x04, 0x04, 0x02, 0x00, 0x00]);
    } else {
        body.extend(alg_seq);
        body.extend_from_slice(&[0x03, 0x03, 0x00, 0x00, 0x00]);
    }
    let mut out = vec![0x30, body.len() as u8];
    out.extend(body);
    out
}

fn pem(label: &str, der: &[u8]) -> String {
    use ed25519_dalek::pkcs8::spki::der::pem::{LineEnding, encode_string};
    encode_string(label, LineEnding::LF, der).unwrap()
}

fn write_key(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    fs::write(&p, text).unwrap();
    mode(&p, 0o600);
    p
}

#[test]
fn keys_of_other_algorithms_are_named() {
    let t = tempfile::tempdir().unwrap();
    let rsa: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
    let ec: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
    let p256: &[u8] = &[0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
    let cases: [(&[u8], &[u8], &str); 6] = [
        (rsa, &[0x05, 0x00], "RSA"),
        (ec, p256, "EC, curve P-256"),
        (&[0x2b, 0x65, 0x6e], &[], "X25519"),
        (&[0x2b, 0x65, 0x71], &[], "Ed448"),
        (&[0x2b, 0x65, 0x6f], &[], "X448"),
        (&[0x2b, 0x06, 0x01, 0x04, 0x01], &[], "the algorithm 1.3.6.1.4.1"),
    ];
    for (oid, params, name) in cases {
        for half in [Public, Signing] {
            let (label, private) = match half {
                Public => ("PUBLIC KEY", false),
                Signing => ("PRIVATE KEY", true),
            };
            let p = write_key(t.path(), "k.pem", &pem(label, &der_key(private, oid, params)));
            let e = half.refused(&p);
            assert!(e.ends_with(&format!(": not an Ed25519 key (found {name})")), "{half:?}: {e}");
        }
    }
    let labelled = [
        ("RSA PRIVATE KEY", "not an Ed25519 key (found RSA)"),
        ("EC PRIVATE KEY", "not an Ed25519 key (found EC)"),
        ("OPENSSH PRIVATE KEY", "an OpenSSH private key"),
        ("ENCRYPTED PRIVATE KEY", "an encrypted private key"),
        ("CERTIFICATE", "a PEM block labelled \"CERTIFICATE\", not a key"),
    ];
    for (label, why) in labelled {
        let p = write_key(t.path(), "k.pem", &pem(label, &[0x30, 0x00]));
        let e = Signing.refused(&p);
        assert!(e.contains(why), "{label}: {e}");
    }
    let p = write_key(t.path(), "k.pem", "hello\n");
    assert!(Public.refused(&p).contains("not a PEM file"));
}

/// `openssl` on the PATH, or `None` after saying the test is skipped.
fn openssl(test: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH")
        .and_then(|p| std::env::split_paths(&p).map(|d| d.join("openssl")).find(|p| p.is_file()));
    if found.is_none() {
        let _ = writeln!(std::io::stderr(), "SKIPPED {test}: the openssl binary is not installed");
    }
    found
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn openssl_reads_what_keygen_writes_and_the_reverse() {
    let Some(openssl) = openssl("openssl_reads_what_keygen_writes_and_the_reverse") else { return };
    let (t, dir) = pair();
    let (key, public) = (dir.join(Signing.file()), dir.join(Public.file()));
    run(Command::new(&openssl).args(["pkey", "-noout", "-in"]).arg(&key));
    run(Command::new(&openssl).args(["pkey", "-pubin", "-noout", "-in"]).arg(&public));
    // OpenSSL derives the same public key from relok's private key.
    let derived = run(Command::new(&openssl).args(["pkey", "-pubout", "-in"]).arg(&key));
    assert_eq!(derived, fs::read_to_string(&public).unwrap());
    // And relok reads what OpenSSL makes.
    let theirs = t.path().join("openssl.key");
    run(Command::new(&openssl).args(["genpkey", "-algorithm", "ed25519", "-out"]).arg(&theirs));
    mode(&theirs, 0o600);
    let theirs_pub = t.path().join("openssl.pub");
    run(Command::new(&openssl).args(["pkey", "-pubout", "-in"]).arg(&theirs).arg("-out").arg(&theirs_pub));
    mode(&theirs_pub, 0o644);
    let s = keys::read_signing_key(&theirs).unwrap();
    assert_eq!(keys::read_public_key(&theirs_pub).unwrap(), s.verifying_key());
    // An RSA key OpenSSL makes is named.
    let rsa = t.path().join("rsa.key");
    run(Command::new(&openssl)
        .args(["genpkey", "-algorithm", "rsa", "-pkeyopt", "rsa_keygen_bits:1024", "-out"])
        .arg(&rsa));
    mode(&rsa, 0o600);
    let e = Signing.refused(&rsa);
    assert!(e.ends_with("not an Ed25519 key (found RSA)"), "{e}");
    let rsa_pub = t.path().join("rsa.pub");
    run(Command::new(&openssl).args(["pkey", "-pubout", "-in"]).arg(&rsa).arg("-out").arg(&rsa_pub));
    mode(&rsa_pub, 0o644);
    let e = Public.refused(&rsa_pub);
    assert!(e.ends_with("not an Ed25519 key (found RSA)"), "{e}");
}

const CHILD: &str = "RELOK_TEST_KEY_FILES_CHILD";

/// In a child process (its own environment): `RemoteConfig::from_env`
/// with a world-writable public key fails with the key file's error (the
/// runtime then warns `remote cache off: …` and goes on locally).
#[test]
fn from_env_child() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    match RemoteConfig::from_env() {
        Err(RemoteError::KeyFile { problem: KeyProblem::Writable { mode: 0o666, .. }, .. }) => {}
        other => panic!("expected the key file's refusal, got {other:?}"),
    }
}

#[test]
fn a_refused_key_turns_the_remote_off() {
    let (_t, dir) = pair();
    let p = dir.join(Public.file());
    mode(&p, 0o666);
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "from_env_child", "--nocapture", "--test-threads", "1"])
        .env(CHILD, "1")
        .env("RELOK_REMOTE", "redis://127.0.0.1:1/0")
        .env("RELOK_REMOTE_PUBLIC_KEY", &p)
        .env_remove("RELOK_REMOTE_SIGNING_KEY")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stdout).contains("1 passed"), "{}", String::from_utf8_lossy(&out.stdout));
}
