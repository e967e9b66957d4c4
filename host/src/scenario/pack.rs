//! Scenario packs: a folder with `pack.toml` (name, parameters, scenarios in
//! order, capabilities) and its scripts; built-in packs are embedded.

pub use crate::api::capabilities::Capabilities;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::Path;
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
    pub fn new(name_in_pack: &str, file: String, bytes: Vec<u8>) -> Result<ScenarioSource, String> {
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
        let source = String::from_utf8(bytes).map_err(|_| format!("{file} is not UTF-8 text"))?;
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
        format!("{:x}", Sha256::digest(self.bytes()))
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
    /// SHA-256 over the manifest and every scenario.
    pub sha256: String,
    /// True when capabilities come from a `pack.toml` (a lone script has none to check).
    pub declared: bool,
    /// Thresholds declared by the pack (`assert = [...]`), checked like `--assert`.
    pub asserts: Vec<String>,
    /// Data files the scenarios read (`data = [...]`, e.g. traces), by name.
    pub data: BTreeMap<String, String>,
}

/// A pack that cannot be loaded, naming the file.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {message}")]
pub struct PackError {
    /// The file at fault.
    pub file: String,
    /// What is wrong.
    pub message: String,
}

/// Embeds a built-in pack's files.
macro_rules! pack_files {
    ($dir:literal: $($file:literal),*) => {
        &[$(($file, include_str!(concat!("../../../scripts/", $dir, "/", $file)))),*]
    };
}

const BUILTIN: &[(&str, &[(&str, &str)])] = &[
    (
        "quick",
        pack_files!("quick": "pack.toml", "randrw.rhai", "seqwrite.rhai", "seqread.rhai", "latency.rhai", "copy-move-delete.rhai", "small-files.rhai"),
    ),
    (
        "cloud-compare",
        pack_files!("cloud-compare": "pack.toml", "fio-random.rhai", "dd.rhai", "ioping.rhai", "big-file.rhai", "sysbench-fileio.rhai", "bonnie.rhai"),
    ),
    (
        "fileio",
        pack_files!("fileio": "pack.toml", "prepare.rhai", "seqwr.rhai", "seqrewr.rhai", "seqrd.rhai", "rndrd.rhai", "rndwr.rhai", "rndrw.rhai", "cleanup.rhai"),
    ),
    (
        "system",
        pack_files!("system": "pack.toml", "cpu.rhai", "memory.rhai", "network.rhai"),
    ),
    (
        "es-indexing",
        pack_files!("es-indexing": "pack.toml", "es-indexing.rhai"),
    ),
    (
        "replay",
        pack_files!("replay": "pack.toml", "sqlite.rhai", "sqlite.trace"),
    ),
];

/// Names of the built-in packs.
pub fn builtin_names() -> Vec<&'static str> {
    BUILTIN.iter().map(|(n, _)| *n).collect()
}

/// A built-in pack by name.
pub fn builtin(name: &str) -> Option<Result<Pack, PackError>> {
    let (_, files) = BUILTIN.iter().find(|(n, _)| *n == name)?;
    let read = |f: &str| {
        files
            .iter()
            .find(|(n, _)| *n == f)
            .map(|(_, s)| s.to_string())
    };
    Some(from_manifest(
        &format!("{name}/"),
        &read("pack.toml").unwrap_or_default(),
        |f| {
            read(f)
                .map(String::into_bytes)
                .ok_or_else(|| format!("missing embedded file {f}"))
        },
    ))
}

/// The largest file a pack may hold (manifest, scenario or data), in bytes.
pub const MAX_PACK_FILE: u64 = 256 << 20;

/// Loads a pack folder. Every file it names (the manifest, scenarios, data)
/// is read beneath the folder without following symlinks, must be a regular
/// file and at most [`MAX_PACK_FILE`] bytes.
pub fn load_dir(dir: &Path) -> Result<Pack, PackError> {
    let read = |f: &str| {
        if f.contains('/') || f.starts_with('.') {
            return Err(format!("'{f}' must be a file name inside the pack"));
        }
        crate::sandbox::read_beneath(dir, f, MAX_PACK_FILE).map_err(|e| format!("{f}: {e}"))
    };
    let manifest_path = dir.join("pack.toml");
    let text = read("pack.toml")
        .and_then(|b| String::from_utf8(b).map_err(|_| "pack.toml: not UTF-8 text".into()))
        .map_err(|message| PackError {
            file: manifest_path.display().to_string(),
            message,
        })?;
    from_manifest(&format!("{}/", dir.display()), &text, read)
}

/// A lone script (`.rhai`) or component (`.wasm`) as a pack of one.
pub fn single_script(path: &Path) -> Result<Pack, PackError> {
    let err = |message: String| PackError {
        file: path.display().to_string(),
        message,
    };
    let bytes = read_lone(path).map_err(err)?;
    let file_name = path
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "scenario".into());
    let s = ScenarioSource::new(&file_name, path.display().to_string(), bytes).map_err(err)?;
    Ok(Pack {
        sha256: s.sha256(),
        name: s.name.clone(),
        version: String::new(),
        description: String::new(),
        params: BTreeMap::new(),
        scenarios: vec![s],
        capabilities: Capabilities::default(),
        declared: false,
        asserts: Vec::new(),
        data: BTreeMap::new(),
    })
}

/// A file named on the command line: followed like any path the user gives,
/// but it must be a regular file (a FIFO would block) of bounded size.
fn read_lone(path: &Path) -> Result<Vec<u8>, String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| e.to_string())?;
    let meta = f.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    let mut bytes = Vec::new();
    f.take(MAX_PACK_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_PACK_FILE {
        return Err(format!("larger than the limit of {MAX_PACK_FILE} bytes"));
    }
    Ok(bytes)
}

fn from_manifest(
    prefix: &str,
    text: &str,
    read: impl Fn(&str) -> Result<Vec<u8>, String>,
) -> Result<Pack, PackError> {
    let file = format!("{prefix}pack.toml");
    let m: Manifest = toml::from_str(text).map_err(|e| PackError {
        file: file.clone(),
        message: e.to_string(),
    })?;
    m.capabilities.validate().map_err(|message| PackError {
        file: file.clone(),
        message,
    })?;
    let mut hasher = Sha256::new();
    hasher.update(text.as_bytes());
    let mut scenarios = Vec::new();
    for f in &m.scenarios {
        let pack_err = |message| PackError {
            file: file.clone(),
            message,
        };
        let bytes = read(f).map_err(pack_err)?;
        hasher.update(&bytes);
        scenarios.push(ScenarioSource::new(f, format!("{prefix}{f}"), bytes).map_err(pack_err)?);
    }
    let mut data = BTreeMap::new();
    for f in &m.data {
        let text = read(f).map_err(|message| PackError {
            file: file.clone(),
            message,
        })?;
        hasher.update(&text);
        let text = String::from_utf8(text).map_err(|_| PackError {
            file: file.clone(),
            message: format!("data file {f} is not UTF-8 text"),
        })?;
        data.insert(f.clone(), text);
    }
    Ok(Pack {
        data,
        name: m.name,
        version: m.version,
        description: m.description,
        params: m.params,
        scenarios,
        capabilities: m.capabilities,
        sha256: format!("{:x}", hasher.finalize()),
        declared: true,
        asserts: m.assert,
    })
}

/// Resolves a scenario argument: a `.rhai` file, a pack folder, or a built-in pack name.
pub fn resolve(arg: &str) -> Result<Pack, PackError> {
    let path = Path::new(arg);
    if path.is_dir() {
        return load_dir(path);
    }
    if path.is_file() {
        return single_script(path);
    }
    builtin(arg).unwrap_or_else(|| {
        Err(PackError {
            file: arg.to_string(),
            message: format!(
                "not a scenario file, a pack folder or a built-in pack (built-in: {})",
                builtin_names().join(", ")
            ),
        })
    })
}
