//! Why a step on a host failed, in one line.

use crate::fleet::ssh::SshError;

/// A step on a host that failed.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// The host did not answer the check in time.
    #[error("unreachable: {0}")]
    Unreachable(SshError),
    /// The ssh command did not finish (could not start, stopped, too slow).
    #[error(transparent)]
    Ssh(#[from] SshError),
    /// The remote command failed: ssh's reason, or the command's last line
    /// of stderr and its exit code.
    #[error("{0}")]
    Failed(String),
    /// The host does not run Linux.
    #[error("runs '{0}', not Linux")]
    NotLinux(String),
    /// The host's CPU architecture is not this plumb's.
    #[error("its CPU architecture is {0}, this plumb is built for {arch}", arch = std::env::consts::ARCH)]
    Arch(String),
    /// The host's kernel is too old.
    #[error("kernel {0} is older than {major}.{minor} (plumb needs openat2)", major = super::MIN_KERNEL.0, minor = super::MIN_KERNEL.1)]
    OldKernel(String),
    /// The target directory is missing.
    #[error("the target directory {0} does not exist there")]
    NoTarget(String),
    /// The target directory is not writable.
    #[error("the target directory {0} is not writable")]
    NotWritable(String),
    /// `df` said nothing of the target.
    #[error("df gave no free space for {0}")]
    NoFreeSpace(String),
    /// The target has less free space than the pack may write.
    #[error("too little free space in {target}: {} free, the pack may write {}", crate::units::format_bytes_binary(*.free as f64), crate::units::format_bytes_binary(*.need as f64))]
    TooLittleSpace {
        /// The target directory.
        target: String,
        /// Its free bytes.
        free: u64,
        /// The bytes the pack may write.
        need: u64,
    },
    /// plumb could not be compressed for the copy.
    #[error(transparent)]
    Pack(#[from] super::pack::PackError),
    /// ssh could not be started.
    #[error("cannot run ssh: {0}")]
    SpawnSsh(std::io::Error),
    /// The run passed the fleet's time limit without a result.
    #[error("no result within {0} s (the fleet's limit for this pack); the run was stopped")]
    NoResultInTime(u64),
    /// A signal here stopped the run before its result arrived.
    #[error("stopped before the host sent a result")]
    StoppedBeforeResult,
    /// The agent said something that is not the protocol.
    #[error("the agent said something unexpected: {}", crate::terminal::cleaned(.0))]
    Garbled(String),
    /// ssh was killed.
    #[error("ssh was killed")]
    SshKilled,
    /// plumb on the host was killed by a signal.
    #[error("plumb on the host was killed by signal {0} ({name})", name = super::session::signal_name(*.0))]
    Killed(i32),
    /// `plumb serve` listens elsewhere than asked.
    #[error("plumb serve says it listens on '{}', not {listen}", crate::terminal::cleaned(.said))]
    ServesElsewhere {
        /// What it said.
        said: String,
        /// Where it was asked to listen.
        listen: std::net::SocketAddr,
    },
    /// `plumb serve` ended before it listened: its last line.
    #[error("{0}")]
    ServeEnded(String),
    /// A signal here stopped the wait for `plumb serve`.
    #[error("stopped")]
    Stopped,
    /// `plumb serve` did not listen in time.
    #[error("plumb serve did not start within {0} s")]
    ServeLate(u64),
}
