//! `plumb serve` on a host through the agent, for `fleet net`.

use super::session::Session;
use super::{Binary, RemoteError, STOP_LIMIT};
use crate::fleet::inventory::Host;
use crate::fleet::ssh::{self, quote, Ssh};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// A `plumb serve` running on a host through the agent; stopped (and
/// gone from the host) when [`Server::stop`] runs or it is dropped.
pub struct Server {
    session: Session,
}

impl Server {
    /// Starts `plumb serve --listen LISTEN` on `host`, for at most
    /// `max_duration` (a duration text), and waits until it listens there.
    pub fn start(
        ssh: &Ssh,
        host: &Host,
        binary: &Binary,
        listen: std::net::SocketAddr,
        max_duration: &str,
        stop: &AtomicBool,
    ) -> Result<Server, RemoteError> {
        use std::sync::atomic::Ordering;
        let remote = format!(
            "exec {} fleet agent serve --listen {} --max-duration {}",
            binary.on(host),
            quote(&listen.to_string()),
            quote(max_duration)
        );
        let mut s = Session::start(ssh, host, &remote, Vec::new(), None)?;
        let start = Instant::now();
        let limit = ssh.connect_timeout + Duration::from_secs(20);
        loop {
            s.drain(&mut |_| {});
            if let Some(said) = s.ready.take() {
                // The host only confirms; where the client connects is ours.
                return match said.parse::<std::net::SocketAddr>() {
                    Ok(a) if a == listen => Ok(Server { session: s }),
                    _ => Err(RemoteError::ServesElsewhere { said, listen }),
                };
            }
            if let Ok(Some(status)) = s.child.try_wait() {
                s.finish(&mut |_| {}, super::FINISH_LIMIT);
                return Err(match s.last_line.clone() {
                    Some(line) => RemoteError::ServeEnded(line),
                    None => s.reason(status.code().unwrap_or(-1)),
                });
            }
            if stop.load(Ordering::Relaxed) || start.elapsed() > limit {
                s.cut();
                let _ = s.child.kill();
                let _ = s.child.wait();
                return Err(if stop.load(Ordering::Relaxed) {
                    RemoteError::Stopped
                } else {
                    RemoteError::ServeLate(limit.as_secs())
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops the server: cuts the lifeline and waits for the session to end.
    pub fn stop(mut self) {
        self.end();
    }

    fn end(&mut self) {
        self.session.cut();
        let never = AtomicBool::new(false);
        let _ = ssh::wait(&mut self.session.child, STOP_LIMIT, &never);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if matches!(self.session.child.try_wait(), Ok(None)) {
            self.end();
        }
    }
}
