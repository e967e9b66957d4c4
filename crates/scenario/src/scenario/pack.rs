//! Scenario packs: a folder with `pack.toml` (name, parameters, scenarios in
//! order, capabilities) and its scripts; built-in packs are embedded; a
//! bundle (`.plumbpack`, see [`super::bundle`]) carries one as a file. A
//! pack's SHA-256 is its bundle's, whatever it was loaded from.

use super::bundle::{self, Files};
pub use crate::api::capabilities::Capabilities;
use serde::Deserialize;
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
        &[$(($file, include_str!(concat!("../../../../scripts/", $dir, "/", $file)))),*]
    };
}

const BUILTIN: &[(&str, &[(&str, &str)])] = &[
    (
        "quick",
        pack_files!("quick": "pack.toml", "randrw.rhai", "seqwrite.rhai", "seqread.rhai", "latency.rhai", "copy-move-delete.rhai", "small-files.rhai"),
    ),
    (
        "cloud-compare",
        pack_files!("cloud-compare": "pack.toml", "compare.rhai", "fio-random.rhai", "dd.rhai", "ioping.rhai", "big-file.rhai", "sysbench-fileio.rhai", "bonnie.rhai"),
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
    (
        "interference",
        pack_files!("interference": "pack.toml", "interference.rhai"),
    ),
    (
        "fleet-net",
        pack_files!("fleet-net": "pack.toml", "network.rhai"),
    ),
    (
        "yabs",
        pack_files!("yabs": "pack.toml", "compare.rhai", "disk.rhai", "network.rhai", "cpu.rhai"),
    ),
    (
        "pts-disk",
        pack_files!("pts-disk": "pack.toml", "fs-mark.rhai", "postmark.rhai", "dbench.rhai", "compilebench.rhai", "iozone.rhai", "unpack-tree.rhai", "sqlite.rhai", "dbench.trace", "kernel-tree.trace", "small-tree.trace", "sqlite-inserts.trace"),
    ),
    (
        "crystaldiskmark",
        pack_files!("crystaldiskmark": "pack.toml", "compare.rhai", "cdm.rhai"),
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
    Some(
        from_manifest(&format!("{name}/"), |f, _| {
            read(f)
                .map(String::into_bytes)
                .ok_or_else(|| format!("missing embedded file {f}"))
        })
        .map(|p| Pack {
            origin: Origin::Builtin,
            ..p
        }),
    )
}

/// Loads a pack folder. Every file it names (the manifest, scenarios, data)
/// is read beneath the folder without following symlinks, must be a regular
/// file, and all together hold at most [`bundle::MAX_PACK_BYTES`].
pub fn load_dir(dir: &Path) -> Result<Pack, PackError> {
    let read = |f: &str, max: u64| {
        if !bundle::plain_name(f) {
            return Err(format!("'{f}' must be a file name inside the pack"));
        }
        crate::sandbox::read_beneath(dir, f, max).map_err(|e| format!("{f}: {e}"))
    };
    let mut pack = from_manifest(&format!("{}/", dir.display()), read)?;
    pack.origin = Origin::Folder(dir.display().to_string());
    Ok(pack)
}

/// The README a pack may hold, bundled with it.
pub const README: &str = "README.md";

/// Loads a bundle file, read as a stream (see [`bundle::read`]): every
/// file checked against its index, the signature (`BUNDLE.minisig`)
/// checked against `trusted` keys over the same open file.
pub fn load_bundle(
    path: &Path,
    trusted: &[(minisign::PublicKey, String)],
) -> Result<Pack, PackError> {
    let err = |message: String| PackError {
        file: path.display().to_string(),
        message,
    };
    let mut file = crate::input::open_file(path, bundle::MAX_BUNDLE).map_err(|e| err(e.into()))?;
    let bundle::Bundle { files, sha256 } = bundle::read(&mut file).map_err(err)?;
    let signed = super::signature::check(
        &mut file,
        &sha256,
        &super::signature::signature_path(path),
        trusted,
    )
    .map_err(err)?;
    // Each file moves from the bundle into the pack: held once.
    let mut files = files;
    let mut pack = from_manifest(&format!("{}:", path.display()), |f, _| {
        files
            .remove(f)
            .ok_or_else(|| format!("{f} is not in the bundle"))
    })?;
    if let Some(extra) = files.keys().next() {
        return Err(err(format!(
            "{extra} is in the bundle but pack.toml does not name it"
        )));
    }
    pack.sha256 = sha256;
    pack.origin = Origin::Bundle {
        path: path.display().to_string(),
        signed,
    };
    Ok(pack)
}

/// Loads a pack from a git repository at a commit (`git+URL#REV[:SUBDIR]`).
fn load_git(arg: &str, spec: Result<super::git::GitSpec, String>) -> Result<Pack, PackError> {
    let err = |message: String| PackError {
        file: arg.to_string(),
        message,
    };
    let spec = spec.map_err(err)?;
    let checkout = super::git::Checkout::open(&spec).map_err(err)?;
    let read = |f: &str, max: u64| {
        if !bundle::plain_name(f) {
            return Err(format!("'{f}' must be a file name inside the pack"));
        }
        checkout.read(f, max)
    };
    let mut pack = from_manifest(&format!("{arg}:"), read)?;
    pack.origin = Origin::Git {
        url: spec.url,
        commit: checkout.commit.clone(),
        subdir: spec.subdir,
    };
    Ok(pack)
}

/// The SHA-256 of the bundle `files` make.
fn bundle_sha256(files: &Files, prefix: &str) -> Result<String, PackError> {
    bundle::bundle_sha256(files).map_err(|e| PackError {
        file: format!("{prefix}pack.toml"),
        message: format!("cannot bundle: {e}"),
    })
}

/// A lone script (`.rhai`) or component (`.wasm`) as a pack of one.
pub fn single_script(path: &Path) -> Result<Pack, PackError> {
    let err = |message: String| PackError {
        file: path.display().to_string(),
        message,
    };
    let bytes = crate::input::read_file(path, bundle::MAX_PACK_BYTES).map_err(|e| err(e.into()))?;
    let file_name = path
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "scenario".into());
    let s = ScenarioSource::new(&file_name, path.display().to_string(), bytes).map_err(err)?;
    Ok(Pack {
        sha256: s.sha256(),
        files: Files::new(),
        origin: Origin::Script(path.display().to_string()),
        name: s.name.clone(),
        version: String::new(),
        description: String::new(),
        params: BTreeMap::new(),
        scenarios: vec![s],
        capabilities: Capabilities::default(),
        declared: false,
        asserts: Vec::new(),
        data: BTreeMap::new(),
        compare: None,
        selected: None,
    })
}

/// Checks the pack's name and version from its manifest: both become a
/// file name (`NAME-VERSION.plumbpack`) and are printed, so both must be
/// [`bundle::plain_name`]s (an empty version stands for none).
fn check_identity(m: &Manifest) -> Result<(), String> {
    if !bundle::plain_name(&m.name) {
        return Err(format!(
            "name = '{}' is not a pack name (one plain file name: printable ASCII without spaces or slashes, not hidden, at most 100 bytes)",
            crate::terminal::clean(&m.name)
        ));
    }
    if !m.version.is_empty() && !bundle::plain_name(&m.version) {
        return Err(format!(
            "version = '{}' is not a version (one plain file name: printable ASCII without spaces or slashes, not hidden, at most 100 bytes)",
            crate::terminal::clean(&m.version)
        ));
    }
    Ok(())
}

/// A pack's files as they are read, each once, counted against
/// [`bundle::MAX_PACK_BYTES`] together: each read is given what is left.
struct Reader<F> {
    read: F,
    total: u64,
    /// Every file read so far: the pack's files.
    files: Files,
}

impl<F: FnMut(&str, u64) -> Result<Vec<u8>, String>> Reader<F> {
    /// A copy of the file `f` (read once, however often it is named).
    fn get(&mut self, f: &str) -> Result<Vec<u8>, String> {
        if let Some(bytes) = self.files.get(f) {
            return Ok(bytes.clone());
        }
        let left = bundle::MAX_PACK_BYTES.saturating_sub(self.total);
        let bytes = (self.read)(f, left).map_err(|e| {
            if left < bundle::MAX_PACK_BYTES {
                format!(
                    "{e} (a pack's files may have {} bytes together; {left} are left)",
                    bundle::MAX_PACK_BYTES
                )
            } else {
                e
            }
        })?;
        self.total += bytes.len() as u64;
        self.files.insert(f.to_string(), bytes.clone());
        Ok(bytes)
    }
}

/// A pack from its files, which `read` gives by name and at most the
/// number of bytes it is given: `pack.toml`, the scenarios and data files
/// it names, and `README.md` when there is one. Every name the manifest
/// gives passes [`bundle::pack_file_name`], its own name and version
/// [`check_identity`]. `prefix` (the folder, bundle or built-in name)
/// starts every file name in errors.
fn from_manifest(
    prefix: &str,
    read: impl FnMut(&str, u64) -> Result<Vec<u8>, String>,
) -> Result<Pack, PackError> {
    let file = format!("{prefix}{}", bundle::MANIFEST);
    let pack_err = |message| PackError {
        file: file.clone(),
        message,
    };
    let mut reader = Reader {
        read,
        total: 0,
        files: Files::new(),
    };
    let text = reader
        .get(bundle::MANIFEST)
        .and_then(|b| String::from_utf8(b).map_err(|_| "not UTF-8 text".into()))
        .map_err(pack_err)?;
    let m: Manifest = toml::from_str(&text).map_err(|e| pack_err(e.to_string()))?;
    check_identity(&m).map_err(pack_err)?;
    let names: Vec<&str> = m.params.keys().map(String::as_str).collect();
    m.capabilities.validate(&names).map_err(pack_err)?;
    let mut scenarios = Vec::new();
    for f in &m.scenarios {
        bundle::pack_file_name(f).map_err(pack_err)?;
        let bytes = reader.get(f).map_err(pack_err)?;
        scenarios.push(ScenarioSource::new(f, format!("{prefix}{f}"), bytes).map_err(pack_err)?);
    }
    let mut data = BTreeMap::new();
    for f in &m.data {
        bundle::pack_file_name(f).map_err(pack_err)?;
        let text = String::from_utf8(reader.get(f).map_err(pack_err)?)
            .map_err(|_| pack_err(format!("data file {f} is not UTF-8 text")))?;
        data.insert(f.clone(), text);
    }
    // A README travels with the pack when there is one.
    let _ = reader.get(README);
    let compare = match &m.compare {
        Some(f) => {
            bundle::pack_file_name(f).map_err(pack_err)?;
            if !(f.ends_with(".rhai") || f.ends_with(".wasm")) {
                return Err(pack_err(format!(
                    "compare = '{f}' must be a .rhai or .wasm file name inside the pack"
                )));
            }
            Some(PackTemplate {
                name: f.clone(),
                bytes: reader.get(f).map_err(pack_err)?,
            })
        }
        // Where pack.toml names none, the conventional names, if present.
        None => TEMPLATE_FILES.iter().find_map(|f| {
            reader.get(f).ok().map(|bytes| PackTemplate {
                name: f.to_string(),
                bytes,
            })
        }),
    };
    let files = reader.files;
    Ok(Pack {
        data,
        name: m.name,
        version: m.version,
        description: m.description,
        params: m.params,
        scenarios,
        capabilities: m.capabilities,
        sha256: bundle_sha256(&files, prefix)?,
        files,
        origin: Origin::Builtin,
        declared: true,
        asserts: m.assert,
        compare,
        selected: None,
    })
}

/// Resolves a scenario argument: a bundle (`.plumbpack`), a `.rhai` or
/// `.wasm` file, a pack folder, or a built-in pack name; a bundle's
/// signature is checked against `trusted` keys.
pub fn resolve(arg: &str, trusted: &[(minisign::PublicKey, String)]) -> Result<Pack, PackError> {
    if let Some(spec) = super::git::parse(arg) {
        return load_git(arg, spec);
    }
    let path = Path::new(arg);
    if path.is_dir() {
        return load_dir(path);
    }
    if path.is_file() {
        if path.extension().is_some_and(|e| e == bundle::EXTENSION) {
            return load_bundle(path, trusted);
        }
        return single_script(path);
    }
    builtin(arg).unwrap_or_else(|| {
        Err(PackError {
            file: arg.to_string(),
            message: format!(
                "not a scenario file, a pack folder, a built-in pack or PACK/SCENARIO (built-in: {})",
                builtin_names().join(", ")
            ),
        })
    })
}

/// The separator of a git spec's scenario selector:
/// `git+URL#REV[:SUBDIR]#SCENARIO` (a URL, a revision and a folder name
/// in a spec have no `#` of their own).
const GIT_SELECTOR: char = '#';

/// Resolves a pack argument that may select one of its scenarios — the
/// one place `plumb run`, `list`, `check` and `fleet run` read
/// `PACK/SCENARIO`. An argument that names an existing file or folder, or
/// a built-in pack, is a pack as [`resolve`] reads it; a git spec selects
/// with a second `#` (`git+URL#REV[:SUBDIR]#SCENARIO`); anything else is
/// split at its last `/` into a pack and the name of one of its scenarios.
/// The selected pack keeps its name, hash, files, parameters,
/// capabilities and comparison template; only its scenario list shrinks.
pub fn resolve_selection(
    arg: &str,
    trusted: &[(minisign::PublicKey, String)],
) -> Result<Pack, PackError> {
    if arg.starts_with("git+") {
        let first = arg.find('#');
        return match arg
            .rfind(GIT_SELECTOR)
            .filter(|l| first.is_some_and(|f| *l > f))
        {
            Some(last) => select(arg, resolve(&arg[..last], trusted)?, &arg[last + 1..]),
            None => resolve(arg, trusted),
        };
    }
    let path = Path::new(arg);
    if path.exists() || builtin_names().contains(&arg) {
        return resolve(arg, trusted);
    }
    match arg.rsplit_once('/') {
        Some((pack, scenario)) if !pack.is_empty() && !scenario.is_empty() => {
            if !(Path::new(pack).exists() || builtin_names().contains(&pack)) {
                // Neither reading helps: the whole argument is what is wrong.
                return resolve(arg, trusted);
            }
            select(arg, resolve(pack, trusted)?, scenario)
        }
        _ => resolve(arg, trusted),
    }
}

/// Keeps only the scenario `name` of `pack`; an error naming the pack's
/// scenarios (and the nearest name) when it has none of that name, for
/// the argument `arg`.
fn select(arg: &str, mut pack: Pack, name: &str) -> Result<Pack, PackError> {
    let Some(i) = pack.scenarios.iter().position(|s| s.name == name) else {
        let names: Vec<&str> = pack.scenarios.iter().map(|s| s.name.as_str()).collect();
        let nearest = names
            .iter()
            .map(|n| (strsim::levenshtein(n, name), *n))
            .min()
            .filter(|(d, n)| d * 3 <= n.len().max(name.len()))
            .map(|(_, n)| format!(" (did you mean '{n}'?)"))
            .unwrap_or_default();
        return Err(PackError {
            file: arg.to_string(),
            message: format!(
                "{} has no scenario '{}'{nearest}; its scenarios: {}",
                pack.name,
                crate::terminal::clean(name),
                names.join(", ")
            ),
        });
    };
    let kept = pack.scenarios.swap_remove(i);
    pack.scenarios = vec![kept];
    pack.selected = Some(name.to_string());
    Ok(pack)
}
