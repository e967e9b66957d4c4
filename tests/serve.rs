//! `plumb serve` against hostile and odd peers over real sockets: CRLF
//! request lines, peers that trickle or never finish their request, more
//! connections than allowed, and escapes in what it logs.

use crate::util::plumb_bin;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `plumb serve` on a free loopback port, killed when dropped.
struct Server {
    child: Child,
    addr: String,
}

impl Server {
    fn start(extra: &[&str]) -> Server {
        let mut child = Command::new(plumb_bin())
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start plumb serve");
        let addr = crate::util::serve_address(&mut child);
        Server { child, addr }
    }

    fn connect(&self) -> TcpStream {
        let s = TcpStream::connect(&self.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        s
    }

    /// Stops it with SIGTERM and returns its stderr.
    fn stop(mut self) -> String {
        let ok = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(ok.success());
        let mut err = String::new();
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        let status = self.child.wait().unwrap();
        assert_eq!(status.code(), Some(0), "{err}");
        err
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads one `\n`-ended line byte by byte (nothing after it is consumed).
fn answer(s: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let mut b = [0u8; 1];
    while s.read(&mut b).unwrap_or(0) == 1 && b[0] != b'\n' {
        out.push(b[0]);
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn crlf_request_lines_are_served() {
    let server = Server::start(&[]);
    let mut s = server.connect();
    s.write_all(b"PLUMB/1 1f echo 4\r\n").unwrap();
    assert_eq!(answer(&mut s), "OK");
    s.write_all(b"ping").unwrap();
    let mut back = [0u8; 4];
    s.read_exact(&mut back).unwrap();
    assert_eq!(&back, b"ping");
}

#[test]
fn slow_or_silent_peers_are_dropped_and_the_connection_limit_holds() {
    let server = Server::start(&["--max-connections", "2"]);
    // One byte a second never completes a request line: the server gives
    // up after its opening deadline (5 s), not after 128 timeouts.
    let started = Instant::now();
    let mut trickle = server.connect();
    trickle
        .set_read_timeout(Some(Duration::from_millis(900)))
        .unwrap();
    let mut refused = Vec::new();
    let mut buf = [0u8; 256];
    for b in b"PLUMB/1 1 sink".iter().cycle() {
        assert!(started.elapsed() < Duration::from_secs(12), "not dropped");
        if trickle.write_all(&[*b]).is_err() {
            break;
        }
        // Pace the bytes by waiting for an answer.
        match trickle.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                refused.extend_from_slice(&buf[..n]);
                if refused.ends_with(b"\n") {
                    break;
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => panic!("{e}"),
        }
    }
    let refused = String::from_utf8_lossy(&refused);
    assert!(
        refused.starts_with("ERR") && refused.contains("within"),
        "{refused:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );

    // Two silent peers fill the slots: a third is answered busy at once.
    let a = server.connect();
    let b = server.connect();
    // Give the server the time to accept both (their slots are taken on accept).
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut c = server.connect();
        c.set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        let mut line = String::new();
        let _ = c.read_to_string(&mut line);
        if line.starts_with("ERR busy") {
            break;
        }
        assert!(Instant::now() < deadline, "never busy: {line:?}");
    }
    // Closing them frees the slots, once the server has seen them close:
    // until then a request may still be answered busy.
    drop((a, b));
    let when_free = |request: &[u8]| -> String {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let mut s = server.connect();
            s.write_all(request).unwrap();
            let got = answer(&mut s);
            if !got.starts_with("ERR busy") {
                return got;
            }
            assert!(Instant::now() < deadline, "slots never freed");
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    assert_eq!(when_free(b"PLUMB/1 2 echo 1\n"), "OK");
    // Escapes a peer sends never reach the server's log raw.
    let got = when_free(b"PLUMB/1 3 \x1b]0;pwn\x07\n");
    assert!(got.starts_with("ERR unknown request"), "{got:?}");
    // SIGTERM lets the connections still open finish and log first.
    let log = server.stop();
    assert!(!log.contains('\u{1b}'), "{log:?}");
    assert!(log.contains("\\x1b]0;pwn\\x07"), "{log}");
}
