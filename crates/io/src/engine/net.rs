//! `net`: each I/O sends (writes) or receives (reads) one block over a
//! socket, as fio's net engine, and speaks its wire protocol so either end
//! can be fio: TCP, UDP or a Unix stream socket (at `filename`); a TCP job
//! with `listen`, or a UDP or unix job that reads, waits for its peer, the
//! other connects to `hostname:port` (clone N to `port + N`). A UDP sender announces itself with fio's link-open
//! message and ends with its link-close message; a TCP reader ends when
//! its peer closes. With `pingpong` the reader sends every block back and
//! the writer's latency is the round trip.
//!
//! Every wait (a peer to connect, room to send, bytes to arrive) is cut in
//! slices that look at the job's stop flag and end time.
//!
//! `plumb fio` runs on the host as fio does; in a scenario (a sandboxed
//! job) the engine is refused: scenarios reach the network only through
//! the endpoints `--allow-net` grants.

use super::{Completion, EngineCaps, EngineInfo, EngineSetup, IoEngine, IoRequest, Op, SlotMemory};
use crate::job::spec::{EngineOpts, NetProtocol};
use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs, UdpSocket};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Registry entry.
pub const INFO: EngineInfo = EngineInfo {
    name: "net",
    caps: EngineCaps {
        is_async: false,
        diskless: true,
        by_path: true,
        own_latency: false,
    },
    create,
};

/// fio's link messages: magic, then command, 4 bytes each.
const LINK_MAGIC: u32 = 0x6c69_6e6b;
const LINK_OPEN: u32 = 0x98;
const LINK_CLOSE: u32 = 0x89;

/// How long one wait lasts before the stop flag and end time are read again.
const SLICE_MS: i32 = 100;
/// How long a connecting job retries a refused connection: the peer's job
/// may start a moment later in the same run (fio's netio.fio relies on
/// `startdelay` for that).
const CONNECT_RETRY: Duration = Duration::from_secs(5);
/// How many times a UDP sender sends its link-close message.
const CLOSE_REPEATS: u32 = 5;

struct Net<'a> {
    fd: OwnedFd,
    memory: Arc<SlotMemory>,
    udp: bool,
    pingpong: bool,
    /// A UDP sender: tells the reader it is done when dropped.
    send_close: bool,
    /// The peer has closed (TCP, unix) or sent fio's link-close (UDP).
    ended: bool,
    stop: &'a AtomicBool,
    until: Option<Instant>,
}

/// An error that names the peer.
fn net_error(what: &str, peer: &str, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("net engine: {what} {peer}: {e}"))
}

fn create(setup: EngineSetup<'_>) -> io::Result<Box<dyn IoEngine + '_>> {
    if setup.paths.iter().any(|p| p.space.is_sandboxed()) {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "ioengine=net is for plumb fio; scenarios reach the network through net.* and --allow-net",
        ));
    }
    let o = &setup.options;
    let clone = setup.clone_index;
    let waiter = Waiter {
        stop: setup.stop,
        until: setup.until,
    };
    // Only TCP has `listen` (fio refuses it elsewhere): on UDP and unix
    // sockets the job that reads is the receiver.
    let receives = if o.protocol.is_tcp() {
        o.listen
    } else {
        !setup.writes
    };
    let (fd, peer_is_udp) = match o.protocol {
        NetProtocol::Unix => {
            let path = setup.paths.first().map(|p| p.path.clone()).ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "protocol=unix needs a filename",
                )
            })?;
            (open_unix(&path, receives, &waiter)?, false)
        }
        p if p.is_udp() => (open_udp(o, clone, receives, &waiter)?, true),
        _ => (open_tcp(o, clone, receives, &waiter)?, false),
    };
    set_nonblocking(fd.as_raw_fd())?;
    if let Some(w) = o.window_size {
        set_int(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUF, w as i32)?;
        set_int(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_SNDBUF, w as i32)?;
    }
    if o.nodelay && !peer_is_udp && o.protocol != NetProtocol::Unix {
        set_int(fd.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_NODELAY, 1)?;
    }
    Ok(Box::new(Net {
        fd,
        memory: setup.memory,
        udp: peer_is_udp,
        pingpong: o.pingpong,
        send_close: peer_is_udp && !receives,
        ended: false,
        stop: setup.stop,
        until: setup.until,
    }))
}

/// The job's stop flag and end time, read between slices of a wait.
struct Waiter<'a> {
    stop: &'a AtomicBool,
    until: Option<Instant>,
}

impl Waiter<'_> {
    /// An error when the job is to stop.
    fn check(&self, what: &str) -> io::Result<()> {
        if self.stop.load(Ordering::Relaxed) || self.until.is_some_and(|t| Instant::now() >= t) {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("net engine: the job ended while waiting for {what}"),
            ));
        }
        Ok(())
    }
}

/// The port of clone `clone` (validated to fit).
fn port_of(o: &EngineOpts, clone: u32) -> u16 {
    o.port
        .saturating_add(u16::try_from(clone).unwrap_or(u16::MAX))
}

/// The peer's addresses for the job's protocol, or, for the end that
/// waits, the local ones (`hostname` if given, else every interface, as fio).
fn addresses(o: &EngineOpts, clone: u32, local: bool) -> io::Result<Vec<SocketAddr>> {
    let port = port_of(o, clone);
    let any = if o.protocol.is_v6() { "::" } else { "0.0.0.0" };
    let host = match &o.hostname {
        Some(h) => h.as_str(),
        None if local => any,
        None => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "net engine: no hostname to reach",
            ))
        }
    };
    let found: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| net_error("cannot resolve", &format!("{host}:{port}"), e))?
        .filter(|a| a.is_ipv6() == o.protocol.is_v6())
        .collect();
    if found.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!(
                "net engine: {host} has no {} address",
                if o.protocol.is_v6() { "IPv6" } else { "IPv4" }
            ),
        ));
    }
    Ok(found)
}

/// Waits, in slices, until `fd` is ready for `events`.
fn wait_ready(fd: RawFd, events: i16, waiter: &Waiter<'_>, what: &str) -> io::Result<()> {
    loop {
        waiter.check(what)?;
        let mut p = libc::pollfd {
            fd,
            events,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let r = unsafe { libc::poll(&mut p, 1, SLICE_MS) };
        if r > 0 {
            return Ok(());
        }
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(e);
            }
        }
    }
}

fn open_tcp(o: &EngineOpts, clone: u32, listen: bool, waiter: &Waiter<'_>) -> io::Result<OwnedFd> {
    let addrs = addresses(o, clone, listen)?;
    if listen {
        let listener = TcpListener::bind(&addrs[..])
            .map_err(|e| net_error("cannot listen on", &addrs[0].to_string(), e))?;
        if let Some(w) = o.window_size {
            // Accepted sockets take their buffers from the listener.
            set_int(
                listener.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                w as i32,
            )?;
        }
        listener.set_nonblocking(true)?;
        loop {
            match listener.accept() {
                Ok((s, _)) => return Ok(s.into()),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    wait_ready(listener.as_raw_fd(), libc::POLLIN, waiter, "a connection")?;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(net_error("cannot accept on", &addrs[0].to_string(), e)),
            }
        }
    }
    let give_up = Instant::now() + CONNECT_RETRY;
    loop {
        let mut last = None;
        for a in &addrs {
            match TcpStream::connect_timeout(a, Duration::from_millis(SLICE_MS as u64 * 10)) {
                Ok(s) => return Ok(s.into()),
                Err(e) => last = Some((a, e)),
            }
        }
        let Some((a, e)) = last else {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        };
        if e.kind() != io::ErrorKind::ConnectionRefused || Instant::now() >= give_up {
            return Err(net_error("cannot connect to", &a.to_string(), e));
        }
        waiter.check("the peer to listen")?;
        std::thread::sleep(Duration::from_millis(SLICE_MS as u64));
    }
}

/// fio's link message `cmd`: the open one in network order, the close one
/// in little-endian, as fio writes them.
fn link_message(cmd: u32) -> [u8; 8] {
    let mut m = [0u8; 8];
    if cmd == LINK_OPEN {
        m[..4].copy_from_slice(&LINK_MAGIC.to_be_bytes());
        m[4..].copy_from_slice(&cmd.to_be_bytes());
    } else {
        m[..4].copy_from_slice(&LINK_MAGIC.to_le_bytes());
        m[4..].copy_from_slice(&cmd.to_le_bytes());
    }
    m
}

fn open_udp(
    o: &EngineOpts,
    clone: u32,
    receiver: bool,
    waiter: &Waiter<'_>,
) -> io::Result<OwnedFd> {
    let addrs = addresses(o, clone, receiver)?;
    if receiver {
        let sock = UdpSocket::bind(&addrs[..])
            .map_err(|e| net_error("cannot bind", &addrs[0].to_string(), e))?;
        sock.set_nonblocking(true)?;
        let mut msg = [0u8; 8];
        loop {
            match sock.recv_from(&mut msg) {
                Ok((8, from)) if msg == link_message(LINK_OPEN) => {
                    // Replies (pingpong) go to the sender.
                    sock.connect(from)?;
                    return Ok(sock.into());
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    wait_ready(sock.as_raw_fd(), libc::POLLIN, waiter, "the sender")?;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
    let local = if o.protocol.is_v6() {
        "[::]:0"
    } else {
        "0.0.0.0:0"
    };
    let sock = UdpSocket::bind(local)?;
    sock.connect(&addrs[..])
        .map_err(|e| net_error("cannot reach", &addrs[0].to_string(), e))?;
    // Nobody listening yet is told by an ICMP error, which arrives as
    // ECONNREFUSED on the connected socket: then the link-open goes again,
    // as a TCP job retries its connection; a reader that has it is there.
    let give_up = Instant::now() + CONNECT_RETRY;
    loop {
        let sent = sock.send(&link_message(LINK_OPEN));
        std::thread::sleep(Duration::from_millis(20));
        let refused = match sent {
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => true,
            Err(e) => return Err(net_error("cannot send to", &addrs[0].to_string(), e)),
            Ok(_) => sock
                .take_error()?
                .is_some_and(|e| e.kind() == io::ErrorKind::ConnectionRefused),
        };
        if !refused {
            return Ok(sock.into());
        }
        if Instant::now() >= give_up {
            return Err(net_error(
                "no reader at",
                &addrs[0].to_string(),
                io::Error::from(io::ErrorKind::ConnectionRefused),
            ));
        }
        waiter.check("the reader")?;
        std::thread::sleep(Duration::from_millis(SLICE_MS as u64));
    }
}

fn open_unix(path: &Path, listen: bool, waiter: &Waiter<'_>) -> io::Result<OwnedFd> {
    let name = path.display().to_string();
    if listen {
        // A socket left by an earlier run is replaced, as fio does;
        // anything else at the path is not touched.
        if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket()) {
            std::fs::remove_file(path).map_err(|e| net_error("cannot replace", &name, e))?;
        }
        let listener =
            UnixListener::bind(path).map_err(|e| net_error("cannot listen on", &name, e))?;
        listener.set_nonblocking(true)?;
        let accepted = loop {
            match listener.accept() {
                Ok((s, _)) => break s,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    wait_ready(listener.as_raw_fd(), libc::POLLIN, waiter, "a connection")?;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(net_error("cannot accept on", &name, e)),
            }
        };
        let _ = std::fs::remove_file(path);
        return Ok(accepted.into());
    }
    let give_up = Instant::now() + CONNECT_RETRY;
    loop {
        match UnixStream::connect(path) {
            Ok(s) => return Ok(s.into()),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused
                ) && Instant::now() < give_up =>
            {
                waiter.check("the peer to listen")?;
                std::thread::sleep(Duration::from_millis(SLICE_MS as u64));
            }
            Err(e) => return Err(net_error("cannot connect to", &name, e)),
        }
    }
}

fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: F_GETFL/F_SETFL on an open descriptor.
    let r = unsafe {
        let fl = libc::fcntl(fd, libc::F_GETFL);
        if fl < 0 {
            fl
        } else {
            libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK)
        }
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn set_int(fd: RawFd, level: i32, name: i32, value: i32) -> io::Result<()> {
    // SAFETY: an int option of the size given, on an open socket.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&value as *const i32).cast(),
            std::mem::size_of::<i32>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

impl Net<'_> {
    fn waiter(&self) -> Waiter<'_> {
        Waiter {
            stop: self.stop,
            until: self.until,
        }
    }

    /// Sends all of `buf` (a stream) or one datagram of it (UDP); the
    /// bytes sent, or `-errno`.
    fn send_all(&self, buf: *const u8, len: usize) -> io::Result<i64> {
        let fd = self.fd.as_raw_fd();
        let mut done = 0usize;
        while done < len {
            // SAFETY: `buf` names `len` readable bytes of a slot in use by
            // this request.
            let r = unsafe { libc::send(fd, buf.add(done).cast(), len - done, libc::MSG_NOSIGNAL) };
            if r >= 0 {
                done += r as usize;
                if self.udp {
                    break;
                }
                continue;
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EAGAIN) => {
                    wait_ready(fd, libc::POLLOUT, &self.waiter(), "room to send")?
                }
                Some(libc::EINTR) => {}
                Some(n) => return Ok(-i64::from(n)),
                None => return Err(e),
            }
        }
        Ok(done as i64)
    }

    /// Receives up to `len` bytes (all `len` when `full`, for a pingpong
    /// reply); 0 once the peer has ended, or `-errno`.
    fn recv(&mut self, buf: *mut u8, len: usize, full: bool) -> io::Result<i64> {
        let fd = self.fd.as_raw_fd();
        let mut done = 0usize;
        loop {
            // SAFETY: `buf` names `len` writable bytes of a slot in use by
            // this request.
            let r = unsafe { libc::recv(fd, buf.add(done).cast(), len - done, 0) };
            if r > 0 {
                let got = r as usize;
                // SAFETY: the bytes just received.
                let msg = unsafe { std::slice::from_raw_parts(buf.add(done), got) };
                // fio's sender ends with its link-close message on every
                // protocol: it is not data. On a stream it may come glued
                // to the last block, so a chunk that ends with it ends the
                // transfer (8 bytes of random data that happen to be the
                // message would too: a chance of 2^-64 per chunk).
                let close = link_message(LINK_CLOSE);
                if msg.ends_with(&close) && (got == 8 || !self.udp) {
                    self.ended = true;
                    return Ok((done + got - close.len()) as i64);
                }
                done += got;
                if self.udp || !full || done == len {
                    return Ok(done as i64);
                }
                continue;
            }
            if r == 0 && !self.udp {
                self.ended = true;
                return Ok(done as i64);
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                _ if r == 0 => {}
                Some(libc::EAGAIN) => wait_ready(fd, libc::POLLIN, &self.waiter(), "data")?,
                Some(libc::EINTR) => {}
                Some(n) => return Ok(-i64::from(n)),
                None => return Err(e),
            }
        }
    }
}

impl IoEngine for Net<'_> {
    fn queue(&mut self, req: &IoRequest) -> io::Result<Option<i64>> {
        let buf = super::check_request(req, &self.memory, 1)?;
        let len = req.len as usize;
        let result = match req.op {
            Op::Write => {
                let sent = self.send_all(buf, len)?;
                if self.pingpong && sent > 0 {
                    let back = self.recv(buf, sent as usize, true)?;
                    if back < 0 {
                        back
                    } else {
                        sent
                    }
                } else {
                    sent
                }
            }
            Op::Read => {
                let got = self.recv(buf, len, self.pingpong)?;
                if self.pingpong && got > 0 {
                    self.send_all(buf, got as usize)?;
                }
                got
            }
        };
        Ok(Some(result))
    }

    fn submit(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn reap(&mut self, _min: u32, _max: u32, _out: &mut Vec<Completion>) -> io::Result<()> {
        Ok(())
    }

    fn ended(&self) -> bool {
        self.ended
    }
}

impl Drop for Net<'_> {
    /// A UDP sender tells the reader it is done (fio's link-close). A
    /// datagram finding the reader's buffer full is dropped, so the message
    /// goes a few times, a little apart; a reader that has closed ignores
    /// the rest.
    fn drop(&mut self) {
        if self.send_close {
            let m = link_message(LINK_CLOSE);
            for i in 0..CLOSE_REPEATS {
                if i > 0 {
                    std::thread::sleep(Duration::from_millis(20));
                }
                // SAFETY: a valid buffer on an open socket.
                unsafe {
                    libc::send(
                        self.fd.as_raw_fd(),
                        m.as_ptr().cast(),
                        m.len(),
                        libc::MSG_NOSIGNAL,
                    )
                };
            }
        }
    }
}
