//! Before a run: [`check`] that a host can run this plumb, and
//! [`copy_binary`] it into the host's cache when it is not there yet.

use super::{Binary, Packing, RemoteError, MIN_KERNEL};
use crate::fleet::inventory::Host;
use crate::fleet::ssh::{self, remote_path, Input, Ssh};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// How long a check may take beyond the connect timeout.
const CHECK_LIMIT: Duration = Duration::from_secs(60);

/// What [`check`] found on a host.
#[derive(Debug, Clone)]
pub struct Probe {
    /// `uname -m`.
    pub arch: String,
    /// `uname -r`.
    pub kernel: String,
    /// Free bytes in the target.
    pub free_bytes: u64,
    /// This plumb is already in the host's cache (an executable of the
    /// right size under its SHA-256; the content was checked when copied).
    pub cached: bool,
    /// How a copy is sent: packed with what the host can unpack.
    pub packing: Packing,
}

/// Checks that `host` answers, lets us in, runs Linux on this machine's
/// architecture with a new enough kernel, and has `need_bytes` free in
/// its target; and whether this binary is cached there: an executable of
/// the right size under its SHA-256, owned by the user in a cache
/// directory of the user's that nobody else may write (its content was
/// checked when it was copied).
pub fn check(
    ssh: &Ssh,
    host: &Host,
    binary: &Binary,
    need_bytes: u64,
    stop: &AtomicBool,
) -> Result<Probe, RemoteError> {
    let target = remote_path(&host.target);
    let script = format!(
        "echo os=$(uname -s); echo arch=$(uname -m); echo kernel=$(uname -r); \
         if [ -d {target} ]; then echo target=dir; \
         if [ -w {target} ]; then echo writable=yes; fi; \
         df -Pk {target} | awk 'NR==2 {{ print \"free_kib=\" $4 }}'; \
         else echo target=missing; fi; \
         c={cache}; b={bin}; \
         if [ -x \"$b\" ] && [ -O \"$b\" ] && [ -O \"$c\" ] && [ \"$(wc -c < \"$b\")\" -eq {len} ] \
         && [ -z \"$(find \"$c\" \"$b\" -prune \\( -perm -020 -o -perm -002 \\) -print)\" ]; \
         then echo binary=cached; fi; {unpack}",
        cache = remote_path(&host.cache),
        bin = binary.on(host),
        len = binary.len,
        unpack = Packing::PROBE
    );
    let done = ssh
        .run(
            host,
            &script,
            Input::None,
            64 << 10,
            CHECK_LIMIT + ssh.connect_timeout,
            stop,
        )
        .map_err(|e| match e {
            ssh::SshError::TimedOut(_) => RemoteError::Unreachable(e),
            e => RemoteError::Ssh(e),
        })?;
    if done.code != 0 {
        return Err(RemoteError::Failed(done.reason()));
    }
    let text = String::from_utf8_lossy(&done.stdout);
    let field = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(k)?.strip_prefix('='))
            .map(|v| crate::terminal::cleaned(v.trim()))
    };
    let os = field("os").unwrap_or_default();
    if os != "Linux" {
        return Err(RemoteError::NotLinux(os));
    }
    let arch = field("arch").unwrap_or_default();
    if !same_arch(&arch) {
        return Err(RemoteError::Arch(arch));
    }
    let kernel = field("kernel").unwrap_or_default();
    match kernel_version(&kernel) {
        Some(v) if v >= MIN_KERNEL => {}
        _ => return Err(RemoteError::OldKernel(kernel)),
    }
    if field("target").as_deref() != Some("dir") {
        return Err(RemoteError::NoTarget(host.target.clone()));
    }
    if field("writable").is_none() {
        return Err(RemoteError::NotWritable(host.target.clone()));
    }
    let free_bytes = field("free_kib")
        .and_then(|v| v.parse::<u64>().ok())
        .map(|k| k.saturating_mul(1024))
        .ok_or_else(|| RemoteError::NoFreeSpace(host.target.clone()))?;
    if free_bytes < need_bytes {
        return Err(RemoteError::TooLittleSpace {
            target: host.target.clone(),
            free: free_bytes,
            need: need_bytes,
        });
    }
    Ok(Probe {
        arch,
        kernel,
        free_bytes,
        cached: field("binary").as_deref() == Some("cached"),
        packing: Packing::from_probe(field("unpack").as_deref()),
    })
}

/// True when `uname -m` names this binary's architecture.
fn same_arch(uname: &str) -> bool {
    let here = std::env::consts::ARCH;
    uname == here || (here == "arm" && uname.starts_with("arm"))
}

/// `6.18.0-1-amd64` as (6, 18).
fn kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// Copies this plumb into `host`'s cache, packed as `packing` says (see
/// [`super::pack`]); returns the bytes sent. It is written under a temporary name
/// (removed if the copy is cut; leftovers older than an hour are removed
/// by the next copy), checked against its SHA-256 there, and started once
/// (`--version`), so a host whose C library is too old for this build
/// says so before the run; then linked into place under its name only if
/// the name is free, so a cut copy never looks cached and a copy racing
/// another to the same cache (inventory hosts that are one machine and
/// user) never replaces the file a run there has started from. A file
/// already there is kept when it is this binary (its SHA-256 checked),
/// and replaced otherwise; where hard links are not supported, the copy
/// is renamed into place.
/// The cache directory must be the user's
/// own and writable by nobody else (a shared one could hold a planted
/// "plumb"); plumb makes it with mode 0700 and never changes an existing
/// one.
pub fn copy_binary(
    ssh: &Ssh,
    host: &Host,
    binary: &Binary,
    packing: Packing,
    stop: &AtomicBool,
) -> Result<u64, RemoteError> {
    let (sent, wire_bytes) = binary.packed(packing)?;
    let script = format!(
        "umask 077; c={cache}; t=\"$c/.plumb-{sha}.$$\"; mkdir -p \"$c\" || exit 1; \
         if [ ! -O \"$c\" ] || [ -n \"$(find \"$c\" -prune \\( -perm -020 -o -perm -002 \\) -print)\" ]; then \
         echo \"the cache directory $c is not private (another user's, or writable by others): give the host a cache of its own\" >&2; exit 1; fi; \
         find \"$c\" -maxdepth 1 -name '.plumb-*' -mmin +60 -exec rm -f {{}} + 2>/dev/null; \
         trap 'rm -f \"$t\"' EXIT HUP INT TERM; \
         {unpack} | head -c {most} > \"$t\" && echo '{sha}  '\"$t\" | sha256sum -c --status \
         || {{ echo 'the copy did not arrive whole (sha256sum failed)' >&2; exit 1; }}; \
         chmod 700 \"$t\" || exit 1; \
         if ! e=$(\"$t\" --version 2>&1 >/dev/null); then \
         echo \"the copied plumb does not start there (an older C library?): $(echo \"$e\" | tail -n 1)\" >&2; exit 1; fi; \
         b={bin}; \
         if ln \"$t\" \"$b\" 2>/dev/null; then :; \
         elif [ -x \"$b\" ] && [ -O \"$b\" ] && echo '{sha}  '\"$b\" | sha256sum -c --status; then :; \
         else mv -f \"$t\" \"$b\" || exit 1; fi",
        cache = remote_path(&host.cache),
        sha = binary.sha256,
        bin = binary.on(host),
        unpack = packing.unpack_command(),
        // A copy that unpacks to more than the binary fails its check
        // without filling the host's disk.
        most = binary.len.saturating_add(1)
    );
    // A generous limit: at least 1 MiB/s.
    let limit = Duration::from_secs(60 + wire_bytes / (1 << 20));
    let done = ssh.run(host, &script, Input::File(sent), 4096, limit, stop)?;
    if done.code != 0 {
        return Err(RemoteError::Failed(done.reason()));
    }
    Ok(wire_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_releases_parse() {
        assert_eq!(kernel_version("6.18.0-1-amd64"), Some((6, 18)));
        assert_eq!(kernel_version("5.4.0"), Some((5, 4)));
        assert_eq!(kernel_version("x"), None);
        assert!(kernel_version("5.4.0").unwrap() < MIN_KERNEL);
    }
}
