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

/// Loads a `plumb.result.v1` document: a regular file of at most
/// [`limits::FILE_BYTES`], whose contents stay within [`limits`].
pub fn load(path: &Path) -> Result<RunDocument, String> {
    let name = path.display().to_string();
    let text = read_bounded(path).map_err(|e| format!("{name}: {e}"))?;
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
pub fn load_saved(path: &Path) -> Result<Saved, String> {
    let name = path.display().to_string();
    let text = read_bounded(path).map_err(|e| format!("{name}: {e}"))?;
    let head: SchemaOnly = serde_json::from_str(&text)
        .map_err(|e| format!("{name}:{}:{}: not valid JSON: {e}", e.line(), e.column()))?;
    if head.schema.as_ref().and_then(|s| s.as_str()) == Some(REPLAY_SCHEMA) {
        let saved: SavedReplay = serde_json::from_str(&text).map_err(|e| {
            format!(
                "{name}:{}:{}: not a valid {REPLAY_SCHEMA} document: {e}",
                e.line(),
                e.column()
            )
        })?;
        return Ok(Saved::Replay(Box::new(saved.result)));
    }
    parse(&name, &text).map(|d| Saved::Run(Box::new(d)))
}

/// Parses the text of a `plumb.result.v1` document (at most
/// [`limits::FILE_BYTES`] long, or refused) that `name` names in errors.
pub fn parse(name: &str, text: &str) -> Result<RunDocument, String> {
    if text.len() as u64 > limits::FILE_BYTES {
        return Err(format!(
            "{name}: larger than {} MiB: not a result file plumb reads",
            limits::FILE_BYTES >> 20
        ));
    }
    let head: SchemaOnly = serde_json::from_str(text)
        .map_err(|e| format!("{name}:{}:{}: not valid JSON: {e}", e.line(), e.column()))?;
    match head.schema.as_ref().map(|s| s.as_str()) {
        Some(Some(SCHEMA)) => {}
        Some(Some(other)) if other.starts_with("plumb.result.v") => {
            return Err(format!(
                "{name}: written by another plumb (schema {other}); this plumb reads {SCHEMA}: upgrade plumb to compare it"
            ))
        }
        Some(Some(other)) => {
            return Err(format!("{name}: schema '{other}' is not a plumb result ({SCHEMA})"))
        }
        Some(None) => return Err(format!("{name}: \"schema\" is not a string: not a plumb result file")),
        None => return Err(format!("{name}: no \"schema\" field: not a plumb result file")),
    }
    let doc: RunDocument = serde_json::from_str(text).map_err(|e| {
        format!(
            "{name}:{}:{}: not a valid {SCHEMA} document: {e}",
            e.line(),
            e.column()
        )
    })?;
    doc.check_limits().map_err(|e| format!("{name}: {e}"))?;
    Ok(doc)
}

/// The file's text, refusing what is not a regular file or is too large
/// (checked while reading, so a growing file is caught too).
fn read_bounded(path: &Path) -> Result<String, String> {
    // Non-blocking, so that opening a FIFO does not wait for a writer.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| e.to_string())?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    let too_big = || {
        format!(
            "larger than {} MiB: not a result file plumb reads",
            limits::FILE_BYTES >> 20
        )
    };
    if meta.len() > limits::FILE_BYTES {
        return Err(too_big());
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(limits::FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > limits::FILE_BYTES {
        return Err(too_big());
    }
    String::from_utf8(bytes)
        .map_err(|e| format!("not UTF-8 (byte {})", e.utf8_error().valid_up_to()))
}
