//! Load records: a kernel loaded by its source key from one read of the
//! binary archive, with no artifact read, no PTX and no cubin key ("Load
//! records" in the docs of `cuda` says when one is written and used).

use super::CudaDevice;
use super::launch::CudaKernel;
use crate::backend::{find_loaded, load_once};
use crate::lock;
use crate::session::Session;
use relok_cache::{Key, Lookup, Store};
use relok_compiler::artifact::Artifact;
use relok_ir::Strategy;
use std::sync::Arc;
use std::sync::atomic::Ordering;

impl CudaDevice {
    /// The archive that keeps load records of kernels of `strategy`: none
    /// without an archive, for drivers that do not report parameters, and
    /// for `bake` (one process's words).
    fn record_archive(&self, strategy: Strategy) -> Option<&Store> {
        self.archive.as_ref().filter(|_| self.reports_params() && strategy != Strategy::Bake)
    }

    /// The kernel `entry` whose source key is `source`, from this device's
    /// load record (see "Load records" in the module docs), if the archive
    /// holds one it can use; `Ok(None)` sends the caller the long way. A
    /// record that is damaged, another kernel's, refused by the driver, or
    /// whose load fails otherwise (its words) is removed; only an error
    /// binding the context is the caller's.
    pub(super) fn load_record(
        &self,
        session: &Session,
        source: Key,
        entry: &str,
        strategy: Strategy,
    ) -> Result<Option<Arc<CudaKernel>>, crate::ProgramError> {
        let Some(archive) = self.record_archive(strategy) else { return Ok(None) };
        // Found before in this process, and still loaded: no read.
        let seen = lock(&self.recorded).get(&source).cloned();
        if let Some(k) = seen.and_then(|a| find_loaded(&self.loaded, session, &a.key)) {
            return Ok(Some(k));
        }
        let key = record_key(source);
        let Lookup::Hit(payload) = archive.get(key) else { return Ok(None) };
        let decoded = LoadRecord::decode(&payload, source).and_then(|(artifact, cubin)| {
            if artifact.entry != entry {
                return Err(format!("it holds @{}, not @{entry}", artifact.entry));
            }
            artifact.check(&artifact.key, self.target(), strategy).map_err(|e| e.to_string())?;
            Ok((Arc::new(artifact), cubin))
        });
        let (artifact, cubin) = match decoded {
            Ok(found) => found,
            Err(why) => {
                archive.reject(key, &format!("load record: {why}"));
                return Ok(None);
            }
        };
        self.bind()?;
        // Anything the record's content makes fail — a cubin the driver
        // refuses or whose parameters differ, words its manifest cannot
        // have — is the record's fault: removed, and the long way taken.
        let loaded = (|| {
            let fit = self.fit(&artifact)?;
            let (module, function) = fit.load(&self.ctx, cubin)?;
            // Loaded meanwhile (or by the long way before): that one is kept.
            load_once(&self.loaded, self.id, session, &artifact, || {
                self.finish_load(session, &artifact, fit, module, function)
            })
        })();
        let kernel = match loaded {
            Ok(k) => k,
            Err(e) => {
                archive.reject(key, &format!("load record: {e}"));
                return Ok(None);
            }
        };
        lock(&self.recorded).insert(source, artifact);
        self.code_stats.archive_hits.fetch_add(1, Ordering::Relaxed);
        self.code_stats.records.fetch_add(1, Ordering::Relaxed);
        Ok(Some(kernel))
    }

    /// Writes the load record of `artifact` and its `cubin` under `source`,
    /// once per process (a failed write is counted by the archive; the run
    /// goes on).
    pub(super) fn write_record(&self, source: Key, artifact: &Artifact, cubin: &[u8]) {
        let Some(archive) = self.record_archive(artifact.strategy) else { return };
        if lock(&self.recorded).contains_key(&source) {
            return;
        }
        if let Ok(payload) = LoadRecord::encode(source, artifact, cubin) {
            let _ = archive.put(record_key(source), &payload);
        }
        lock(&self.recorded).insert(source, Arc::new(without_code(artifact)));
    }
}

/// A kernel's load record (see "Load records" in the module docs): the
/// source key it is for, the artifact without its PTX and source text
/// (what a load needs: entry, ABI, options, manifest, values), and the
/// cubin of this device. Serialised with postcard, fields in this order.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct LoadRecord<'a> {
    source: [u8; 32],
    artifact: Artifact,
    #[serde(borrow)]
    cubin: &'a [u8],
}

impl LoadRecord<'_> {
    pub(super) fn encode(source: Key, artifact: &Artifact, cubin: &[u8]) -> Result<Vec<u8>, postcard::Error> {
        postcard::to_allocvec(&LoadRecord { source: source.0, artifact: without_code(artifact), cubin })
    }

    /// The artifact and cubin of the bytes of `source`'s record; a record
    /// of another source key, or with trailing bytes, is an error.
    pub(super) fn decode(bytes: &[u8], source: Key) -> Result<(Artifact, &[u8]), String> {
        match postcard::take_from_bytes::<LoadRecord<'_>>(bytes) {
            Ok((r, [])) if r.source == source.0 => Ok((r.artifact, r.cubin)),
            Ok((_, [])) => Err("it is the record of another source".into()),
            Ok((_, rest)) => Err(format!("{} bytes after the record", rest.len())),
            Err(e) => Err(format!("undecodable: {e}")),
        }
    }
}

/// `artifact` without its code and source text: what a load from a cubin
/// reads of it.
fn without_code(artifact: &Artifact) -> Artifact {
    Artifact {
        key: artifact.key,
        compiler: artifact.compiler.clone(),
        target: artifact.target,
        strategy: artifact.strategy,
        entry: artifact.entry.clone(),
        abi: artifact.abi.clone(),
        manifest: artifact.manifest.clone(),
        values: artifact.values.clone(),
        code: Vec::new(),
        alias: None,
        source: String::new(),
        options: artifact.options.clone(),
        baked_for: artifact.baked_for,
    }
}

/// The archive key of the load record of the kernel whose source key is
/// `source`: apart from every cubin's key (`relok_compiler::ptx::cubin_key`).
pub(super) fn record_key(source: Key) -> Key {
    use sha2::{Digest, Sha256};
    Key(Sha256::new().chain_update(b"relok load record 1\0").chain_update(source.0).finalize().into())
}
