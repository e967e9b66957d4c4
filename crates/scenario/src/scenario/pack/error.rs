//! A pack that cannot be loaded: the file at fault and what is wrong.

use super::builtin::builtin_names;
use crate::scenario::bundle::{self, BundleError};
use crate::scenario::git::GitError;
use crate::scenario::signature::SignatureError;
use crate::terminal::clean;

/// A pack that cannot be loaded, naming the file.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {problem}")]
pub struct PackError {
    /// The file at fault.
    pub file: String,
    /// What is wrong.
    pub problem: Box<PackProblem>,
}

/// What is wrong with a pack's file.
#[derive(Debug, thiserror::Error)]
pub enum PackProblem {
    /// The file cannot be read (the reader's reason).
    #[error("{0}")]
    Read(crate::input::InputError),
    /// A file of a pack folder that cannot be read beneath it.
    #[error("{file}: {source}")]
    Beneath {
        /// The file's name in the pack.
        file: String,
        /// Why.
        source: crate::sandbox::ReadError,
    },
    /// A name that is not a file of the pack.
    #[error("'{0}' must be a file name inside the pack")]
    NotInPack(String),
    /// A built-in pack's file that is not embedded.
    #[error("missing embedded file {0}")]
    MissingEmbedded(String),
    /// A file the manifest names that the bundle lacks.
    #[error("{0} is not in the bundle")]
    NotInBundle(String),
    /// A file of the bundle the manifest does not name.
    #[error("{0} is in the bundle but pack.toml does not name it")]
    Unnamed(String),
    /// The bundle, or a name the manifest gives, is refused.
    #[error(transparent)]
    Bundle(#[from] BundleError),
    /// The bundle's signature is refused.
    #[error(transparent)]
    Signature(#[from] SignatureError),
    /// The git spec or repository is refused.
    #[error(transparent)]
    Git(#[from] GitError),
    /// The pack's files cannot be bundled (for its hash).
    #[error("cannot bundle: {0}")]
    CannotBundle(std::io::Error),
    /// A Rhai scenario that is not text.
    #[error("{0} is not UTF-8 text")]
    ScenarioNotUtf8(String),
    /// A manifest that is not text.
    #[error("not UTF-8 text")]
    NotUtf8,
    /// A manifest that does not parse.
    #[error("{0}")]
    Manifest(toml::de::Error),
    /// A pack name that cannot be a file name.
    #[error("name = '{}' is not a pack name (one plain file name: printable ASCII without spaces or slashes, not hidden, at most 100 bytes)", clean(.0))]
    BadName(String),
    /// A version that cannot be a file name.
    #[error("version = '{}' is not a version (one plain file name: printable ASCII without spaces or slashes, not hidden, at most 100 bytes)", clean(.0))]
    BadVersion(String),
    /// Capabilities out of bounds (naming the field).
    #[error("{0}")]
    Capabilities(crate::api::CapabilityError),
    /// A data file that is not text.
    #[error("data file {0} is not UTF-8 text")]
    DataNotUtf8(String),
    /// A comparison template that is not a script or a component.
    #[error("compare = '{0}' must be a .rhai or .wasm file name inside the pack")]
    TemplateName(String),
    /// A file over what is left of the pack's byte limit.
    #[error(
        "{problem} (a pack's files may have {} bytes together; {left} are left)",
        bundle::MAX_PACK_BYTES
    )]
    OverBudget {
        /// The reader's error.
        problem: Box<PackProblem>,
        /// The bytes left.
        left: u64,
    },
    /// An argument that names no pack.
    #[error("not a scenario file, a pack folder, a built-in pack or PACK/SCENARIO (built-in: {})", builtin_names().join(", "))]
    NotFound,
    /// `PACK/SCENARIO` naming no scenario of the pack.
    #[error("{pack} has no scenario '{}'{}; its scenarios: {}", clean(.name), .nearest.as_ref().map(|n| format!(" (did you mean '{n}'?)")).unwrap_or_default(), .names.join(", "))]
    NoScenario {
        /// The pack's name.
        pack: String,
        /// The scenario asked for.
        name: String,
        /// The nearest name, when one is near.
        nearest: Option<String>,
        /// The pack's scenarios.
        names: Vec<String>,
    },
}
