//! The key files of the remote tier: PKCS#8 PEM (what `openssl genpkey
//! -algorithm ed25519` writes) for the signing key, SubjectPublicKeyInfo
//! PEM (`openssl pkey -pubout`) for the public key.

use super::RemoteError;
use ed25519_dalek::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePrivateKey, EncodePublicKey};
use ed25519_dalek::{SigningKey, VerifyingKey};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// The signing key's file name in the folder `relok cache keygen` writes.
pub const SIGNING_KEY_FILE: &str = "relok-remote.key";
/// The public key's file name.
pub const PUBLIC_KEY_FILE: &str = "relok-remote.pub";
/// A key file longer than this is not a key.
const MAX_KEY_FILE: u64 = 16 << 10;

fn key_error(path: &Path, reason: impl Into<String>) -> RemoteError {
    RemoteError::KeyFile { path: path.to_owned(), reason: reason.into() }
}

/// At most [`MAX_KEY_FILE`] bytes of `path` as text.
fn read_key_text(path: &Path) -> Result<(String, std::fs::Metadata), RemoteError> {
    let f = std::fs::File::open(path).map_err(|e| key_error(path, e.to_string()))?;
    let meta = f.metadata().map_err(|e| key_error(path, e.to_string()))?;
    if !meta.is_file() {
        return Err(key_error(path, "not a regular file"));
    }
    let mut text = String::new();
    f.take(MAX_KEY_FILE).read_to_string(&mut text).map_err(|e| key_error(path, e.to_string()))?;
    Ok((text, meta))
}

/// Reads a signing key. A file that others can read is refused (as ssh
/// refuses one): whoever reads it can sign entries every reader trusts.
pub fn read_signing_key(path: &Path) -> Result<SigningKey, RemoteError> {
    let (text, meta) = read_key_text(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(key_error(
                path,
                format!("mode {mode:o} lets other users read the signing key (run `chmod 600 {}`)", path.display()),
            ));
        }
    }
    #[cfg(not(unix))]
    let _ = meta;
    SigningKey::from_pkcs8_pem(&text)
        .map_err(|e| key_error(path, format!("not an Ed25519 private key in PKCS#8 PEM: {e}")))
}

/// Reads a public key.
pub fn read_public_key(path: &Path) -> Result<VerifyingKey, RemoteError> {
    let (text, _) = read_key_text(path)?;
    VerifyingKey::from_public_key_pem(&text)
        .map_err(|e| key_error(path, format!("not an Ed25519 public key in PEM: {e}")))
}

/// Makes a key pair in `dir` (created private if missing):
/// `dir/relok-remote.key` (mode 0600) and `dir/relok-remote.pub`. Existing
/// files are never replaced. Returns both paths.
pub fn keygen(dir: &Path) -> Result<(PathBuf, PathBuf), RemoteError> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir).map_err(|e| key_error(dir, e.to_string()))?;
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| key_error(dir, format!("no random numbers from the system: {e}")))?;
    let key = SigningKey::from_bytes(&seed);
    seed.fill(0);
    let pem = ed25519_dalek::pkcs8::spki::der::pem::LineEnding::LF;
    let private = key.to_pkcs8_pem(pem).map_err(|e| key_error(dir, e.to_string()))?;
    let public = key.verifying_key().to_public_key_pem(pem).map_err(|e| key_error(dir, e.to_string()))?;
    let (kpath, ppath) = (dir.join(SIGNING_KEY_FILE), dir.join(PUBLIC_KEY_FILE));
    for p in [&kpath, &ppath] {
        if std::fs::symlink_metadata(p).is_ok() {
            return Err(key_error(p, "already exists (remove it to make a new pair)"));
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
        key_error(path, e.to_string())
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
        assert!(read_public_key(&k).is_err());
        let (k2, _) = keygen(&t.path().join("other")).unwrap();
        #[cfg(unix)]
        std::fs::set_permissions(&k, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        assert_ne!(read_signing_key(&k2).unwrap().to_bytes(), read_signing_key(&k).unwrap().to_bytes());
    }
}
