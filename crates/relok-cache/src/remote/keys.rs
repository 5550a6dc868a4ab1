//! The key files of the remote tier: PKCS#8 PEM (`PRIVATE KEY`, what
//! `openssl genpkey -algorithm ed25519` writes) for the signing key,
//! SubjectPublicKeyInfo PEM (`PUBLIC KEY`, `openssl pkey -pubout`) for the
//! public key.
//!
//! A key file is the trust of the tier: whoever can rewrite the public key
//! file can make a reader run their kernels. So a key file is read only
//! when no other user can change it, as ssh reads its keys:
//!
//! - every folder on the way to it (`/` first, links followed, each folder
//!   a link leads through checked too) is owned by this user or root and
//!   is not writable by its group or others — unless it has the sticky
//!   bit (`/tmp`), where others may add names but not replace or remove
//!   this user's (every name under it on the way is then checked for its
//!   owner, which ssh, which refuses sticky folders, does not need);
//! - every link on the way is owned by this user or root, and the file's
//!   own name is not a link (`O_NOFOLLOW`);
//! - the file is opened without blocking (`O_NONBLOCK`: a FIFO or a device
//!   returns at once) and checked on the open descriptor (`fstat`): a
//!   regular file, owned by this user or root, not writable by its group
//!   or others, and — for the signing key — not readable by them either;
//! - at most 16 KiB are read.
//!
//! Access control lists are not looked at. Anything else is refused with
//! the path and the fix, and the remote is off for the process.

use super::RemoteError;
use ed25519_dalek::pkcs8::spki::der::pem::{self, LineEnding};
use ed25519_dalek::pkcs8::spki::{AlgorithmIdentifierRef, SubjectPublicKeyInfoRef};
use ed25519_dalek::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePrivateKey, KeypairBytes, ObjectIdentifier};
use ed25519_dalek::pkcs8::{EncodePublicKey, PrivateKeyInfo, spki::der::Decode};
use ed25519_dalek::{SigningKey, VerifyingKey};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// The signing key's file name in the folder `relok cache keygen` writes.
pub const SIGNING_KEY_FILE: &str = "relok-remote.key";
/// The public key's file name.
pub const PUBLIC_KEY_FILE: &str = "relok-remote.pub";
/// A key file longer than this is not a key.
pub const MAX_KEY_FILE: u64 = 16 << 10;
/// Links followed on the way to a key file at most.
const MAX_LINKS: usize = 40;

/// Why a key file is refused.
#[derive(Debug, thiserror::Error)]
pub enum KeyProblem {
    /// The system refused (not found, no permission, …).
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The file's own name is a link.
    #[error("a symbolic link (never followed for a key: name the file itself)")]
    Link,
    /// Not a regular file.
    #[error("not a regular file (a {0})")]
    NotRegular(&'static str),
    /// More than [`MAX_KEY_FILE`] bytes.
    #[error("longer than {MAX_KEY_FILE} bytes: not a key file")]
    TooLong,
    /// Owned by another user (not root).
    #[error(
        "owned by user {owner}, not by this user ({me}) or root: that user could rewrite it (chown it, or make a key pair of your own)"
    )]
    Owner {
        /// The file's owner.
        owner: u32,
        /// This process's effective user.
        me: u32,
    },
    /// Its group or others can write it.
    #[error("mode {mode:o} lets other users rewrite the key (run `chmod go-w {}`)", .path.display())]
    Writable {
        /// The file's permission bits.
        mode: u32,
        /// The file.
        path: PathBuf,
    },
    /// Its group or others can read the signing key.
    #[error("mode {mode:o} lets other users read the signing key (run `chmod 600 {}`)", .path.display())]
    Readable {
        /// The file's permission bits.
        mode: u32,
        /// The file.
        path: PathBuf,
    },
    /// A folder on the way to it lets another user replace it.
    #[error("the folder {} {why}", .folder.display())]
    Folder {
        /// The folder (or link) on the way.
        folder: PathBuf,
        /// What is wrong with it.
        why: FolderProblem,
    },
    /// Not PEM text.
    #[error(
        "not a PEM file ({0}): relok reads Ed25519 keys in PEM (`relok cache keygen`, or `openssl genpkey -algorithm ed25519`)"
    )]
    NotPem(String),
    /// A PEM block of another kind than a key.
    #[error("a PEM block labelled {0:?}, not a key")]
    Label(String),
    /// A key of another algorithm.
    #[error("not an Ed25519 key (found {0})")]
    NotEd25519(String),
    /// An encrypted private key.
    #[error(
        "an encrypted private key: relok reads unencrypted PKCS#8 (the file's mode protects it; `openssl pkey -in KEY -out NEW` decrypts)"
    )]
    Encrypted,
    /// An OpenSSH private key.
    #[error(
        "an OpenSSH private key: relok reads PKCS#8 PEM (make one with `relok cache keygen` or `openssl genpkey -algorithm ed25519`)"
    )]
    OpenSsh,
    /// The private key where the public one is expected, or the reverse.
    #[error("{0}")]
    WrongHalf(&'static str),
    /// An Ed25519 key whose encoding is broken.
    #[error("a damaged Ed25519 key: {0}")]
    Damaged(String),
}

/// What is wrong with a folder on the way to a key file.
#[derive(Debug, thiserror::Error)]
pub enum FolderProblem {
    /// Group or others may write it, and it has no sticky bit.
    #[error(
        "(mode {0:o}, no sticky bit) lets other users replace the key (run `chmod go-w` on it, or keep the keys in a folder only you can write)"
    )]
    Writable(u32),
    /// Owned by another user (not root).
    #[error("is owned by user {owner}, not by this user ({me}) or root: that user could replace the key")]
    Owner {
        /// The folder's owner.
        owner: u32,
        /// This process's effective user.
        me: u32,
    },
    /// A link on the way owned by another user.
    #[error(
        "is a symbolic link owned by user {owner}, not by this user ({me}) or root: that user could point it elsewhere"
    )]
    LinkOwner {
        /// The link's owner.
        owner: u32,
        /// This process's effective user.
        me: u32,
    },
    /// Not a directory.
    #[error("is not a directory")]
    NotDir,
    /// More than 40 links on the way.
    #[error("is reached through more than {MAX_LINKS} symbolic links")]
    Loop,
    /// It could not be examined.
    #[error("could not be examined: {0}")]
    Io(io::Error),
}

fn key_error(path: &Path, problem: impl Into<KeyProblem>) -> RemoteError {
    RemoteError::KeyFile { path: path.to_owned(), problem: problem.into() }
}

/// This process's effective user.
#[cfg(unix)]
fn me() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Checks every folder and link on the way to `path` (see the module
/// docs).
#[cfg(unix)]
fn check_folders(path: &Path) -> Result<(), KeyProblem> {
    use std::os::unix::fs::MetadataExt;
    use std::path::Component;
    let me = me();
    let folder_err = |folder: &Path, why| KeyProblem::Folder { folder: folder.to_owned(), why };
    let check_dir = |dir: &Path, meta: &std::fs::Metadata| -> Result<(), KeyProblem> {
        if meta.uid() != 0 && meta.uid() != me {
            return Err(folder_err(dir, FolderProblem::Owner { owner: meta.uid(), me }));
        }
        let mode = meta.mode() & 0o7777;
        if mode & 0o022 != 0 && mode & 0o1000 == 0 {
            return Err(folder_err(dir, FolderProblem::Writable(mode)));
        }
        Ok(())
    };
    let abs = if path.is_absolute() { path.to_owned() } else { std::env::current_dir()?.join(path) };
    let Some(parent) = abs.parent() else { return Ok(()) };
    // A stack of the components still to walk, the next on top.
    let mut todo: Vec<std::ffi::OsString> = parent.components().rev().map(|c| c.as_os_str().to_owned()).collect();
    let mut at = PathBuf::from("/");
    let root = std::fs::metadata(&at).map_err(|e| folder_err(&at, FolderProblem::Io(e)))?;
    check_dir(&at, &root)?;
    let mut links = 0;
    while let Some(c) = todo.pop() {
        match Path::new(&c).components().next() {
            Some(Component::RootDir | Component::Prefix(_)) => at = PathBuf::from("/"),
            Some(Component::CurDir) | None => {}
            Some(Component::ParentDir) => {
                at.pop();
            }
            Some(Component::Normal(name)) => {
                let next = at.join(name);
                let meta = std::fs::symlink_metadata(&next).map_err(|e| folder_err(&next, FolderProblem::Io(e)))?;
                if meta.file_type().is_symlink() {
                    links += 1;
                    if links > MAX_LINKS {
                        return Err(folder_err(&next, FolderProblem::Loop));
                    }
                    if meta.uid() != 0 && meta.uid() != me {
                        return Err(folder_err(&next, FolderProblem::LinkOwner { owner: meta.uid(), me }));
                    }
                    let target = std::fs::read_link(&next).map_err(|e| folder_err(&next, FolderProblem::Io(e)))?;
                    todo.extend(target.components().rev().map(|c| c.as_os_str().to_owned()));
                } else if meta.is_dir() {
                    check_dir(&next, &meta)?;
                    at = next;
                } else {
                    return Err(folder_err(&next, FolderProblem::NotDir));
                }
            }
        }
    }
    Ok(())
}

/// The kind of a file that is not regular, for messages.
#[cfg(unix)]
fn kind(t: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_dir() {
        "directory"
    } else if t.is_fifo() {
        "FIFO"
    } else if t.is_socket() {
        "socket"
    } else if t.is_block_device() || t.is_char_device() {
        "device"
    } else {
        "special file"
    }
}

/// At most [`MAX_KEY_FILE`] bytes of `path` as text, after the checks of
/// the module docs, and the file's permission bits (0 where there are
/// none).
fn read_key_text(path: &Path) -> Result<(String, u32), RemoteError> {
    let fail = |p: KeyProblem| key_error(path, p);
    let mut o = std::fs::OpenOptions::new();
    o.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        check_folders(path).map_err(fail)?;
        o.custom_flags((rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK).bits() as i32);
    }
    let f = o.open(path).map_err(|e| {
        #[cfg(unix)]
        if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
            return fail(KeyProblem::Link);
        }
        fail(e.into())
    })?;
    let meta = f.metadata().map_err(|e| fail(e.into()))?;
    #[cfg(not(unix))]
    let mode = 0;
    #[cfg(unix)]
    let mode = {
        use std::os::unix::fs::MetadataExt;
        if !meta.is_file() {
            return Err(fail(KeyProblem::NotRegular(kind(meta.file_type()))));
        }
        let me = me();
        if meta.uid() != 0 && meta.uid() != me {
            return Err(fail(KeyProblem::Owner { owner: meta.uid(), me }));
        }
        let mode = meta.mode() & 0o7777;
        if mode & 0o022 != 0 {
            return Err(fail(KeyProblem::Writable { mode, path: path.to_owned() }));
        }
        mode
    };
    #[cfg(not(unix))]
    if !meta.is_file() {
        return Err(fail(KeyProblem::NotRegular("special file")));
    }
    let mut bytes = Vec::new();
    f.take(MAX_KEY_FILE + 1).read_to_end(&mut bytes).map_err(|e| fail(e.into()))?;
    if bytes.len() as u64 > MAX_KEY_FILE {
        return Err(fail(KeyProblem::TooLong));
    }
    let text = String::from_utf8(bytes).map_err(|_| fail(KeyProblem::NotPem("not text".into())))?;
    Ok((text, mode))
}

/// The name of a key algorithm, for messages: the common OIDs named, the
/// rest in dotted form.
fn algorithm(alg: &AlgorithmIdentifierRef<'_>) -> String {
    let name = |oid: &ObjectIdentifier| -> Option<&'static str> {
        Some(match oid.to_string().as_str() {
            "1.2.840.113549.1.1.1" => "RSA",
            "1.2.840.113549.1.1.10" => "RSA-PSS",
            "1.2.840.10040.4.1" => "DSA",
            "1.2.840.10046.2.1" | "1.2.840.113549.1.3.1" => "DH",
            "1.2.840.10045.2.1" => "EC",
            "1.3.101.110" => "X25519",
            "1.3.101.111" => "X448",
            "1.3.101.112" => "Ed25519",
            "1.3.101.113" => "Ed448",
            "1.2.840.10045.3.1.7" => "P-256",
            "1.3.132.0.34" => "P-384",
            "1.3.132.0.35" => "P-521",
            "1.3.132.0.10" => "secp256k1",
            _ => return None,
        })
    };
    let main = name(&alg.oid).map(str::to_owned).unwrap_or_else(|| format!("the algorithm {}", alg.oid));
    if main != "EC" {
        return main;
    }
    match alg.parameters.and_then(|p| p.decode_as::<ObjectIdentifier>().ok()) {
        Some(curve) => format!("EC, curve {}", name(&curve).map(str::to_owned).unwrap_or_else(|| curve.to_string())),
        None => main,
    }
}

/// Ed25519's OID.
const ED25519: &str = "1.3.101.112";

/// The PEM block of `text`: its label and bytes; other labels than the two
/// key labels are named.
fn pem_block(text: &str) -> Result<(String, Vec<u8>), KeyProblem> {
    let (label, der) = pem::decode_vec(text.trim().as_bytes()).map_err(|e| KeyProblem::NotPem(e.to_string()))?;
    match label {
        "PRIVATE KEY" | "PUBLIC KEY" => Ok((label.to_owned(), der)),
        "RSA PRIVATE KEY" | "RSA PUBLIC KEY" => Err(KeyProblem::NotEd25519("RSA".into())),
        "EC PRIVATE KEY" => Err(KeyProblem::NotEd25519("EC".into())),
        "DSA PRIVATE KEY" => Err(KeyProblem::NotEd25519("DSA".into())),
        "ENCRYPTED PRIVATE KEY" => Err(KeyProblem::Encrypted),
        "OPENSSH PRIVATE KEY" => Err(KeyProblem::OpenSsh),
        other => Err(KeyProblem::Label(other.to_owned())),
    }
}

/// The signing key in PEM `text`.
fn parse_signing_key(text: &str) -> Result<SigningKey, KeyProblem> {
    let (label, der) = pem_block(text)?;
    if label == "PUBLIC KEY" {
        return Err(KeyProblem::WrongHalf(
            "a public key where the signing key (PKCS#8 `PRIVATE KEY`, relok-remote.key) was expected",
        ));
    }
    let info = PrivateKeyInfo::try_from(der.as_slice()).map_err(|e| KeyProblem::Damaged(e.to_string()))?;
    if info.algorithm.oid.to_string() != ED25519 {
        return Err(KeyProblem::NotEd25519(algorithm(&info.algorithm)));
    }
    SigningKey::from_pkcs8_der(&der).map_err(|e| KeyProblem::Damaged(e.to_string()))
}

/// The public key in PEM `text`.
fn parse_public_key(text: &str) -> Result<VerifyingKey, KeyProblem> {
    let (label, der) = pem_block(text)?;
    if label == "PRIVATE KEY" {
        return Err(KeyProblem::WrongHalf(
            "a private key where the public key (`PUBLIC KEY`, relok-remote.pub) was expected: give readers the public key only",
        ));
    }
    let info = SubjectPublicKeyInfoRef::from_der(&der).map_err(|e| KeyProblem::Damaged(e.to_string()))?;
    if info.algorithm.oid.to_string() != ED25519 {
        return Err(KeyProblem::NotEd25519(algorithm(&info.algorithm)));
    }
    VerifyingKey::from_public_key_der(&der).map_err(|e| KeyProblem::Damaged(e.to_string()))
}

/// Reads a signing key (see the module docs for what is refused; a file
/// that others can read is refused as ssh refuses one: whoever reads it
/// can sign entries every reader trusts).
pub fn read_signing_key(path: &Path) -> Result<SigningKey, RemoteError> {
    let (text, mode) = read_key_text(path)?;
    let key = parse_signing_key(&text).map_err(|p| key_error(path, p))?;
    if mode & 0o077 != 0 {
        return Err(key_error(path, KeyProblem::Readable { mode, path: path.to_owned() }));
    }
    Ok(key)
}

/// Reads a public key (see the module docs for what is refused).
pub fn read_public_key(path: &Path) -> Result<VerifyingKey, RemoteError> {
    let (text, _) = read_key_text(path)?;
    parse_public_key(&text).map_err(|p| key_error(path, p))
}

/// The PEM files of a key pair: PKCS#8 version 1 (`PRIVATE KEY`, the
/// 32-byte seed only, as `openssl genpkey -algorithm ed25519` writes it)
/// and SubjectPublicKeyInfo (`PUBLIC KEY`). Not version 2 with the public
/// key attached, which OpenSSL 3.0 cannot read.
fn pem_pair(key: &SigningKey) -> Result<(String, String), KeyProblem> {
    let damaged = |e: ed25519_dalek::pkcs8::Error| KeyProblem::Damaged(e.to_string());
    let v1 = KeypairBytes { secret_key: key.to_bytes(), public_key: None };
    let private = v1.to_pkcs8_pem(LineEnding::LF).map_err(damaged)?;
    let public =
        key.verifying_key().to_public_key_pem(LineEnding::LF).map_err(|e| KeyProblem::Damaged(e.to_string()))?;
    Ok((private.to_string(), public))
}

/// Makes a key pair in `dir` (created private if missing):
/// `dir/relok-remote.key` (mode 0600) and `dir/relok-remote.pub` (0644),
/// in the PEM forms OpenSSL reads (`openssl pkey -in KEY`, `openssl pkey
/// -pubin -in PUB`). Existing files are never replaced. Returns both
/// paths.
pub fn keygen(dir: &Path) -> Result<(PathBuf, PathBuf), RemoteError> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir).map_err(|e| key_error(dir, e))?;
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| key_error(dir, io::Error::other(format!("no random numbers: {e}"))))?;
    let key = SigningKey::from_bytes(&seed);
    seed.fill(0);
    let (private, public) = pem_pair(&key).map_err(|p| key_error(dir, p))?;
    let (kpath, ppath) = (dir.join(SIGNING_KEY_FILE), dir.join(PUBLIC_KEY_FILE));
    for p in [&kpath, &ppath] {
        if std::fs::symlink_metadata(p).is_ok() {
            let e = io::Error::new(io::ErrorKind::AlreadyExists, "already exists (remove it to make a new pair)");
            return Err(key_error(p, e));
        }
    }
    write_new(&kpath, private.as_bytes(), 0o600)?;
    if let Err(e) = write_new(&ppath, public.as_bytes(), 0o644) {
        let _ = std::fs::remove_file(&kpath);
        return Err(e);
    }
    Ok((kpath, ppath))
}

/// Creates `path` exclusively with `mode` and writes `bytes`.
fn write_new(path: &Path, bytes: &[u8], mode: u32) -> Result<(), RemoteError> {
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, mode);
    #[cfg(not(unix))]
    let _ = mode;
    let written = o.open(path).and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all()));
    written.map_err(|e| {
        let _ = std::fs::remove_file(path);
        key_error(path, e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keygen_writes_a_pair_that_reads_back() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("keys");
        let (k, p) = keygen(&dir).unwrap();
        let sk = read_signing_key(&k).unwrap();
        assert_eq!(read_public_key(&p).unwrap(), sk.verifying_key());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&k).unwrap().permissions().mode() & 0o777, 0o600);
            std::fs::set_permissions(&k, std::fs::Permissions::from_mode(0o644)).unwrap();
            let e = read_signing_key(&k).unwrap_err().to_string();
            assert!(e.contains("lets other users read"), "{e}");
        }
        let again = keygen(&dir).unwrap_err().to_string();
        assert!(again.contains("already exists"), "{again}");
        let e = read_public_key(&k).unwrap_err().to_string();
        assert!(e.contains("a private key where the public key"), "{e}");
        let e = read_signing_key(&p).unwrap_err().to_string();
        assert!(e.contains("a public key where the signing key"), "{e}");
        let (k2, _) = keygen(&t.path().join("other")).unwrap();
        #[cfg(unix)]
        std::fs::set_permissions(&k, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        assert_ne!(read_signing_key(&k2).unwrap().to_bytes(), read_signing_key(&k).unwrap().to_bytes());
    }

    /// The private key is PKCS#8 version 1, 48 bytes: the seed and no
    /// public key (version 2 with `[1] publicKey`, what ed25519-dalek
    /// writes by default, is refused by OpenSSL 3.0 as "unsupported").
    #[test]
    fn keygen_writes_pkcs8_v1_and_spki() {
        let key = SigningKey::from_bytes(&[9; 32]);
        let (private, public) = pem_pair(&key).unwrap();
        let (label, der) = pem::decode_vec(private.as_bytes()).unwrap();
        assert_eq!(label, "PRIVATE KEY");
        let mut expect =
            vec![0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20];
        expect.extend_from_slice(&[9; 32]);
        assert_eq!(der, expect);
        let (label, der) = pem::decode_vec(public.as_bytes()).unwrap();
        assert_eq!(label, "PUBLIC KEY");
        let mut expect = vec![0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00];
        expect.extend_from_slice(key.verifying_key().as_bytes());
        assert_eq!(der, expect);
        assert_eq!(parse_signing_key(&private).unwrap().to_bytes(), key.to_bytes());
        assert_eq!(parse_public_key(&public).unwrap(), key.verifying_key());
        // Version 2 (with the public key) is still read.
        let v2 = key.to_pkcs8_pem(LineEnding::LF).unwrap();
        assert_eq!(parse_signing_key(&v2).unwrap().to_bytes(), key.to_bytes());
    }
}
