//! A scenario argument to a pack: a bundle, a script, a folder, a git
//! spec or a built-in name, maybe selecting one of its scenarios.

use super::builtin::{builtin, builtin_names};
use super::load::{load_bundle, load_dir, load_git, single_script};
use super::{Pack, PackError, PackProblem};
use crate::scenario::bundle;
use std::path::Path;

/// Resolves a scenario argument: a bundle (`.plumbpack`), a `.rhai` or
/// `.wasm` file, a pack folder, or a built-in pack name; a bundle's
/// signature is checked against `trusted` keys.
pub fn resolve(arg: &str, trusted: &[(minisign::PublicKey, String)]) -> Result<Pack, PackError> {
    if let Some(spec) = crate::scenario::git::parse(arg) {
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
            problem: Box::new(PackProblem::NotFound),
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
            .map(|(_, n)| n.to_string());
        return Err(PackError {
            file: arg.to_string(),
            problem: Box::new(PackProblem::NoScenario {
                pack: pack.name.clone(),
                name: name.to_string(),
                nearest,
                names: names.iter().map(|n| n.to_string()).collect(),
            }),
        });
    };
    let kept = pack.scenarios.swap_remove(i);
    pack.scenarios = vec![kept];
    pack.selected = Some(name.to_string());
    Ok(pack)
}
