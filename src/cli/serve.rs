//! `plumb serve`: run the network peer from the command line.

use super::{ExitCode, Signals};
use crate::net::{ServeOptions, Server};

/// Options of `plumb serve`.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on (loopback unless told otherwise; port 0 picks one).
    #[arg(long, default_value = "127.0.0.1:5210")]
    pub listen: String,
    /// Stop after this long (e.g. 10m).
    #[arg(long, value_name = "DURATION")]
    pub max_duration: Option<String>,
    /// Stop after this many sessions (one per network primitive call).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_sessions: Option<u64>,
    /// Connections served at once.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub max_connections: u64,
    /// Do not log connections.
    #[arg(long)]
    pub quiet: bool,
}

/// Runs `plumb serve`.
pub fn serve_main(args: &ServeArgs) -> ExitCode {
    let max_duration = match args
        .max_duration
        .as_deref()
        .map(crate::units::parse_duration)
    {
        None => None,
        Some(Ok(d)) => Some(d),
        Some(Err(e)) => {
            eprintln!("plumb serve: error: --max-duration: {e}");
            return ExitCode::BadInput;
        }
    };
    let opts = ServeOptions {
        max_duration,
        max_sessions: args.max_sessions,
        max_connections: args.max_connections as usize,
        log: !args.quiet,
    };
    let server = match Server::bind(&args.listen, opts) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("plumb serve: error: --listen {}: {e}", args.listen);
            return ExitCode::BadInput;
        }
    };
    println!("plumb serve: listening on {}", server.local_addr());
    let signals = Signals::install();
    match server.serve(&signals.stop) {
        Ok(s) => {
            eprintln!(
                "plumb serve: done: {} sessions, {} connections, {} refused",
                s.sessions, s.connections, s.refused
            );
            ExitCode::Ok
        }
        Err(e) => {
            eprintln!("plumb serve: error: {e}");
            ExitCode::Failed
        }
    }
}
