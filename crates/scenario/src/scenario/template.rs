//! Which comparison template lays out `plumb compare`'s output, and running
//! it in the runtime it is written for. A template is a pack's
//! `compare.rhai` or `compare.wasm`; it runs with no host API, under the
//! limits of [`crate::model::template::limits`].

use super::pack::{self, PackTemplate};
use crate::model::document::RunDocument;
use crate::model::template::{MadeTable, TemplateInput};
use std::path::Path;

/// A template that cannot be found, read, compiled or run.
#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    /// A Rhai template that is not text.
    #[error("{0}: not UTF-8 text")]
    NotUtf8(String),
    /// A template file that cannot be read.
    #[error("{file}: {reason}")]
    Read {
        /// The file as given.
        file: String,
        /// Why.
        reason: crate::input::InputError,
    },
    /// The pack named cannot be loaded.
    #[error(transparent)]
    Pack(#[from] pack::PackError),
    /// The pack named has no template.
    #[error("{arg}: pack {pack} has no comparison template (compare.rhai or compare.wasm)")]
    NoTemplate {
        /// The argument.
        arg: String,
        /// The pack's name.
        pack: String,
    },
    /// A Rhai template does not compile, fails, or makes tables over the
    /// limits (naming the file).
    #[error(transparent)]
    Rhai(#[from] crate::script::template::TemplateFailure),
    /// A WebAssembly template does not link, fails, or makes tables over
    /// the limits (naming the file).
    #[error(transparent)]
    Wasm(#[from] crate::wasm::WasmError),
}

/// A template ready to run.
#[derive(Debug, Clone)]
pub struct Template {
    /// How errors name it: `cloud-compare/compare.rhai`, a path.
    pub file: String,
    code: Code,
}

#[derive(Debug, Clone)]
enum Code {
    Rhai(String),
    Wasm(Vec<u8>),
}

/// The largest template file read from a path.
const MAX_TEMPLATE_FILE: u64 = 64 << 20;

impl Template {
    /// The template a pack ships; `prefix` names the pack in errors.
    pub fn from_pack(prefix: &str, t: &PackTemplate) -> Result<Template, TemplateError> {
        Template::from_bytes(format!("{prefix}{}", t.name), &t.name, t.bytes.clone())
    }

    fn from_bytes(file: String, name: &str, bytes: Vec<u8>) -> Result<Template, TemplateError> {
        let code = if name.ends_with(".wasm") {
            Code::Wasm(bytes)
        } else {
            match String::from_utf8(bytes) {
                Ok(source) => Code::Rhai(source),
                Err(_) => return Err(TemplateError::NotUtf8(file)),
            }
        };
        Ok(Template { file, code })
    }

    /// The template `--template ARG` names: a `.rhai` or `.wasm` file, or a
    /// pack (folder, bundle, `git+URL#REV`, built-in name) that ships one.
    pub fn from_arg(arg: &str) -> Result<Template, TemplateError> {
        let path = Path::new(arg);
        let ext = path.extension().and_then(|e| e.to_str());
        if path.is_file() && matches!(ext, Some("rhai" | "wasm")) {
            let bytes = crate::input::read_file(path, MAX_TEMPLATE_FILE).map_err(|reason| {
                TemplateError::Read {
                    file: arg.to_string(),
                    reason,
                }
            })?;
            return Template::from_bytes(arg.to_string(), arg, bytes);
        }
        let p = pack::resolve(arg, &[])?;
        match &p.compare {
            Some(t) => Template::from_pack(&format!("{}/", p.name), t),
            None => Err(TemplateError::NoTemplate {
                arg: arg.to_string(),
                pack: p.name.clone(),
            }),
        }
    }

    /// Compiles it without running `render`: `plumb check`.
    pub fn check(&self) -> Result<(), TemplateError> {
        match &self.code {
            Code::Rhai(source) => Ok(crate::script::template::check(&self.file, source)?),
            Code::Wasm(bytes) => Ok(crate::wasm::template::check(&self.file, bytes)?),
        }
    }

    /// Runs `render` on `input`: the tables, checked against the limits, or
    /// why there are none.
    pub fn render(&self, input: &TemplateInput) -> Result<Vec<MadeTable>, TemplateError> {
        match &self.code {
            Code::Rhai(source) => Ok(crate::script::template::render(&self.file, source, input)?),
            Code::Wasm(bytes) => Ok(crate::wasm::template::render(&self.file, bytes, input)?),
        }
    }
}

/// What lays out the comparison of some runs when no `--template` is given.
#[derive(Debug)]
pub enum Choice {
    /// Every run comes from one pack, and here is its template.
    Template(Template),
    /// The generic table: the runs come from several packs, from none, or
    /// from a pack without a template.
    Generic,
    /// Every run comes from one pack that has a template, but the pack that
    /// ran cannot be found as it was: why, for a note.
    Unavailable(String),
}

/// The template of the pack every run came from: a built-in pack's, or the
/// folder's or bundle's the runs name when it still holds the very pack
/// that ran (same SHA-256).
pub fn for_runs(docs: &[RunDocument]) -> Choice {
    let mut scenarios = docs.iter().flat_map(|d| &d.scenarios);
    let Some(first) = scenarios.next() else {
        return Choice::Generic;
    };
    let Some(name) = first.pack.as_deref() else {
        return Choice::Generic;
    };
    if scenarios.any(|s| s.pack.as_deref() != Some(name)) {
        return Choice::Generic;
    }
    let origin = first.pack_origin.as_deref().unwrap_or("builtin");
    let loaded = if origin == "builtin" {
        match pack::builtin(name) {
            Some(Ok(p)) => p,
            _ => return Choice::Generic,
        }
    } else if let Some(path) = origin
        .strip_prefix("folder ")
        .or_else(|| origin.strip_prefix("bundle "))
    {
        let gone = |why: String| {
            Choice::Unavailable(format!(
                "the runs come from pack {name} at {path}, {why}; give --template to lay them out with its template"
            ))
        };
        let loaded = if origin.starts_with("folder ") {
            pack::load_dir(Path::new(path))
        } else {
            pack::load_bundle(Path::new(path), &[])
        };
        match loaded {
            Ok(p) if p.name == name && first.pack_sha256.as_deref() == Some(p.sha256.as_str()) => p,
            Ok(_) => return gone("which has changed since they ran".into()),
            Err(_) => return gone("which is not there any more".into()),
        }
    } else if let Some(at) = origin.strip_prefix("git ") {
        // Fetching what a result file names is not compare's business.
        let (url, rest) = at.rsplit_once('@').unwrap_or((at, ""));
        let (commit, subdir) = rest.split_once(':').unwrap_or((rest, ""));
        let sub = if subdir.is_empty() {
            String::new()
        } else {
            format!(":{subdir}")
        };
        return Choice::Unavailable(format!(
            "the runs come from pack {name} in git; if it has a comparison template, give --template git+{url}#{commit}{sub}"
        ));
    } else {
        return Choice::Generic;
    };
    match &loaded.compare {
        Some(t) => match Template::from_pack(&format!("{name}/"), t) {
            Ok(t) => Choice::Template(t),
            Err(e) => Choice::Unavailable(e.to_string()),
        },
        None => Choice::Generic,
    }
}
