//! Which shape of the `plumb:bench` WIT package a component was built
//! against. Each released shape has its own version (the package line of
//! `wit/plumb.wit`; `wit/released.txt` holds every released version's
//! shape, and a test here fails when a released version's shape changes), and a component's imports name the version it
//! was built for (`plumb:bench/types@0.3.0`): a guest built for another
//! version is told so, with both versions, instead of wasmtime's first type
//! mismatch (`export 'table' has the wrong type`).

use wasmtime::component::Component;
use wasmtime::Engine;

/// The version of the `plumb:bench` package this plumb provides (the
/// package line of `wit/plumb.wit`; a unit test keeps them equal).
pub const WIT_VERSION: &str = "0.4.0";

/// The package's name, as import names begin.
const PACKAGE: &str = "plumb:bench/";

/// The version of `plumb:bench` a component imports when it is not this
/// plumb's: `Some("0.3.0")`, or `Some("no version")` for an import of the
/// package without one; `None` when every import of the package is at
/// [`WIT_VERSION`] (or there are none).
pub(super) fn other_version(component: &Component, engine: &Engine) -> Option<String> {
    component
        .component_type()
        .imports(engine)
        .find_map(|(name, _)| foreign(name))
}

/// The version `name` (an import's name) asks of `plumb:bench`, if it is
/// not [`WIT_VERSION`].
fn foreign(name: &str) -> Option<String> {
    let interface = name.strip_prefix(PACKAGE)?;
    match interface.split_once('@') {
        Some((_, version)) if version == WIT_VERSION => None,
        Some((_, version)) => Some(
            crate::terminal::clean_text(version)
                .chars()
                .take(64)
                .collect(),
        ),
        None => Some("no version".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wit_file_declares_this_version() {
        let wit = include_str!("../../../../wit/plumb.wit");
        let line = wit
            .lines()
            .find(|l| l.starts_with("package "))
            .expect("a package line");
        assert_eq!(line, format!("package plumb:bench@{WIT_VERSION};"));
    }

    /// `wit/plumb.wit` without comments, whitespace runs made one space:
    /// what a guest's build depends on.
    fn shape(wit: &str) -> String {
        let mut text = String::new();
        let mut rest = wit;
        while let Some(start) = rest.find("/*") {
            text.push_str(&rest[..start]);
            rest = rest[start..]
                .split_once("*/")
                .map_or("", |(_, after)| after);
        }
        text.push_str(rest);
        let code: Vec<&str> = text
            .lines()
            .map(|l| l.split_once("//").map_or(l, |(code, _)| code))
            .collect();
        code.join("\n")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn sha256_hex(text: &str) -> String {
        use sha2::{Digest, Sha256};
        Sha256::digest(text.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    #[test]
    fn a_released_version_keeps_its_shape() {
        let wit = include_str!("../../../../wit/plumb.wit");
        let released = include_str!("../../../../wit/released.txt");
        let mut versions = Vec::new();
        let mut hashes = Vec::new();
        for line in released
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        {
            let (version, hash) = line.split_once(' ').expect("VERSION SHA256");
            versions.push(version);
            hashes.push(hash);
        }
        let mut unique = versions.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(
            unique.len(),
            versions.len(),
            "a version listed twice in wit/released.txt"
        );
        let mut unique = hashes.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(
            unique.len(),
            hashes.len(),
            "two versions with one shape in wit/released.txt"
        );
        let now = sha256_hex(&shape(wit));
        match versions.iter().position(|v| *v == WIT_VERSION) {
            Some(i) => assert_eq!(
                hashes[i], now,
                "plumb:bench@{WIT_VERSION} was released with another shape: a guest built for it would no longer run. Give the new shape a new version (the package line of wit/plumb.wit and WIT_VERSION) and add `VERSION {now}` to wit/released.txt"
            ),
            None => panic!("plumb:bench@{WIT_VERSION} is not in wit/released.txt: add `{WIT_VERSION} {now}`"),
        }
    }

    #[test]
    fn the_shape_leaves_out_comments_and_spacing() {
        let a = "package p:q@1.0.0;\n/// doc\ninterface i { // note\n  f: func(); /* x */ }";
        let b = "package p:q@1.0.0; interface i {\n f: func();\n}";
        assert_eq!(shape(a), shape(b));
        assert_ne!(
            shape(a),
            shape("package p:q@1.0.0; interface i { f: func(x: u8); }")
        );
    }

    #[test]
    fn imports_of_other_versions_are_named() {
        assert_eq!(foreign(&format!("plumb:bench/io@{WIT_VERSION}")), None);
        assert_eq!(foreign("wasi:io/streams@0.2.6"), None);
        assert_eq!(foreign("plumb:bench/types@0.3.0").as_deref(), Some("0.3.0"));
        assert_eq!(foreign("plumb:bench/io").as_deref(), Some("no version"));
        let odd = foreign("plumb:bench/io@0.3.0\u{1b}[2J").unwrap();
        assert!(odd.starts_with("0.3.0") && !odd.contains('\u{1b}'), "{odd}");
    }
}
