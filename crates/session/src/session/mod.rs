//! `plumb run`'s work below the command line:
//!
//! - [`prepare`]: the [`Request`] checked before anything runs — packs
//!   resolved, trusted and compiled, parameters, assertions, the deadline,
//!   the journal a killed run left, the grants — into a [`Prepared`] run;
//! - [`grant`]: what a pack asks for against what the run grants;
//! - [`execute`]: the packs' scenarios run one after another, each pack in
//!   a run directory of its own, each scenario `repeat` times;
//! - [`gather`]: one scenario's runs folded into its result, and the run
//!   document;
//! - [`saved`] and [`journal`]: the `--json` file, and its journal of
//!   finished scenarios that `--resume` continues.
//!
//! Nothing here prints: what the user sees goes to an [`Observer`] the
//! command supplies, and errors are [`SessionError`]s.

pub mod error;
pub mod execute;
pub mod gather;
pub mod grant;
pub mod journal;
pub mod prepare;
pub mod saved;

pub use error::SessionError;
pub use execute::{Finished, Live};
pub use prepare::{Prepared, Request};

use crate::runner::activity::Activity;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Hears what a session does, for the command to show.
pub trait Observer {
    /// Something happened worth telling the user.
    fn event(&mut self, event: Event<'_>);
    /// A run of a scenario starts: `title` (`[2/6] quick/seqread`), the
    /// time since the session started, what the scenario is doing, and
    /// how long its last repeat took.
    fn run_starts(
        &mut self,
        title: &str,
        run_elapsed: Duration,
        activity: Arc<Activity>,
        expected: Option<Duration>,
    );
    /// The run [`Observer::run_starts`] announced has ended.
    fn run_ends(&mut self);
}

/// One scenario's place in the session, for messages.
#[derive(Debug, Clone, Copy)]
pub struct Place<'a> {
    /// Its number, from 1.
    pub index: usize,
    /// The number of scenarios in the session.
    pub total: usize,
    /// Its pack's name.
    pub pack: &'a str,
    /// Its name.
    pub scenario: &'a str,
}

/// What a session tells its [`Observer`].
#[derive(Debug)]
pub enum Event<'a> {
    /// A pack asks for more than its run directory (before anything runs).
    PackNeeds {
        /// The pack's name.
        pack: &'a str,
        /// One line per capability.
        needs: &'a [String],
    },
    /// The journal's last line was cut short by the kill and is cut off.
    TornJournal {
        /// The journal.
        journal: &'a Path,
    },
    /// A scenario an earlier attempt finished is kept from the journal.
    KeptFromJournal {
        /// Which scenario.
        place: Place<'a>,
        /// The journal's name.
        journal: &'a str,
    },
    /// A scenario's run failed (or was stopped).
    ScenarioFailed {
        /// Which scenario.
        place: Place<'a>,
        /// Why.
        error: &'a str,
    },
    /// A finished scenario is in the journal (bookkeeping).
    Journalled {
        /// The scenario's name.
        scenario: &'a str,
        /// The journal.
        journal: &'a Path,
    },
    /// Writing the journal failed: no more attempts, results stay in memory.
    JournalFailed {
        /// The journal.
        journal: &'a Path,
        /// Why.
        error: &'a std::io::Error,
    },
    /// A pack's run directory is kept (`keep`).
    KeptDir {
        /// The directory.
        dir: &'a Path,
    },
    /// The result document is saved.
    Saved {
        /// The `--json` file.
        json: &'a Path,
    },
    /// The run was interrupted; its journal stays for `--resume`.
    ResumeLater {
        /// The `--json` file.
        json: &'a Path,
        /// The journal kept.
        journal: &'a Path,
    },
    /// The journal of a saved run could not be removed.
    JournalLeft {
        /// The journal.
        journal: &'a Path,
        /// Why.
        error: &'a std::io::Error,
    },
}
