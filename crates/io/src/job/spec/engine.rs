//! Options that belong to one engine: `pvsync2`'s request flags,
//! `filestat`'s system call, `cpuio`'s load, the `net` engine's peer.

/// The job's engine options, with fio's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineOpts {
    /// `hipri`: ask for polled completion (`RWF_HIPRI`, pvsync2).
    pub hipri: bool,
    /// `hipri_percentage`: the share of I/Os `hipri` applies to (pvsync2).
    pub hipri_percentage: u32,
    /// `uncached`: buffered I/O that drops its pages once done
    /// (`RWF_DONTCACHE`, pvsync2; ignored with `direct=1`, as fio).
    pub uncached: bool,
    /// `nowait`: fail with `EAGAIN` instead of blocking (`RWF_NOWAIT`, pvsync2).
    pub nowait: bool,
    /// `stat_type`: the call `filestat` measures.
    pub stat_type: StatType,
    /// `cpuload`: the share of one CPU each `cpuio` thread burns (1-100).
    pub cpuload: u32,
    /// `cpumode`: what `cpuio` burns the CPU with.
    pub cpumode: CpuMode,
    /// `cpuchunks`: microseconds of one `cpuio` burst.
    pub cpuchunks: u32,
    /// `hostname`: the `net` engine's peer (or, listening, the address to bind).
    pub hostname: Option<String>,
    /// `port`: the `net` engine's first port (clone N uses `port + N`);
    /// 0 until given.
    pub port: u16,
    /// `protocol`: the `net` engine's transport.
    pub protocol: NetProtocol,
    /// `listen`: the `net` job waits for its peer instead of connecting.
    pub listen: bool,
    /// `nodelay`: `TCP_NODELAY` on the connection.
    pub nodelay: bool,
    /// `window_size`: the socket's send and receive buffer sizes.
    pub window_size: Option<u32>,
    /// `pingpong`: each message is answered by the peer with the same bytes.
    pub pingpong: bool,
}

impl Default for EngineOpts {
    fn default() -> Self {
        EngineOpts {
            hipri: false,
            hipri_percentage: 100,
            uncached: false,
            nowait: false,
            stat_type: StatType::Stat,
            cpuload: 0,
            cpumode: CpuMode::Noop,
            cpuchunks: 50_000,
            hostname: None,
            port: 0,
            protocol: NetProtocol::Tcp,
            listen: false,
            nodelay: false,
            window_size: None,
            pingpong: false,
        }
    }
}

/// The call `filestat` times (`stat_type=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatType {
    /// `stat(2)`: follows a final symlink.
    Stat,
    /// `lstat(2)`: the symlink itself.
    Lstat,
    /// `statx(2)` with every field asked for.
    Statx,
}

/// How `cpuio` burns a CPU (`cpumode=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuMode {
    /// A spin on the clock.
    Noop,
    /// Sorting an array of random numbers, again and again, for the burst.
    Qsort,
}

/// The `net` engine's transport (`protocol=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetProtocol {
    /// TCP over IPv4.
    Tcp,
    /// TCP over IPv6.
    TcpV6,
    /// UDP over IPv4.
    Udp,
    /// UDP over IPv6.
    UdpV6,
    /// A Unix stream socket at the job's `filename`.
    Unix,
}

impl NetProtocol {
    /// True for the datagram protocols.
    pub fn is_udp(self) -> bool {
        matches!(self, NetProtocol::Udp | NetProtocol::UdpV6)
    }

    /// True for TCP, the one protocol with `listen`.
    pub fn is_tcp(self) -> bool {
        matches!(self, NetProtocol::Tcp | NetProtocol::TcpV6)
    }

    /// True for the IPv6 protocols.
    pub fn is_v6(self) -> bool {
        matches!(self, NetProtocol::TcpV6 | NetProtocol::UdpV6)
    }
}
