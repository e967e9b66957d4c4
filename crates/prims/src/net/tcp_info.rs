//! What the kernel knows of a TCP connection (`getsockopt(TCP_INFO)`): the
//! bytes the peer acknowledged and the segments retransmitted, as iperf3
//! reads them for its "Retr" column.

use std::mem::{offset_of, size_of};
use std::net::TcpStream;
use std::os::fd::AsRawFd;

/// The sender's view of a connection.
#[derive(Debug, Clone, Copy)]
pub struct SenderInfo {
    /// Payload bytes the peer acknowledged since the connection opened.
    pub bytes_acked: u64,
    /// Segments retransmitted since the connection opened.
    pub retransmits: u64,
}

/// Reads the sender's counters, or None where the kernel does not report
/// `tcpi_bytes_acked` (before Linux 4.1) or the call fails.
pub fn sender_info(s: &TcpStream) -> Option<SenderInfo> {
    // SAFETY: tcp_info is plain data; zeroes are a valid value.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: the pointer and length describe `info`, which outlives the call.
    let rc = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    let needed = offset_of!(libc::tcp_info, tcpi_bytes_acked) + size_of::<u64>();
    (rc == 0 && len as usize >= needed).then_some(SenderInfo {
        bytes_acked: info.tcpi_bytes_acked,
        retransmits: u64::from(info.tcpi_total_retrans),
    })
}
