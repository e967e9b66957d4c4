//! The built-in packs, embedded in plumb from `scripts/`.

use super::load::from_manifest;
use super::{Origin, Pack, PackError, PackProblem};

/// Embeds a built-in pack's files.
macro_rules! pack_files {
    ($dir:literal: $($file:literal),*) => {
        &[$(($file, include_str!(concat!("../../../../../scripts/", $dir, "/", $file)))),*]
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
                .ok_or_else(|| PackProblem::MissingEmbedded(f.to_string()))
        })
        .map(|p| Pack {
            origin: Origin::Builtin,
            ..p
        }),
    )
}
