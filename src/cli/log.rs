//! The one subscriber of plumb's logging facade (`tracing`): the library
//! crates never print, they emit events, and this writes each event's
//! message verbatim to stderr, one line each, as the commands' own output
//! sits beside it. `PLUMB_LOG` (`error`, `warn`, `info`, `debug`, `trace`)
//! sets how much is written; the default is `info`, which is everything
//! the library says to a user (warnings, a script's `print`, a guest's
//! log, the "Laying out IO file" line); `debug` adds what is for
//! developers.

use std::fmt;
use tracing::{Event, Subscriber};
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::fmt::format::{self, FormatEvent, FormatFields};
use tracing_subscriber::fmt::FmtContext;
use tracing_subscriber::registry::LookupSpan;

/// An event's fields as written, without level, target or time: the
/// message as the library worded it (its other fields, if any, follow as
/// `name=value`).
struct MessageOnly;

impl<S, N> FormatEvent<S, N> for MessageOnly
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: format::Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}

/// The level `PLUMB_LOG` asks for, `info` when unset or unknown.
fn level() -> LevelFilter {
    std::env::var("PLUMB_LOG")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(LevelFilter::INFO)
}

/// Installs the subscriber for this process (once, first thing in `main`).
pub fn install() {
    let _ = tracing_subscriber::fmt()
        .with_max_level(level())
        .with_ansi(false)
        .with_writer(std::io::stderr)
        .event_format(MessageOnly)
        .try_init();
}
