//! The engine options ([`crate::job::spec::EngineOpts`]).

use super::{OptionDef, OptionError, Problem};
use crate::job::spec::{CpuMode, JobSpec, NetProtocol, StatType};
use crate::job::values::{parse_bool, parse_count_in, parse_percent, ValueError};
use crate::units::parse_size;

/// Longest `cpuio` burst (`cpuchunks`, µs): a burst runs to its end before
/// the job sees a stop, so it stays under a second.
pub const MAX_CPU_CHUNK_US: u64 = 1_000_000;
/// Largest socket buffer (`window_size`): the kernel takes an `int` and
/// caps it at `net.core.[rw]mem_max` anyway.
pub const MAX_WINDOW_BYTES: u64 = 1 << 30;
/// Longest `hostname`: a DNS name is at most 253 characters.
pub const MAX_HOSTNAME_LEN: usize = 253;

/// The engine options, in fio's names.
pub(super) static OPTIONS: &[OptionDef] = &[
    opt!(
        "hipri",
        [],
        true,
        "pvsync2: polled completion (RWF_HIPRI)",
        |j, v| {
            j.engine.hipri = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "hipri_percentage",
        [],
        false,
        "pvsync2: share of I/Os with RWF_HIPRI (0-100)",
        |j, v| {
            j.engine.hipri_percentage = parse_percent(v)?;
            Ok(())
        }
    ),
    opt!(
        "uncached",
        [],
        false,
        "pvsync2: buffered I/O whose pages are dropped once done (RWF_DONTCACHE)",
        |j, v| {
            j.engine.uncached = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "nowait",
        [],
        true,
        "pvsync2: fail with EAGAIN instead of blocking (RWF_NOWAIT)",
        |j, v| {
            j.engine.nowait = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "stat_type",
        [],
        false,
        "filestat: stat, lstat or statx",
        |j, v| {
            j.engine.stat_type = match v {
                "stat" => StatType::Stat,
                "lstat" => StatType::Lstat,
                "statx" => StatType::Statx,
                _ => return Err(expected(v, "stat, lstat or statx")),
            };
            Ok(())
        }
    ),
    opt!(
        "cpuload",
        [],
        false,
        "cpuio: percent of one CPU each thread burns (1-100)",
        |j, v| {
            j.engine.cpuload = parse_count_in(v, 1, 100)?;
            Ok(())
        }
    ),
    opt!(
        "cpumode",
        [],
        false,
        "cpuio: noop (spin) or qsort",
        |j, v| {
            j.engine.cpumode = match v {
                "noop" => CpuMode::Noop,
                "qsort" => CpuMode::Qsort,
                _ => return Err(expected(v, "noop or qsort")),
            };
            Ok(())
        }
    ),
    opt!(
        "cpuchunks",
        ["cpuio_chunks"],
        false,
        "cpuio: microseconds of one CPU burst",
        |j, v| {
            j.engine.cpuchunks = parse_count_in(v, 1, MAX_CPU_CHUNK_US)?;
            Ok(())
        }
    ),
    opt!(
        "exit_on_io_done",
        [],
        true,
        "cpuio: end the job once the I/O jobs are done",
        |_, v| {
            parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "hostname",
        [],
        false,
        "net: the peer's host name or address",
        |j, v| {
            let ok = v.len() <= MAX_HOSTNAME_LEN
                && v.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-._:%[]".contains(&b));
            if !ok {
                return Err(expected(v, "a host name or an IP address"));
            }
            j.engine.hostname = Some(v.trim_start_matches('[').trim_end_matches(']').to_string());
            Ok(())
        }
    ),
    opt!(
        "port",
        [],
        false,
        "net: the TCP or UDP port (numjobs use the ports from it)",
        |j, v| {
            j.engine.port = parse_count_in(v, 1, u64::from(u16::MAX))? as u16;
            Ok(())
        }
    ),
    opt!(
        "protocol",
        ["proto"],
        false,
        "net: tcp, tcpv6, udp, udpv6 or unix",
        |j, v| {
            j.engine.protocol = match v {
                "tcp" => NetProtocol::Tcp,
                "tcpv6" => NetProtocol::TcpV6,
                "udp" => NetProtocol::Udp,
                "udpv6" => NetProtocol::UdpV6,
                "unix" => NetProtocol::Unix,
                _ => return Err(expected(v, "tcp, tcpv6, udp, udpv6 or unix")),
            };
            Ok(())
        }
    ),
    opt!(
        "listen",
        [],
        true,
        "net: wait for the peer to connect",
        |j, v| {
            j.engine.listen = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "nodelay",
        [],
        true,
        "net: TCP_NODELAY on the connection",
        |j, v| {
            j.engine.nodelay = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "window_size",
        [],
        false,
        "net: socket send and receive buffer size",
        |j, v| {
            let n = parse_size(v)?;
            if n == 0 || n > MAX_WINDOW_BYTES {
                return Err(ValueError::OutOfRange {
                    value: n,
                    min: 1,
                    max: MAX_WINDOW_BYTES,
                });
            }
            j.engine.window_size = Some(n as u32);
            Ok(())
        }
    ),
    opt!(
        "pingpong",
        [],
        true,
        "net: the reader sends every message back; latency is the round trip",
        |j, v| {
            j.engine.pingpong = parse_bool(v)?;
            Ok(())
        }
    ),
];

/// A value that is not one of the words the option takes.
fn expected(value: &str, words: &str) -> ValueError {
    ValueError::Expected {
        value: value.into(),
        expected: words.into(),
    }
}

/// Checks the engine options against each other and the rest of the job.
pub(super) fn validate(job: &JobSpec) -> Result<(), OptionError> {
    if job.ioengine == "cpuio" && job.engine.cpuload == 0 {
        return Err(OptionError {
            option: "cpuload".into(),
            problem: Problem::Value(ValueError::Expected {
                value: "0".into(),
                expected: "the percent of a CPU to burn (cpuio needs cpuload=1..100)".into(),
            }),
        });
    }
    if job.ioengine == "net" {
        validate_net(job)?;
    }
    Ok(())
}

/// The `net` engine's peer: a port for TCP and UDP (one per clone, all
/// valid), a host to reach unless the job listens, a socket path for unix.
fn validate_net(job: &JobSpec) -> Result<(), OptionError> {
    use crate::job::spec::Dir;
    let o = &job.engine;
    let err = |option: &str, value: String, expected: &str| OptionError {
        option: option.into(),
        problem: Problem::Value(ValueError::Expected {
            value,
            expected: expected.into(),
        }),
    };
    if !o.protocol.is_tcp() {
        if o.listen {
            return Err(err(
                "listen",
                "1".into(),
                "given with TCP only: on UDP and unix sockets the job that reads is the receiver (as fio)",
            ));
        }
        if job.rw.is_mixed() {
            return Err(err(
                "rw",
                job.rw.name().into(),
                "read or write on UDP and unix sockets, not both (as fio)",
            ));
        }
    }
    if o.protocol == NetProtocol::Unix {
        if o.port != 0 {
            return Err(err(
                "port",
                o.port.to_string(),
                "absent with protocol=unix (the socket is the filename)",
            ));
        }
        if job.filename.is_none() {
            return Err(err(
                "filename",
                String::new(),
                "the socket's path (protocol=unix)",
            ));
        }
        return Ok(());
    }
    if o.port == 0 {
        return Err(err("port", String::new(), "a port (ioengine=net)"));
    }
    if u64::from(o.port) + u64::from(job.numjobs.max(1)) - 1 > u64::from(u16::MAX) {
        return Err(err(
            "port",
            o.port.to_string(),
            "a first port that leaves one port per clone (numjobs) below 65536",
        ));
    }
    let waits = if o.protocol.is_tcp() {
        o.listen
    } else {
        !job.rw.does(Dir::Write)
    };
    if !waits && o.hostname.is_none() {
        return Err(err(
            "hostname",
            String::new(),
            "the peer to reach (or give listen)",
        ));
    }
    Ok(())
}
