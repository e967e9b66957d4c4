//! Where a session's results go: the `--json` file, saved all or nothing
//! at the end, and its journal of finished scenarios, read back by
//! `--resume` as hostile input and checked against the run's plan.

use crate::model::document::{RunDocument, ScenarioResult};
use crate::scenario::pack::{Pack, ScenarioSource};
use crate::session::journal::{self, JournalError};
use crate::session::{Event, Observer};
use crate::terminal::clean;
use std::path::{Path, PathBuf};

/// A `--json` file or a journal that refuses the run.
#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    /// `--json` names no file, or a directory.
    #[error("--json {}: not a file name", .0.display())]
    NotAFileName(PathBuf),
    /// `--json`'s directory does not exist.
    #[error("--json {}: the directory {} does not exist", .json.display(), .parent.display())]
    NoDirectory {
        /// The `--json` file.
        json: PathBuf,
        /// Its directory.
        parent: PathBuf,
    },
    /// `--resume` with a `--json` that is a device or a pipe.
    #[error("--resume: {} is not a regular file, so no run journalled beside it", .0.display())]
    NotRegular(PathBuf),
    /// A journal a killed run left, without `--resume`.
    #[error("{} holds the finished scenarios of a run that did not end: add --resume to continue it, or remove the file to start afresh", .0.display())]
    Leftover(PathBuf),
    /// `--resume` without a journal.
    #[error("--resume: {} does not exist: nothing to resume (run without --resume)", .0.display())]
    NothingToResume(PathBuf),
    /// The journal is not one to continue.
    #[error("--resume: {}", clean(&.0.to_string()))]
    Refused(journal::Refusal),
    /// The journal's torn last line could not be cut off.
    #[error("--resume: {0}")]
    Repair(JournalError),
    /// The journal belongs to a run of another label.
    #[error("--resume: {} belongs to a run labelled {:?}, not {:?}", .journal.display(), .theirs.as_deref().map(clean), .ours.as_deref().map(clean))]
    OtherLabel {
        /// The journal.
        journal: PathBuf,
        /// The label it was written with.
        theirs: Option<String>,
        /// This run's label.
        ours: Option<String>,
    },
    /// The journal has a scenario this run does not include.
    #[error("--resume: {journal} has {place}, which this run does not include: give the same scenarios as the interrupted run")]
    NotPlanned {
        /// The journal's name.
        journal: String,
        /// `PACK/SCENARIO`, safe to print.
        place: String,
    },
    /// The journal has a scenario run from another source or pack.
    #[error("--resume: {journal} has {place} run with another {what} ({theirs}, not {ours}): not mixing results (remove the journal to start afresh)")]
    OtherIdentity {
        /// The journal's name.
        journal: String,
        /// `PACK/SCENARIO`, safe to print.
        place: String,
        /// What differs (`scenario source`, `pack hash` …).
        what: &'static str,
        /// The journal's value, safe to print.
        theirs: String,
        /// This run's value, safe to print.
        ours: String,
    },
    /// The journal has the scenario with other parameters.
    #[error("--resume: {journal} has {place} run with another set of parameters: not mixing results (remove the journal to start afresh)")]
    OtherParams {
        /// The journal's name.
        journal: String,
        /// `PACK/SCENARIO`, safe to print.
        place: String,
    },
}

/// The result document could not be saved.
#[derive(Debug, thiserror::Error)]
pub enum DocumentError {
    /// It could not be encoded.
    #[error("--json {}: {source}", .json.display())]
    Encode {
        /// The `--json` file.
        json: PathBuf,
        /// Why.
        source: serde_json::Error,
    },
    /// It could not be written.
    #[error("--json {source}")]
    Write {
        /// Why (naming the file).
        source: crate::save::SaveError,
        /// The `--json` file.
        json: PathBuf,
        /// The journal that keeps the finished scenarios, when there is one.
        journal: Option<PathBuf>,
    },
}

/// The `--json` file and its journal.
pub struct Saved {
    /// The `--json` file.
    json: Option<PathBuf>,
    /// Start time of the run (the first attempt's, when resumed).
    pub started: String,
    /// Scenarios finished by an earlier attempt (`--resume`).
    earlier: Vec<ScenarioResult>,
    /// The journal path (with `--json`), and its writer once opened.
    journal: Option<(PathBuf, Option<journal::Writer>)>,
    /// Writing the journal failed once: no more attempts.
    journal_failed: bool,
    /// The run's label.
    label: Option<String>,
}

/// Refuses, before anything runs, a `--json` path that can never be saved:
/// no file name, a directory, or a parent directory that does not exist.
fn check_json_path(json: &Path) -> Result<(), ResumeError> {
    if json.file_name().is_none() || json.is_dir() {
        return Err(ResumeError::NotAFileName(json.to_path_buf()));
    }
    let parent = match json.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        return Err(ResumeError::NoDirectory {
            json: json.to_path_buf(),
            parent: parent.to_path_buf(),
        });
    }
    Ok(())
}

/// What a journalled result of scenario `s` of pack `p` must carry to be
/// kept by `--resume`, named for messages, in the order of the fields of
/// [`ScenarioResult`] it is compared with: source, pack hash, version,
/// origin, signer.
fn journal_identity(p: &Pack, s: &ScenarioSource) -> [(&'static str, Option<String>); 5] {
    [
        ("scenario source", Some(s.sha256())),
        ("pack hash", Some(p.sha256.clone())),
        (
            "pack version",
            Some(p.version.clone()).filter(|v| !v.is_empty()),
        ),
        ("pack origin", Some(p.origin.describe())),
        ("signer", p.origin.signer()),
    ]
}

impl Saved {
    /// Nothing saved beside the document (or no document at all).
    fn without_journal(json: Option<PathBuf>, started: String, label: Option<String>) -> Saved {
        Saved {
            json,
            started,
            earlier: Vec::new(),
            journal: None,
            journal_failed: false,
            label,
        }
    }

    /// Prepares saving to `json`: with `resume`, reads the journal; without
    /// it, refuses to run over a journal a killed run left.
    pub fn open(
        json: Option<&Path>,
        resume: bool,
        label: Option<String>,
        started: String,
        observer: &mut dyn Observer,
    ) -> Result<Saved, ResumeError> {
        let Some(json) = json else {
            return Ok(Saved::without_journal(None, started, label));
        };
        check_json_path(json)?;
        // A device or pipe (`/dev/stdout`) gets the document, but no journal beside it.
        if matches!(std::fs::metadata(json), Ok(m) if !m.is_file()) {
            if resume {
                return Err(ResumeError::NotRegular(json.to_path_buf()));
            }
            return Ok(Saved::without_journal(Some(json.into()), started, label));
        }
        let path = journal::path_for(json);
        let exists = path.symlink_metadata().is_ok();
        if !resume {
            if exists {
                return Err(ResumeError::Leftover(path));
            }
            let mut saved = Saved::without_journal(Some(json.into()), started, label);
            saved.journal = Some((path, None));
            return Ok(saved);
        }
        if !exists {
            return Err(ResumeError::NothingToResume(path));
        }
        let (j, writer) = journal::resume(&path).map_err(|e| match e {
            JournalError::Refused(e) => ResumeError::Refused(e),
            e @ JournalError::Repair { .. } => ResumeError::Repair(e),
        })?;
        if j.header.label != label {
            return Err(ResumeError::OtherLabel {
                journal: path,
                theirs: j.header.label,
                ours: label,
            });
        }
        if j.torn_tail {
            observer.event(Event::TornJournal { journal: &path });
        }
        Ok(Saved {
            json: Some(json.into()),
            started: j.header.started,
            earlier: j.entries,
            journal: Some((path, Some(writer))),
            journal_failed: false,
            label,
        })
    }

    /// Refuses, before anything runs, a journal holding scenarios this run
    /// does not have (they would be dropped from the document and lost with
    /// the journal), or has from another pack or source: an entry's
    /// [`journal_identity`] must be the run's, or the document would claim
    /// what was not run (a journal is as easy to edit as any file).
    pub fn check_covers(&self, packs: &[Pack]) -> Result<(), ResumeError> {
        for e in &self.earlier {
            let place = format!(
                "{}/{}",
                clean(e.pack.as_deref().unwrap_or("")),
                clean(&e.name)
            );
            let planned: Vec<_> = packs
                .iter()
                .filter(|p| e.pack.as_deref() == Some(p.name.as_str()))
                .flat_map(|p| {
                    p.scenarios
                        .iter()
                        .filter(|s| s.name == e.name)
                        .map(move |s| (p, s))
                })
                .collect();
            if planned.is_empty() {
                return Err(ResumeError::NotPlanned {
                    journal: self.journal_name(),
                    place,
                });
            }
            let theirs = [
                &e.source_sha256,
                &e.pack_sha256,
                &e.pack_version,
                &e.pack_origin,
                &e.pack_signer,
            ];
            let mismatch = |&(p, s): &(&Pack, &ScenarioSource)| {
                journal_identity(p, s)
                    .into_iter()
                    .zip(theirs)
                    .find(|((_, ours), theirs)| ours != *theirs)
            };
            // Kept when it is the same as one planned scenario of its name;
            // else the first difference from the first one is named.
            let Some(differences) = planned.iter().map(mismatch).collect::<Option<Vec<_>>>() else {
                continue;
            };
            let ((what, ours), theirs) = &differences[0];
            let shown = |v: &Option<String>| {
                v.as_deref()
                    .map_or("none".into(), |v| clean(v).into_owned())
            };
            return Err(ResumeError::OtherIdentity {
                journal: self.journal_name(),
                place,
                what,
                theirs: shown(theirs),
                ours: shown(ours),
            });
        }
        Ok(())
    }

    /// The journal's name for messages.
    pub fn journal_name(&self) -> String {
        self.journal
            .as_ref()
            .map(|(p, _)| p.display().to_string())
            .unwrap_or_default()
    }

    /// The earlier result of the scenario `planned` describes (same pack,
    /// name, source and parameters; [`Saved::check_covers`] checked the
    /// rest); an error when the journal has the scenario with other
    /// parameters (results not to be mixed).
    pub fn finished(
        &self,
        planned: &ScenarioResult,
    ) -> Result<Option<ScenarioResult>, ResumeError> {
        let same = |e: &&ScenarioResult| {
            e.pack == planned.pack
                && e.name == planned.name
                && e.source_sha256 == planned.source_sha256
                && e.pack_sha256 == planned.pack_sha256
        };
        let Some(e) = self.earlier.iter().find(same) else {
            return Ok(None);
        };
        if e.params != planned.params {
            return Err(ResumeError::OtherParams {
                journal: self.journal_name(),
                place: format!(
                    "{}/{}",
                    clean(planned.pack.as_deref().unwrap_or("")),
                    clean(&planned.name)
                ),
            });
        }
        Ok(Some(e.clone()))
    }

    /// Appends a finished scenario to the journal; a failure is reported
    /// once and journalling stops (the run goes on, results stay in memory).
    pub fn journal(&mut self, g: &ScenarioResult, observer: &mut dyn Observer) {
        let Some((path, writer)) = &mut self.journal else {
            return;
        };
        if self.journal_failed {
            return;
        }
        let outcome = match writer {
            Some(w) => w.append(g),
            None => journal::Writer::create(
                path,
                &journal::Header {
                    journal: journal::JOURNAL_SCHEMA.into(),
                    started: self.started.clone(),
                    label: self.label.clone(),
                },
            )
            .and_then(|mut w| {
                w.append(g)?;
                *writer = Some(w);
                Ok(())
            }),
        };
        match outcome {
            Ok(()) => observer.event(Event::Journalled {
                scenario: &g.name,
                journal: path,
            }),
            Err(error) => {
                observer.event(Event::JournalFailed {
                    journal: path,
                    error: &error,
                });
                // No more appends; the file (if any) is still removed once saved.
                *writer = None;
                self.journal_failed = true;
            }
        }
    }

    /// Saves the document (all or nothing) and then removes the journal —
    /// unless the run was `interrupted`, when the journal stays for
    /// `--resume`. When saving fails, the journal is kept.
    pub fn save(
        &mut self,
        doc: &RunDocument,
        interrupted: bool,
        observer: &mut dyn Observer,
    ) -> Result<(), DocumentError> {
        let Some(json) = &self.json else {
            return Ok(());
        };
        let mut text = serde_json::to_vec_pretty(doc).map_err(|source| DocumentError::Encode {
            json: json.clone(),
            source,
        })?;
        text.push(b'\n');
        // The journal an attempt wrote, which keeps what finished.
        let written = match &self.journal {
            Some((journal, Some(_))) => Some(journal.clone()),
            _ => None,
        };
        if let Err(source) = crate::save::write_atomic(json, &text) {
            return Err(DocumentError::Write {
                source,
                json: json.clone(),
                journal: written,
            });
        }
        observer.event(Event::Saved { json });
        if interrupted {
            if let Some(journal) = &written {
                observer.event(Event::ResumeLater { json, journal });
            }
            return Ok(());
        }
        if let Some((journal, writer)) = self.journal.take() {
            drop(writer);
            match std::fs::remove_file(&journal) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => observer.event(Event::JournalLeft {
                    journal: &journal,
                    error: &error,
                }),
            }
        }
        Ok(())
    }
}
