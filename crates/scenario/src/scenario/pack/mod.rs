//! Scenario packs: a folder with `pack.toml` (name, parameters, scenarios in
//! order, capabilities) and its scripts; built-in packs are embedded; a
//! bundle (`.plumbpack`, see [`super::bundle`]) carries one as a file. A
//! pack's SHA-256 is its bundle's, whatever it was loaded from.

mod builtin;
mod error;
mod load;
mod resolve;

pub use builtin::{builtin, builtin_names};
pub use error::{PackError, PackProblem};
pub use load::{load_bundle, load_dir, single_script};
pub use resolve::{resolve, resolve_selection};

use super::bundle::{self, Files};
pub use crate::api::capabilities::Capabilities;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::Arc;

/// One scenario's source.
#[derive(Debug, Clone)]
pub struct ScenarioSource {
    /// Name (the file name without `.rhai` or `.wasm`).
    pub name: String,
    /// Where it came from, for error messages (`quick/randrw.rhai`).
    pub file: String,
    /// The Rhai script (empty for a component).
    pub source: String,
    /// The WebAssembly component, for `.wasm` scenarios.
    pub wasm: Option<Arc<Vec<u8>>>,
}

impl ScenarioSource {
    /// A scenario from its file name and contents (`.wasm` is a component).
    pub fn new(
        name_in_pack: &str,
        file: String,
        bytes: Vec<u8>,
    ) -> Result<ScenarioSource, PackProblem> {
        let name = name_in_pack
            .trim_end_matches(".rhai")
            .trim_end_matches(".wasm")
            .to_string();
        if name_in_pack.ends_with(".wasm") {
            return Ok(ScenarioSource {
                name,
                file,
                source: String::new(),
                wasm: Some(Arc::new(bytes)),
            });
        }
        let source = match String::from_utf8(bytes) {
            Ok(s) => s,
            Err(_) => return Err(PackProblem::ScenarioNotUtf8(file)),
        };
        Ok(ScenarioSource {
            name,
            file,
            source,
            wasm: None,
        })
    }

    /// The bytes of the scenario.
    pub fn bytes(&self) -> &[u8] {
        match &self.wasm {
            Some(w) => w,
            None => self.source.as_bytes(),
        }
    }

    /// SHA-256 of the source, hex.
    pub fn sha256(&self) -> String {
        bundle::sha256_hex(self.bytes())
    }
}

/// A declared parameter.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct ParamDef {
    /// Default value, as text (`"4G"`, `"10"`).
    pub default: toml::Value,
    /// Unit, for `plumb list`.
    #[serde(default)]
    pub unit: String,
    /// What it sets.
    #[serde(default)]
    pub description: String,
}

impl ParamDef {
    /// The default as the text a `-p` value would be.
    pub fn default_text(&self) -> String {
        match &self.default {
            toml::Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    }
}

/// `pack.toml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Manifest {
    name: String,
    #[serde(default)]
    version: String,
    #[serde(default)]
    description: String,
    scenarios: Vec<String>,
    #[serde(default)]
    params: BTreeMap<String, ParamDef>,
    #[serde(default)]
    capabilities: Capabilities,
    #[serde(default)]
    assert: Vec<String>,
    #[serde(default)]
    data: Vec<String>,
    /// The comparison template's file, when not `compare.rhai` or `compare.wasm`.
    #[serde(default)]
    compare: Option<String>,
}

/// A loaded pack.
#[derive(Debug, Clone)]
pub struct Pack {
    /// The pack's name (`name` in pack.toml; the folder or built-in name).
    pub name: String,
    /// Its version as pack.toml gives it (free text, may be empty).
    pub version: String,
    /// One paragraph for `plumb list`.
    pub description: String,
    /// Parameters with defaults.
    pub params: BTreeMap<String, ParamDef>,
    /// Scenarios in order.
    pub scenarios: Vec<ScenarioSource>,
    /// Needs beyond the run directory.
    pub capabilities: Capabilities,
    /// SHA-256 of the pack's bundle (of the lone script's bytes for a
    /// script): the same files always give the same hash.
    pub sha256: String,
    /// Every file of the pack by name, as a bundle holds them (empty for a
    /// lone script).
    pub files: Files,
    /// Where it was loaded from.
    pub origin: Origin,
    /// True when capabilities come from a `pack.toml` (a lone script has none to check).
    pub declared: bool,
    /// Thresholds declared by the pack (`assert = [...]`), checked like `--assert`.
    pub asserts: Vec<String>,
    /// Data files the scenarios read (`data = [...]`, e.g. traces), by name.
    pub data: BTreeMap<String, String>,
    /// The pack's comparison template (`compare.rhai`, `compare.wasm`, or
    /// the file `compare = "…"` names), which `plumb compare` runs to lay
    /// out the comparison of this pack's runs.
    pub compare: Option<PackTemplate>,
    /// The one scenario a `PACK/SCENARIO` argument kept (see
    /// [`resolve_selection`]); None when the pack runs whole.
    pub selected: Option<String>,
}

impl Pack {
    /// The parameters a run of this pack gets: each declared one's default
    /// overridden by `cli` (`-p`), and every `cli` one when the pack
    /// declares none (a lone script reads what it is given).
    pub fn params_for(&self, cli: &BTreeMap<String, String>) -> BTreeMap<String, String> {
        self.params
            .iter()
            .map(|(k, d)| {
                let v = cli.get(k).cloned().unwrap_or_else(|| d.default_text());
                (k.clone(), v)
            })
            .chain(
                cli.iter()
                    .filter(|(k, _)| self.params.is_empty() || self.params.contains_key(*k))
                    .map(|(k, v)| (k.clone(), v.clone())),
            )
            .collect()
    }
}

/// A pack's comparison template: its file name and bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackTemplate {
    /// File name inside the pack (`compare.rhai`).
    pub name: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// The file names a comparison template has when pack.toml names none.
pub const TEMPLATE_FILES: [&str; 2] = ["compare.rhai", "compare.wasm"];

/// Where a pack came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// Built into plumb.
    Builtin,
    /// A folder.
    Folder(String),
    /// A bundle file, with its signature as checked.
    Bundle {
        /// The bundle's path.
        path: String,
        /// What its signature says.
        signed: super::signature::Signed,
    },
    /// A lone script or component.
    Script(String),
    /// A git repository at a commit.
    Git {
        /// The repository URL.
        url: String,
        /// The commit the revision resolved to.
        commit: String,
        /// The pack's folder in the repository.
        subdir: String,
    },
}

impl Origin {
    /// As a result file records it: `builtin`, `folder PATH`, `bundle PATH`,
    /// `script PATH`.
    pub fn describe(&self) -> String {
        match self {
            Origin::Builtin => "builtin".into(),
            Origin::Folder(p) => format!("folder {p}"),
            Origin::Bundle { path, .. } => format!("bundle {path}"),
            Origin::Script(p) => format!("script {p}"),
            Origin::Git {
                url,
                commit,
                subdir,
            } if subdir.is_empty() => format!("git {url}@{commit}"),
            Origin::Git {
                url,
                commit,
                subdir,
            } => format!("git {url}@{commit}:{subdir}"),
        }
    }

    /// The key id that signed a bundle, `verified` or `untrusted`.
    pub fn signer(&self) -> Option<String> {
        use super::signature::Signed;
        match self {
            Origin::Bundle {
                signed: Signed::Verified { key_id, .. },
                ..
            } => Some(format!("{key_id} verified")),
            Origin::Bundle {
                signed: Signed::Untrusted { key_id },
                ..
            } => Some(format!("{key_id} untrusted")),
            _ => None,
        }
    }
}

/// The README a pack may hold, bundled with it.
pub const README: &str = "README.md";
