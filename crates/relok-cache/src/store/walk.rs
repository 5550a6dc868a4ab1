//! Listing a store folder: its entries and temporary files, by their
//! folder entries alone; clearing them.

use super::{EntryInfo, Inner, Store, TEMP_PREFIX, os};
use crate::Key;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// What [`Store::clear`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClearReport {
    /// Files removed.
    pub removed: u64,
    /// What it could not remove, each as `path: reason` (a folder it
    /// cannot write, a shard it refuses, a link or FIFO under an entry's
    /// name, which it never touches).
    pub left: Vec<String>,
}

/// The number of files removed (so that `"{} files removed"` reads right);
/// [`ClearReport::left`] says what stayed.
impl std::fmt::Display for ClearReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.removed)
    }
}

impl Store {
    /// Every entry file of the store (temporary files excluded), in key
    /// order.
    pub fn entries(&self) -> Vec<EntryInfo> {
        let mut out = Vec::new();
        self.inner.walk(&mut |e| {
            if let Walked::Entry(info) = e {
                out.push(info);
            }
        });
        out.sort_by_key(|e| e.key);
        out
    }

    /// Removes every entry and temporary file (regular files of this user
    /// under relok's names, in shards that pass the folder checks); says
    /// how many went and what stayed.
    pub fn clear(&self) -> ClearReport {
        let mut r = ClearReport::default();
        self.inner.walk(&mut |e| {
            let path = match e {
                Walked::Entry(info) => info.path,
                Walked::Temp(path, _) => path,
                Walked::Left(path, why) => return r.left.push(format!("{}: {why}", path.display())),
            };
            match fs::remove_file(&path) {
                Ok(()) => r.removed += 1,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => r.left.push(format!("{}: {e}", path.display())),
            }
        });
        r
    }
}

pub(super) enum Walked {
    /// A regular file of this user named as an entry.
    Entry(EntryInfo),
    /// A regular file of this user named as a temporary file, in a shard or
    /// in the store's folder (the stats log's).
    Temp(PathBuf, SystemTime),
    /// Something under relok's names that is not its to touch (a link, a
    /// FIFO, a folder, another user's file, a shard that fails the folder
    /// checks), with why.
    Left(PathBuf, String),
}

/// What a name in a folder of the store is, by its folder entry alone
/// (lstat: nothing is followed or opened).
fn classify(path: PathBuf, meta: &fs::Metadata) -> Result<(PathBuf, SystemTime), Walked> {
    if !meta.is_file() {
        let what = if meta.is_symlink() {
            "a symbolic link"
        } else if meta.is_dir() {
            "a folder"
        } else {
            "not a regular file"
        };
        return Err(Walked::Left(path, format!("{what}, not relok's to touch")));
    }
    if let Some(why) = os::foreign_owner(meta) {
        return Err(Walked::Left(path, why));
    }
    Ok((path, meta.modified().unwrap_or(SystemTime::UNIX_EPOCH)))
}

/// Visits every entry and temporary file of the store folder `dir`
/// (other names are ignored). Shards are checked like the store's own
/// folders; one that fails is reported, never entered.
pub(super) fn walk(dir: &Path, f: &mut dyn FnMut(Walked)) {
    let Ok(shards) = fs::read_dir(dir) else { return };
    for shard in shards.flatten() {
        let sname = shard.file_name();
        let Some(sname) = sname.to_str() else { continue };
        let Ok(meta) = shard.metadata() else { continue };
        if sname.starts_with(TEMP_PREFIX) {
            match classify(shard.path(), &meta) {
                Ok((path, modified)) => f(Walked::Temp(path, modified)),
                Err(left) => f(left),
            }
            continue;
        }
        if !(sname.len() == 2 && sname.bytes().all(|b| b.is_ascii_hexdigit())) {
            continue;
        }
        let sname = sname.to_owned();
        if let Err(e) = os::check_private(&shard.path()) {
            f(Walked::Left(shard.path(), format!("not used: {e}")));
            continue;
        }
        let files = match fs::read_dir(shard.path()) {
            Ok(files) => files,
            Err(e) => {
                f(Walked::Left(shard.path(), e.to_string()));
                continue;
            }
        };
        for file in files.flatten() {
            let name = file.file_name();
            let Some(name) = name.to_str() else { continue };
            let temp = name.starts_with(TEMP_PREFIX);
            let key = Key::from_hex(&format!("{sname}{name}"));
            if !temp && key.is_none() {
                continue;
            }
            let Ok(meta) = file.metadata() else { continue };
            match (classify(file.path(), &meta), key) {
                (Err(left), _) => f(left),
                (Ok((path, modified)), _) if temp => f(Walked::Temp(path, modified)),
                (Ok((path, modified)), Some(key)) => {
                    f(Walked::Entry(EntryInfo { key, path, len: meta.len(), modified }))
                }
                (Ok(_), None) => {}
            }
        }
    }
}

impl Inner {
    /// Visits every entry and temporary file (other names are ignored).
    pub(super) fn walk(&self, f: &mut dyn FnMut(Walked)) {
        walk(&self.dir, f);
    }
}
