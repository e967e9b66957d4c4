//! What the driver does on one host, step by step, each one ssh command
//! (a session over the host's shared connection, [`crate::fleet::ssh::Sharing`]):
//! [`check`] the host, [`copy_binary`] plumb into its cache,
//! [`run`] a pack through the agent, [`Server::start`] a `plumb serve`,
//! and [`sweep`] up after a session that could not finish.
//!
//! Every step polls the stop flag and has a time limit; every failure is
//! a [`RemoteError`], one line naming its cause.

mod check;
mod error;
mod pack;
mod run;
mod server;
mod session;

pub use check::{check, copy_binary, Probe};
pub use error::RemoteError;
pub use pack::{PackError, Packing};
pub use run::{run, sweep, Payload, RunOutcome, StopReason};
pub use server::Server;

use super::inventory::Host;
use super::ssh::{quote, remote_path};
use std::path::PathBuf;
use std::time::Duration;

/// The oldest kernel plumb runs on: `openat2` (the sandbox's resolver)
/// came in 5.6.
pub const MIN_KERNEL: (u32, u32) = (5, 6);

/// How long the agent may take to stop and clean up once its stdin ends.
const STOP_LIMIT: Duration = Duration::from_secs(20);
/// How long the last frames of a session that ended may take to come in
/// (see `Session::finish`).
const FINISH_LIMIT: Duration = Duration::from_secs(10);

/// This plumb binary, as it is copied to hosts.
#[derive(Debug, Clone)]
pub struct Binary {
    /// Where it is here.
    pub path: PathBuf,
    /// Its SHA-256, which names it in the hosts' caches.
    pub sha256: String,
    /// Its size in bytes.
    pub len: u64,
}

impl Binary {
    /// The running plumb. Hashing it takes most of a second (it is large),
    /// so the hash is remembered in plumb's cache, keyed by the file's
    /// device, inode, size and modification time: a rebuilt or replaced
    /// binary is hashed again. (A wrong memo cannot plant a wrong binary:
    /// the host checks what arrives against the name.)
    pub fn current() -> std::io::Result<Binary> {
        use sha2::{Digest, Sha256};
        use std::os::unix::fs::MetadataExt;
        let path = std::env::current_exe()?;
        let meta = std::fs::metadata(&path)?;
        let key = format!(
            "{} {} {} {} {}",
            meta.dev(),
            meta.ino(),
            meta.len(),
            meta.mtime(),
            meta.mtime_nsec()
        );
        let memo = crate::cache::open("self").ok().map(|d| d.join("sha256"));
        let remembered = memo
            .as_deref()
            .and_then(|m| crate::input::read_file(m, 256).ok())
            .and_then(|b| String::from_utf8(b).ok())
            .and_then(|t| {
                let sha = t
                    .trim_end()
                    .strip_prefix(&key)?
                    .strip_prefix(' ')?
                    .to_string();
                (sha.len() == 64 && sha.bytes().all(|c| c.is_ascii_hexdigit())).then_some(sha)
            });
        if let Some(sha256) = remembered {
            return Ok(Binary {
                path,
                sha256,
                len: meta.len(),
            });
        }
        let mut f = std::fs::File::open(&path)?;
        let mut h = Sha256::new();
        let len = std::io::copy(&mut f, &mut h)?;
        let sha256: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
        // Only a speed-up: a memo that cannot be written costs a hash next
        // time; one for a file that changed while it was read is not written.
        if let Some(m) = memo.filter(|_| len == meta.len()) {
            let _ = crate::save::write_atomic(&m, format!("{key} {sha256}\n").as_bytes());
        }
        Ok(Binary { path, sha256, len })
    }

    /// The binary's path on `host`, as a shell word.
    fn on(&self, host: &Host) -> String {
        format!(
            "{}/{}",
            remote_path(&host.cache),
            quote(&format!("plumb-{}", self.sha256))
        )
    }
}
