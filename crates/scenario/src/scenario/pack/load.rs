//! Reading a pack: a folder, a bundle, a git repository or a lone
//! script, each file checked as hostile input, the manifest first.

use super::{
    Capabilities, Manifest, Origin, Pack, PackError, PackProblem, PackTemplate, ScenarioSource,
    README, TEMPLATE_FILES,
};
use crate::scenario::bundle::{self, Files};
use crate::scenario::git::{Checkout, GitError, GitSpec};
use crate::scenario::signature;
use std::collections::BTreeMap;
use std::path::Path;

/// Loads a pack folder. Every file it names (the manifest, scenarios, data)
/// is read beneath the folder without following symlinks, must be a regular
/// file, and all together hold at most [`bundle::MAX_PACK_BYTES`].
pub fn load_dir(dir: &Path) -> Result<Pack, PackError> {
    let read = |f: &str, max: u64| {
        if !bundle::plain_name(f) {
            return Err(PackProblem::NotInPack(f.to_string()));
        }
        crate::sandbox::read_beneath(dir, f, max).map_err(|source| PackProblem::Beneath {
            file: f.to_string(),
            source,
        })
    };
    let mut pack = from_manifest(&format!("{}/", dir.display()), read)?;
    pack.origin = Origin::Folder(dir.display().to_string());
    Ok(pack)
}

/// Loads a bundle file, read as a stream (see [`bundle::read`]): every
/// file checked against its index, the signature (`BUNDLE.minisig`)
/// checked against `trusted` keys over the same open file.
pub fn load_bundle(
    path: &Path,
    trusted: &[(minisign::PublicKey, String)],
) -> Result<Pack, PackError> {
    let err = |problem: PackProblem| PackError {
        file: path.display().to_string(),
        problem: Box::new(problem),
    };
    let mut file =
        crate::input::open_file(path, bundle::MAX_BUNDLE).map_err(|e| err(PackProblem::Read(e)))?;
    let bundle::Bundle { files, sha256 } = bundle::read(&mut file).map_err(|e| err(e.into()))?;
    let signed = signature::check(
        &mut file,
        &sha256,
        &signature::signature_path(path),
        trusted,
    )
    .map_err(|e| err(e.into()))?;
    // Each file moves from the bundle into the pack: held once.
    let mut files = files;
    let mut pack = from_manifest(&format!("{}:", path.display()), |f, _| {
        files
            .remove(f)
            .ok_or_else(|| PackProblem::NotInBundle(f.to_string()))
    })?;
    if let Some(extra) = files.keys().next() {
        return Err(err(PackProblem::Unnamed(extra.clone())));
    }
    pack.sha256 = sha256;
    pack.origin = Origin::Bundle {
        path: path.display().to_string(),
        signed,
    };
    Ok(pack)
}

/// Loads a pack from a git repository at a commit (`git+URL#REV[:SUBDIR]`).
pub(super) fn load_git(arg: &str, spec: Result<GitSpec, GitError>) -> Result<Pack, PackError> {
    let err = |e: GitError| PackError {
        file: arg.to_string(),
        problem: Box::new(e.into()),
    };
    let spec = spec.map_err(err)?;
    let checkout = Checkout::open(&spec).map_err(err)?;
    let read = |f: &str, max: u64| {
        if !bundle::plain_name(f) {
            return Err(PackProblem::NotInPack(f.to_string()));
        }
        Ok(checkout.read(f, max)?)
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
        problem: Box::new(PackProblem::CannotBundle(e)),
    })
}

/// A lone script (`.rhai`) or component (`.wasm`) as a pack of one.
pub fn single_script(path: &Path) -> Result<Pack, PackError> {
    let err = |problem: PackProblem| PackError {
        file: path.display().to_string(),
        problem: Box::new(problem),
    };
    let bytes = crate::input::read_file(path, bundle::MAX_PACK_BYTES)
        .map_err(|e| err(PackProblem::Read(e)))?;
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
fn check_identity(m: &Manifest) -> Result<(), PackProblem> {
    if !bundle::plain_name(&m.name) {
        return Err(PackProblem::BadName(m.name.clone()));
    }
    if !m.version.is_empty() && !bundle::plain_name(&m.version) {
        return Err(PackProblem::BadVersion(m.version.clone()));
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

impl<F: FnMut(&str, u64) -> Result<Vec<u8>, PackProblem>> Reader<F> {
    /// A copy of the file `f` (read once, however often it is named).
    fn get(&mut self, f: &str) -> Result<Vec<u8>, PackProblem> {
        if let Some(bytes) = self.files.get(f) {
            return Ok(bytes.clone());
        }
        let left = bundle::MAX_PACK_BYTES.saturating_sub(self.total);
        let bytes = (self.read)(f, left).map_err(|e| {
            if left < bundle::MAX_PACK_BYTES {
                PackProblem::OverBudget {
                    problem: Box::new(e),
                    left,
                }
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
pub(super) fn from_manifest(
    prefix: &str,
    read: impl FnMut(&str, u64) -> Result<Vec<u8>, PackProblem>,
) -> Result<Pack, PackError> {
    let file = format!("{prefix}{}", bundle::MANIFEST);
    let pack_err = |problem: PackProblem| PackError {
        file: file.clone(),
        problem: Box::new(problem),
    };
    let mut reader = Reader {
        read,
        total: 0,
        files: Files::new(),
    };
    let text = reader
        .get(bundle::MANIFEST)
        .and_then(|b| String::from_utf8(b).map_err(|_| PackProblem::NotUtf8))
        .map_err(pack_err)?;
    let m: Manifest = toml::from_str(&text).map_err(|e| pack_err(PackProblem::Manifest(e)))?;
    check_identity(&m).map_err(pack_err)?;
    let names: Vec<&str> = m.params.keys().map(String::as_str).collect();
    m.capabilities
        .validate(&names)
        .map_err(|e| pack_err(PackProblem::Capabilities(e)))?;
    let mut scenarios = Vec::new();
    for f in &m.scenarios {
        bundle::pack_file_name(f).map_err(|e| pack_err(e.into()))?;
        let bytes = reader.get(f).map_err(pack_err)?;
        scenarios.push(ScenarioSource::new(f, format!("{prefix}{f}"), bytes).map_err(pack_err)?);
    }
    let mut data = BTreeMap::new();
    for f in &m.data {
        bundle::pack_file_name(f).map_err(|e| pack_err(e.into()))?;
        let text = String::from_utf8(reader.get(f).map_err(pack_err)?)
            .map_err(|_| pack_err(PackProblem::DataNotUtf8(f.clone())))?;
        data.insert(f.clone(), text);
    }
    // A README travels with the pack when there is one.
    let _ = reader.get(README);
    let compare = match &m.compare {
        Some(f) => {
            bundle::pack_file_name(f).map_err(|e| pack_err(e.into()))?;
            if !(f.ends_with(".rhai") || f.ends_with(".wasm")) {
                return Err(pack_err(PackProblem::TemplateName(f.clone())));
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
