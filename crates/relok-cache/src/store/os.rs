use super::StoreError;
use std::fs::{self, File, Metadata, OpenOptions};
use std::io::{self, Read};
use std::path::Path;

#[cfg(unix)]
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};

/// What a bounded read found.
pub(super) enum Bounded {
    /// The open file, its metadata (fstat) and every byte of it.
    Whole(File, Metadata, Vec<u8>),
    /// A file longer than the bound (its length): not read.
    TooLong(u64),
}

/// `O_NOFOLLOW`: the last component of a path is never a link.
#[cfg(unix)]
fn nofollow() -> i32 {
    rustix::fs::OFlags::NOFOLLOW.bits() as i32
}

/// `O_NOFOLLOW | O_NONBLOCK`: never a link, and opening a FIFO or a
/// device returns at once instead of waiting for a peer.
#[cfg(unix)]
fn nofollow_nonblock() -> i32 {
    (rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK).bits() as i32
}

/// An error that names a link (`ELOOP` from `O_NOFOLLOW`) as such.
fn named(e: io::Error) -> io::Error {
    #[cfg(unix)]
    if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
        return io::Error::new(io::ErrorKind::InvalidData, "a symbolic link, never followed");
    }
    e
}

/// Creates `dir` and its missing parents, each readable by the user only.
pub(super) fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut b = fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    b.mode(0o700);
    b.create(dir)
}

/// Creates `path` exclusively (`O_CREAT | O_EXCL | O_NOFOLLOW`),
/// readable by the user only: never through a link, never an existing
/// file.
pub(super) fn create_private_file(path: &Path) -> io::Result<File> {
    let mut o = OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    o.mode(0o600).custom_flags(nofollow());
    o.open(path)
}

/// Opens `path` for appending, creating it private: never through a
/// link, never blocking on a FIFO, and only a regular file of this user
/// is returned.
pub(super) fn append_file(path: &Path) -> io::Result<File> {
    let mut o = OpenOptions::new();
    o.append(true).create(true);
    #[cfg(unix)]
    o.mode(0o600).custom_flags(nofollow_nonblock());
    let f = o.open(path).map_err(named)?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "not a regular file"));
    }
    if let Some(why) = foreign_owner(&meta) {
        return Err(io::Error::new(io::ErrorKind::PermissionDenied, why));
    }
    Ok(f)
}

/// Opens `path` for reading without following a link or blocking on a
/// FIFO, and checks on the open file (fstat) that it is a regular file.
pub(super) fn open_regular(path: &Path) -> io::Result<(File, Metadata)> {
    let mut o = OpenOptions::new();
    o.read(true);
    #[cfg(unix)]
    o.custom_flags(nofollow_nonblock());
    let f = o.open(path).map_err(named)?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "not a regular file"));
    }
    Ok((f, meta))
}

/// [`open_regular`], then every byte when the file is at most `bound`
/// bytes long (also if it grows while read: at most `bound + 1` bytes
/// are read).
pub(super) fn read_regular(path: &Path, bound: u64) -> io::Result<Bounded> {
    let (f, meta) = open_regular(path)?;
    if meta.len() > bound {
        return Ok(Bounded::TooLong(meta.len()));
    }
    let mut buf = Vec::with_capacity(meta.len() as usize);
    (&f).take(bound.saturating_add(1)).read_to_end(&mut buf)?;
    if buf.len() as u64 > bound {
        return Ok(Bounded::TooLong(buf.len() as u64));
    }
    Ok(Bounded::Whole(f, meta, buf))
}

/// The first `bound` bytes of the regular file `path` (of this user).
pub(super) fn read_prefix(path: &Path, bound: u64) -> io::Result<Vec<u8>> {
    let (f, meta) = open_regular(path)?;
    if let Some(why) = foreign_owner(&meta) {
        return Err(io::Error::new(io::ErrorKind::PermissionDenied, why));
    }
    let mut buf = Vec::new();
    (&f).take(bound).read_to_end(&mut buf)?;
    Ok(buf)
}

/// Refuses a folder that is not a directory owned by this user, or that
/// its group or others can write. A link is refused, never followed.
pub(super) fn check_private(path: &Path) -> Result<(), StoreError> {
    let meta = fs::symlink_metadata(path)
        .map_err(|e| StoreError::Insecure { path: path.to_owned(), reason: e.to_string() })?;
    private_dir(path, &meta)
}

/// [`check_private`] on the `lstat` of `path`, `meta`.
pub(super) fn private_dir(path: &Path, meta: &Metadata) -> Result<(), StoreError> {
    let insecure = |reason: String| StoreError::Insecure { path: path.to_owned(), reason };
    if meta.is_symlink() {
        return Err(insecure("a symbolic link (never followed)".into()));
    }
    if !meta.is_dir() {
        return Err(insecure("not a directory".into()));
    }
    if let Some(why) = foreign_owner(meta) {
        return Err(insecure(why));
    }
    #[cfg(unix)]
    if meta.permissions().mode() & 0o022 != 0 {
        return Err(insecure(format!(
            "mode {:o} lets other users write it (run `chmod go-w {}`)",
            meta.permissions().mode() & 0o777,
            path.display()
        )));
    }
    Ok(())
}

/// Why a file is not this user's, if it is not.
pub(super) fn foreign_owner(meta: &Metadata) -> Option<String> {
    #[cfg(unix)]
    {
        let me = rustix::process::geteuid().as_raw();
        if meta.uid() != me {
            return Some(format!("owned by user {} (this is user {me})", meta.uid()));
        }
    }
    #[cfg(not(unix))]
    let _ = meta;
    None
}
