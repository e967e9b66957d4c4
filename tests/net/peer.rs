//! A `plumb serve` peer as a child process, for the other network tests.

use crate::util::plumb_bin;
use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `plumb serve` child process, killed when dropped.
pub(super) struct Peer {
    pub(super) child: Child,
    pub(super) addr: String,
}

impl Peer {
    /// Starts `plumb serve --listen LISTEN EXTRA...`, inside namespace `ns` if given.
    pub(super) fn start(ns: Option<&str>, listen: &str, extra: &[&str]) -> Peer {
        let bin = plumb_bin();
        let mut cmd = match ns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns]).arg(&bin);
                c
            }
            None => Command::new(&bin),
        };
        let mut child = cmd
            .args(["serve", "--listen", listen])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start plumb serve");
        let addr = crate::util::serve_address(&mut child);
        Peer { child, addr }
    }

    /// Waits up to `limit` for the server to exit by itself; returns its stderr.
    pub(super) fn wait_exit(mut self, limit: Duration) -> (i32, String) {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                let mut err = String::new();
                self.child
                    .stderr
                    .take()
                    .unwrap()
                    .read_to_string(&mut err)
                    .unwrap();
                return (status.code().unwrap_or(-1), err);
            }
            assert!(
                start.elapsed() < limit,
                "plumb serve did not stop by itself"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
