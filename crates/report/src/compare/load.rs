//! Reading result files: bounded in size, the schema checked, errors name
//! the file and the position.

use crate::model::document::{limits, RunDocument, SCHEMA};
use crate::report::replay::SavedReplay;
use crate::trace::replay::{ReplayResult, REPLAY_SCHEMA};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Only the schema field, read before the rest is trusted.
#[derive(serde::Deserialize)]
struct SchemaOnly {
    schema: Option<serde_json::Value>,
}

/// Why a file could not be read as text ([`read_bounded`]).
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The system refused to open or read it.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// A FIFO, a device, a directory.
    #[error("not a regular file")]
    NotRegular,
    /// Larger than [`limits::FILE_BYTES`].
    #[error("larger than {} MiB: not a result file plumb reads", limits::FILE_BYTES >> 20)]
    TooBig,
    /// Not UTF-8 from the byte `at` on.
    #[error("not UTF-8 (byte {at})")]
    NotUtf8 {
        /// The first byte that is not.
        at: usize,
    },
}

/// Why a saved result was refused; every variant names the file (`name`),
/// and the JSON ones the line and column.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// It could not be read.
    #[error("{name}: {source}")]
    File {
        /// The file.
        name: String,
        /// Why.
        source: FileError,
    },
    /// Not JSON.
    #[error("{name}:{}:{}: not valid JSON: {source}", source.line(), source.column())]
    Json {
        /// The file.
        name: String,
        /// The parser's error.
        source: serde_json::Error,
    },
    /// A result of a newer or older plumb.
    #[error("{name}: written by another plumb (schema {schema}); this plumb reads {SCHEMA}: upgrade plumb to compare it")]
    OtherVersion {
        /// The file.
        name: String,
        /// Its schema.
        schema: String,
    },
    /// Not a plumb result.
    #[error("{name}: schema '{schema}' is not a plumb result ({SCHEMA})")]
    Foreign {
        /// The file.
        name: String,
        /// Its schema.
        schema: String,
    },
    /// A `schema` that is not a string.
    #[error("{name}: \"schema\" is not a string: not a plumb result file")]
    SchemaNotText {
        /// The file.
        name: String,
    },
    /// No `schema` at all.
    #[error("{name}: no \"schema\" field: not a plumb result file")]
    NoSchema {
        /// The file.
        name: String,
    },
    /// A document of the right schema that does not parse as one.
    #[error("{name}:{}:{}: not a valid {schema} document: {source}", source.line(), source.column())]
    Invalid {
        /// The file.
        name: String,
        /// The schema it claims.
        schema: &'static str,
        /// The parser's error.
        source: serde_json::Error,
    },
    /// A document beyond [`limits`].
    #[error("{name}: {source}")]
    Limits {
        /// The file.
        name: String,
        /// What is too big.
        source: crate::model::document::LimitError,
    },
}

impl From<LoadError> for String {
    /// The message, for callers whose errors are still text.
    fn from(e: LoadError) -> String {
        e.to_string()
    }
}

/// Loads a `plumb.result.v1` document: a regular file of at most
/// [`limits::FILE_BYTES`], whose contents stay within [`limits`].
pub fn load(path: &Path) -> Result<RunDocument, LoadError> {
    let name = path.display().to_string();
    let text = read_bounded(path).map_err(|source| LoadError::File {
        name: name.clone(),
        source,
    })?;
    parse(&name, &text)
}

/// A file `plumb show` prints: a run's result document, or the result of a
/// trace replay (`plumb trace replay --json`).
pub enum Saved {
    /// A `plumb.result.v1` document.
    Run(Box<RunDocument>),
    /// A `plumb.replay.v1` replay result.
    Replay(Box<ReplayResult>),
}

/// Loads either kind of saved result (see [`Saved`]), bounded as
/// [`load`] is; the schema says which it is.
pub fn load_saved(path: &Path) -> Result<Saved, LoadError> {
    let name = path.display().to_string();
    let text = read_bounded(path).map_err(|source| LoadError::File {
        name: name.clone(),
        source,
    })?;
    let head: SchemaOnly = serde_json::from_str(&text).map_err(|source| LoadError::Json {
        name: name.clone(),
        source,
    })?;
    if head.schema.as_ref().and_then(|s| s.as_str()) == Some(REPLAY_SCHEMA) {
        let saved: SavedReplay =
            serde_json::from_str(&text).map_err(|source| LoadError::Invalid {
                name: name.clone(),
                schema: REPLAY_SCHEMA,
                source,
            })?;
        return Ok(Saved::Replay(Box::new(saved.result)));
    }
    parse(&name, &text).map(|d| Saved::Run(Box::new(d)))
}

/// Parses the text of a `plumb.result.v1` document (at most
/// [`limits::FILE_BYTES`] long, or refused) that `name` names in errors.
pub fn parse(name: &str, text: &str) -> Result<RunDocument, LoadError> {
    let name = name.to_string();
    if text.len() as u64 > limits::FILE_BYTES {
        return Err(LoadError::File {
            name,
            source: FileError::TooBig,
        });
    }
    let head: SchemaOnly = match serde_json::from_str(text) {
        Ok(head) => head,
        Err(source) => return Err(LoadError::Json { name, source }),
    };
    match head.schema.as_ref().map(|s| s.as_str()) {
        Some(Some(SCHEMA)) => {}
        Some(Some(other)) if other.starts_with("plumb.result.v") => {
            return Err(LoadError::OtherVersion {
                name,
                schema: other.into(),
            })
        }
        Some(Some(other)) => {
            return Err(LoadError::Foreign {
                name,
                schema: other.into(),
            })
        }
        Some(None) => return Err(LoadError::SchemaNotText { name }),
        None => return Err(LoadError::NoSchema { name }),
    }
    let doc: RunDocument = match serde_json::from_str(text) {
        Ok(doc) => doc,
        Err(source) => {
            return Err(LoadError::Invalid {
                name,
                schema: SCHEMA,
                source,
            })
        }
    };
    match doc.check_limits() {
        Ok(()) => Ok(doc),
        Err(source) => Err(LoadError::Limits { name, source }),
    }
}

/// The file's text, refusing what is not a regular file or is too large
/// (checked while reading, so a growing file is caught too).
fn read_bounded(path: &Path) -> Result<String, FileError> {
    // Non-blocking, so that opening a FIFO does not wait for a writer.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(FileError::NotRegular);
    }
    if meta.len() > limits::FILE_BYTES {
        return Err(FileError::TooBig);
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(limits::FILE_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limits::FILE_BYTES {
        return Err(FileError::TooBig);
    }
    String::from_utf8(bytes).map_err(|e| FileError::NotUtf8 {
        at: e.utf8_error().valid_up_to(),
    })
}
