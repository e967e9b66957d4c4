//! A prepared session run: its packs one after another, each in a run
//! directory of its own under the run's account, each scenario `repeat`
//! times; what an earlier attempt finished is kept from the journal, and
//! each scenario is journalled as it ends. A stop (SIGINT, SIGTERM) ends
//! the session after the scenario under way, keeping what was gathered.

use crate::api::report::DocumentRoom;
use crate::api::scenario_error::ScenarioErrorKind;
use crate::api::{Host, Limits, Workspace};
use crate::model::document::{RunDocument, ScenarioResult};
use crate::runner::activity::Activity;
use crate::sandbox::{Account, RunDir};
use crate::scenario::assertions::{self, Assertion};
use crate::scenario::pack::{Pack, ScenarioSource};
use crate::scenario::{self as scenarios, Compiled};
use crate::session::gather::{self, document};
use crate::session::saved::{DocumentError, Saved};
use crate::session::{Event, Observer, Place, Prepared, Request, SessionError};
use plumb_metrics::metrics::{Board, Steps};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a running session shares with the command: the stop flag its
/// signal handlers set, and the live /metrics board, when there is one.
#[derive(Debug, Clone)]
pub struct Live {
    /// Set to stop after the scenario under way.
    pub stop: Arc<AtomicBool>,
    /// The board the run publishes its progress on.
    pub board: Option<Arc<Board>>,
}

/// A session that has run: its document, still to be saved.
pub struct Finished {
    /// The run document.
    pub document: RunDocument,
    /// True when a stop ended the session early.
    pub interrupted: bool,
    /// The assertions to check.
    asserts: Vec<Assertion>,
    /// The `--json` file and its journal.
    saved: Saved,
}

impl Finished {
    /// Saves the document with `--json` (all or nothing), then removes the
    /// journal, which an interrupted run or a failed save keeps.
    pub fn save(&mut self, observer: &mut dyn Observer) -> Result<(), DocumentError> {
        self.saved.save(&self.document, self.interrupted, observer)
    }

    /// The assertions that failed, one line each (none are checked on an
    /// interrupted run).
    pub fn failed_assertions(&self) -> Vec<String> {
        if self.interrupted {
            return Vec::new();
        }
        self.asserts
            .iter()
            .flat_map(|a| assertions::check(&self.document, a))
            .collect()
    }

    /// True when a scenario failed.
    pub fn scenario_failed(&self) -> bool {
        self.document.scenarios.iter().any(|g| g.error.is_some())
    }
}

/// Whether the session goes on after a pack or a scenario.
#[derive(PartialEq, Eq)]
enum Flow {
    Next,
    Stop,
}

/// A session under way.
struct Session<'a> {
    request: &'a Request,
    /// The `-p` parameters.
    params: &'a BTreeMap<String, String>,
    /// The deadline per scenario.
    timeout: Duration,
    /// The memory each scenario may use.
    memory: usize,
    /// The bytes and inodes the run may use.
    granted: (u64, u64),
    live: &'a Live,
    observer: &'a mut dyn Observer,
    saved: &'a mut Saved,
    /// The scenarios' results so far.
    gathered: Vec<ScenarioResult>,
    /// The number of the scenario under way, from 1.
    index: usize,
    /// The number of scenarios.
    total: usize,
    started: Instant,
}

impl Prepared {
    /// Runs the session (see the module's doc); a run directory that
    /// cannot be made ends it with an error.
    pub fn run(self, live: &Live, observer: &mut dyn Observer) -> Result<Finished, SessionError> {
        let Prepared {
            request,
            packs,
            compiled,
            params,
            asserts,
            timeout,
            memory,
            granted_bytes,
            granted_inodes,
            mut saved,
        } = self;
        if let Some(board) = &live.board {
            for p in &packs {
                board.add_pack(&p.name, &p.sha256);
                board.plan((p.scenarios.len() as u64).saturating_mul(u64::from(request.repeat)));
            }
        }
        // One account for the whole run, whatever the number of scenario
        // arguments: each pack's is within it.
        let account = Account::new(granted_bytes, granted_inodes);
        let root = RunDir::create(&request.target, account.clone()).map_err(|source| {
            SessionError::RunDir {
                target: request.target.clone(),
                source,
            }
        })?;
        let mut compiled = compiled.into_iter();
        let mut session = Session {
            request: &request,
            params: &params,
            timeout,
            memory,
            granted: (granted_bytes, granted_inodes),
            live,
            observer,
            saved: &mut saved,
            gathered: Vec::new(),
            index: 0,
            total: packs.iter().map(|p| p.scenarios.len()).sum(),
            started: Instant::now(),
        };
        for p in &packs {
            if session.run_pack(p, &mut compiled, &root, &account)? == Flow::Stop {
                break;
            }
        }
        let gathered = session.gathered;
        let finished = chrono::Local::now().to_rfc3339();
        if !request.keep {
            let _ = root.delete();
        }
        if let Some(board) = &live.board {
            board.finish();
        }
        let started = saved.started.clone();
        let document = document(request.label, &request.target, gathered, started, finished);
        Ok(Finished {
            document,
            interrupted: live.stop.load(Ordering::Relaxed),
            asserts,
            saved,
        })
    }
}

impl Session<'_> {
    /// Runs pack `p`'s scenarios in a run directory of its own, its
    /// account within the run's `account`.
    fn run_pack(
        &mut self,
        p: &Pack,
        compiled: &mut impl Iterator<Item = Compiled>,
        root: &RunDir,
        account: &Arc<Account>,
    ) -> Result<Flow, SessionError> {
        let (bytes, inodes) = self.granted;
        let params = p.params_for(self.params);
        let account = Account::within(
            account,
            p.capabilities
                .max_bytes(&params)
                .ok()
                .flatten()
                .map_or(bytes, |n| n.bytes.min(bytes)),
            p.capabilities.max_inodes.map_or(inodes, |n| n.min(inodes)),
        );
        let dir = RunDir::create(root.path(), account.clone()).map_err(SessionError::PackDir)?;
        let space = Arc::new(
            Workspace::new(
                dir,
                p.declared.then(|| p.capabilities.clone()),
                self.request.allow_net.clone(),
            )
            .with_data(p.data.clone()),
        );
        for s in &p.scenarios {
            self.index += 1;
            let Some(code) = compiled.next() else {
                return Ok(Flow::Stop);
            };
            let g = gather::planned(p, s, &params);
            if let Some(done) = self.saved.finished(&g)? {
                self.observer.event(Event::KeptFromJournal {
                    place: self.place(p, s),
                    journal: &self.saved.journal_name(),
                });
                self.gathered.push(done);
                continue;
            }
            let g = self.run_scenario(p, s, &code, &space, g);
            if self.live.stop.load(Ordering::Relaxed) {
                self.gathered.push(g);
                return Ok(Flow::Stop);
            }
            self.saved.journal(&g, self.observer);
            self.gathered.push(g);
        }
        if let Ok(space) = Arc::try_unwrap(space) {
            let dir = space.into_dir();
            if self.request.keep {
                // Kept files stay charged to the run.
                self.observer.event(Event::KeptDir { dir: dir.path() });
            } else if dir.delete().is_ok() {
                account.close();
            }
        }
        Ok(Flow::Next)
    }

    /// Scenario `s`'s place in the session, for messages.
    fn place<'p>(&self, p: &'p Pack, s: &'p ScenarioSource) -> Place<'p> {
        Place {
            index: self.index,
            total: self.total,
            pack: &p.name,
            scenario: &s.name,
        }
    }

    /// Runs scenario `s` `repeat` times (until one fails) into `g`.
    fn run_scenario(
        &mut self,
        p: &Pack,
        s: &ScenarioSource,
        code: &Compiled,
        space: &Arc<Workspace>,
        mut g: ScenarioResult,
    ) -> ScenarioResult {
        let repeat = self.request.repeat;
        // How long the last repeat took: the next one's expected length.
        let mut last_took = None;
        for rep in 0..repeat {
            let title = format!(
                "[{}/{}] {}/{}{}",
                self.index,
                self.total,
                crate::terminal::clean(&p.name),
                crate::terminal::clean(&s.name),
                if repeat > 1 {
                    format!(" run {}/{}", rep + 1, repeat)
                } else {
                    String::new()
                },
            );
            let began = Instant::now();
            let outcome = self.run_once(p, s, code, space, &mut g, &title, last_took);
            last_took = Some(began.elapsed());
            if let Err(e) = outcome {
                g.error_kind = Some(e.kind.name());
                // A stop is not the script's fault: no script place.
                let e = match e.kind {
                    ScenarioErrorKind::Interrupted => {
                        format!("interrupted after {:.1} s", began.elapsed().as_secs_f64())
                    }
                    _ => e.to_string(),
                };
                self.observer.event(Event::ScenarioFailed {
                    place: self.place(p, s),
                    error: &e,
                });
                g.error = Some(e);
                break;
            }
        }
        g
    }

    /// One run of scenario `s` on a fresh host, folded into `g`.
    #[allow(clippy::too_many_arguments)]
    fn run_once(
        &mut self,
        p: &Pack,
        s: &ScenarioSource,
        code: &Compiled,
        space: &Arc<Workspace>,
        g: &mut ScenarioResult,
        title: &str,
        expected: Option<Duration>,
    ) -> Result<(), crate::api::scenario_error::ScenarioError> {
        let activity = Arc::new(Activity::default());
        self.observer
            .run_starts(title, self.started.elapsed(), activity.clone(), expected);
        let board = self.live.board.as_ref();
        let host = Host::new(
            space.clone(),
            g.params.clone(),
            Limits {
                timeout: self.timeout,
            },
            self.live.stop.clone(),
        )
        .with_activity(activity)
        .with_metrics(board.map(|b| b.scope(&p.name, &s.name)))
        .within(DocumentRoom::beside(&self.gathered, g));
        let (report, outcome) = scenarios::run(s, code, host, self.memory);
        self.observer.run_ends();
        if let Some(b) = board {
            b.step_done(Steps::Scenarios, 1);
        }
        let run = g.repeat + 1;
        gather::fold(g, report, run);
        outcome
    }
}
