//! `plumb pack`: make a pack folder, bundle it into one file, inspect a
//! pack, and make keys, sign and verify bundles in minisign's formats.

use super::ExitCode;
use crate::scenario::bundle;
use crate::scenario::pack::{self, Origin};
use crate::scenario::signature::{self, Signed};
use crate::scenario::trust;
use clap::Subcommand;
use std::path::{Path, PathBuf};

/// The `plumb pack` subcommands.
#[derive(Subcommand, Debug)]
pub enum PackCommand {
    /// Make a working pack folder: pack.toml, one commented scenario, a README.
    New {
        /// The pack's name (and folder).
        name: String,
    },
    /// Bundle a pack into one deterministic file (NAME-VERSION.plumbpack).
    Bundle {
        /// A pack folder, a built-in pack or a bundle.
        pack: String,
        /// Where to write the bundle.
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Show a pack: name, version, parameters, capabilities, files with
    /// their SHA-256, the content hash and the signature.
    Inspect {
        /// A bundle, a pack folder or a built-in pack.
        pack: String,
        /// A public key whose signature is trusted (file or key); repeatable.
        #[arg(long, value_name = "PUBKEY")]
        trust: Vec<String>,
        /// A file of trusted public keys, one per line.
        #[arg(long, value_name = "FILE")]
        trusted_keys: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Make a key pair without a password, in minisign's formats.
    Keygen {
        /// The public key file.
        #[arg(short, long, default_value = "plumb.pub")]
        public: PathBuf,
        /// The secret key file (written with mode 0600).
        #[arg(short, long, default_value = "plumb.key")]
        secret: PathBuf,
    },
    /// Sign a bundle (writes BUNDLE.minisig, which `minisign -V` verifies).
    Sign {
        /// The bundle.
        file: PathBuf,
        /// The secret key (a minisign key; an encrypted one takes its
        /// password from PLUMB_KEY_PASSWORD).
        #[arg(long)]
        key: PathBuf,
    },
    /// Verify a bundle: its files against its index, its signature against
    /// the trusted keys.
    Verify {
        /// The bundle.
        file: PathBuf,
        /// A trusted public key (file or key); repeatable.
        #[arg(long, value_name = "PUBKEY")]
        trust: Vec<String>,
        /// A file of trusted public keys, one per line.
        #[arg(long, value_name = "FILE")]
        trusted_keys: Option<PathBuf>,
    },
}

type Outcome = Result<ExitCode, (ExitCode, String)>;

fn bad(m: String) -> (ExitCode, String) {
    (ExitCode::BadInput, m)
}

/// Runs a `plumb pack` subcommand.
pub fn main(cmd: PackCommand) -> ExitCode {
    let r = match cmd {
        PackCommand::New { name } => new(&name),
        PackCommand::Bundle { pack, output } => bundle_cmd(&pack, output),
        PackCommand::Inspect {
            pack,
            trust,
            trusted_keys,
            json,
        } => inspect(&pack, &trust, trusted_keys.as_deref(), json),
        PackCommand::Keygen { public, secret } => signature::keygen(&public, &secret)
            .map(|id| {
                println!(
                    "key {id}: public key in {}, secret key in {} (keep it private)",
                    public.display(),
                    secret.display()
                );
                ExitCode::Ok
            })
            .map_err(|e| bad(e.to_string())),
        PackCommand::Sign { file, key } => {
            signature::sign(&file, &key, std::env::var("PLUMB_KEY_PASSWORD").ok())
                .map(|id| {
                    println!(
                        "signed {} with key {id}: {}",
                        file.display(),
                        signature::signature_path(&file).display()
                    );
                    ExitCode::Ok
                })
                .map_err(|e| bad(e.to_string()))
        }
        PackCommand::Verify {
            file,
            trust,
            trusted_keys,
        } => verify(&file, &trust, trusted_keys.as_deref()),
    };
    match r {
        Ok(code) => code,
        Err((code, message)) => {
            crate::cli::print_error("pack", &message);
            code
        }
    }
}

/// How far a pack named on the command line is trusted: the options
/// `plumb run` and `plumb fleet run` share.
#[derive(Debug, Clone, clap::Args)]
pub struct PackTrust {
    /// Refuse the pack unless its content hash (its bundle's SHA-256, as
    /// `plumb pack inspect` shows it) is this.
    #[arg(long, value_name = "HASH")]
    pub sha256: Option<String>,
    /// A public key whose signatures are trusted (a minisign key file, or
    /// the key itself); may be repeated.
    #[arg(long, value_name = "PUBKEY")]
    pub trust: Vec<String>,
    /// A file of trusted public keys, one per line.
    #[arg(long, value_name = "FILE")]
    pub trusted_keys: Option<PathBuf>,
    /// Refuse a pack bundle that is not signed by a trusted key.
    #[arg(long)]
    pub require_signature: bool,
}

impl PackTrust {
    /// The trust policy these options give.
    pub fn policy(&self) -> trust::Policy {
        trust::Policy {
            sha256: self.sha256.clone(),
            trust: self.trust.clone(),
            trusted_keys: self.trusted_keys.clone(),
            require_signature: self.require_signature,
        }
    }
}

/// The pack folder `plumb pack new` writes.
fn new(name: &str) -> Outcome {
    if !bundle::plain_name(name) || name.contains(['"', '\'']) {
        return Err(bad(format!(
            "'{name}' is not a pack name (one plain file name, not hidden)"
        )));
    }
    let dir = Path::new(name);
    std::fs::create_dir(dir).map_err(|e| bad(format!("{name}: {e}")))?;
    let files = [
        (
            "pack.toml",
            format!(
                r#"name = "{name}"
version = "0.1.0"
description = "What this pack measures, in one sentence."
scenarios = ["main.rhai"]

# Parameters: `plumb run {name}/ -p size=1G` overrides a default.
[params.size]
default = "64M"
unit = "bytes"
description = "size of the test file"

# What the pack needs beyond its run directory; plumb shows it before running.
[capabilities]
max_bytes = "128M"
"#
            ),
        ),
        (
            "main.rhai",
            r#"// A scenario: plumb runs it in a run directory of its own and keeps
// what it reports. `plumb list` shows every host function.
let size = param("size", "64M");

// Write a file with 1 MiB blocks and fsync at the end, then read it back.
// A buffered read of a file just written is served by the page cache:
// evict it first, so the read measures the device. Passing the read's
// result to report::metric marks the figure "cached" if it still was.
let w = fs::write_file("data.bin", size, #{ bs: "1M", fsync: true });
report::metric("write_bw", w.bw_bytes / 1048576.0, "MiB/s", "higher");
fs::evict("data.bin");
let r = fs::read_file("data.bin", #{ bs: "1M" });
report::metric("read_bw", r.bw_bytes / 1048576.0, "MiB/s", "higher", r);

// A fio-style job: 4 KiB random reads for 3 seconds.
let j = io::job(#{ rw: "randread", bs: "4k", size: size, runtime: "3s", filename: "data.bin" });
report::metric("randread_iops", j.read.iops, "IOPS", "higher");
fs::remove("data.bin");
"#
            .to_string(),
        ),
        (
            pack::README,
            format!(
                "# {name}\n\nWhat this pack measures and how to read its figures.\n\n```\nplumb run {name}/\nplumb pack bundle {name}/\n```\n"
            ),
        ),
    ];
    for (f, text) in files {
        std::fs::write(dir.join(f), text)
            .map_err(|e| (ExitCode::Failed, format!("{name}/{f}: {e}")))?;
    }
    println!("made {name}/: pack.toml, main.rhai, README.md (plumb run {name}/)");
    Ok(ExitCode::Ok)
}

fn bundle_cmd(arg: &str, output: Option<PathBuf>) -> Outcome {
    let p = pack::resolve(arg, &[]).map_err(|e| bad(e.to_string()))?;
    if p.files.is_empty() {
        return Err(bad(format!(
            "{arg} is a lone scenario, not a pack: make a pack folder (plumb pack new) to bundle it"
        )));
    }
    let bytes = bundle::write(&p.files).map_err(|e| (ExitCode::Failed, e.to_string()))?;
    // Without -o, a file in the current directory: the name and version
    // are plain names (checked where pack.toml is read), so this is one.
    let output = output.unwrap_or_else(|| {
        let version = if p.version.is_empty() {
            "0"
        } else {
            &p.version
        };
        Path::new(".").join(format!("{}-{version}.{}", p.name, bundle::EXTENSION))
    });
    crate::save::write_atomic(&output, &bytes)
        .map_err(|e| (ExitCode::Failed, format!("-o {e}")))?;
    println!(
        "bundled {} file(s) into {}\nsha256 {}",
        p.files.len(),
        output.display(),
        bundle::sha256_hex(&bytes)
    );
    Ok(ExitCode::Ok)
}

/// What `inspect` shows.
#[derive(serde::Serialize)]
struct Inspection {
    name: String,
    version: String,
    description: String,
    sha256: String,
    params: Vec<(String, String, String)>,
    capabilities: Vec<String>,
    files: Vec<(String, String, usize)>,
    signature: String,
    signer: Option<String>,
    /// The comparison template's file, when the pack has one.
    compare_template: Option<String>,
}

fn inspect(arg: &str, trust: &[String], keys: Option<&Path>, json: bool) -> Outcome {
    let trusted = trust::trusted(trust, keys).map_err(|e| bad(e.to_string()))?;
    let p = pack::resolve(arg, &trusted).map_err(|e| bad(e.to_string()))?;
    let (signature, signer) = match &p.origin {
        Origin::Bundle { signed, .. } => match signed {
            Signed::Unsigned => ("unsigned".to_string(), None),
            Signed::Untrusted { key_id } => (
                format!("signed by key {key_id} (not among the trusted keys: not checked)"),
                Some(key_id.clone()),
            ),
            Signed::Verified { key_id, comment } => (
                format!("signed by trusted key {key_id}, verified ({comment})"),
                Some(key_id.clone()),
            ),
        },
        _ => ("not a bundle (unsigned)".to_string(), None),
    };
    let i = Inspection {
        name: p.name.clone(),
        version: p.version.clone(),
        description: p.description.clone(),
        sha256: p.sha256.clone(),
        params: p
            .params
            .iter()
            .map(|(k, d)| (k.clone(), d.default_text(), d.description.clone()))
            .collect(),
        capabilities: p.capabilities.describe(),
        files: p
            .files
            .iter()
            .map(|(n, b)| (n.clone(), bundle::sha256_hex(b), b.len()))
            .collect(),
        signature,
        signer,
        compare_template: p.compare.as_ref().map(|t| t.name.clone()),
    };
    if json {
        let text =
            serde_json::to_string_pretty(&i).map_err(|e| (ExitCode::Failed, e.to_string()))?;
        println!("{}", crate::terminal::clean_json(&text));
        return Ok(ExitCode::Ok);
    }
    let mut out = format!(
        "{} {}\n{}\nsha256 {}\nsignature: {}\n",
        i.name, i.version, i.description, i.sha256, i.signature
    );
    out.push_str("\nparameters:\n");
    for (k, d, desc) in &i.params {
        out.push_str(&format!("  {k} = {d}  {desc}\n"));
    }
    out.push_str("\nasks for:\n");
    if i.capabilities.is_empty() {
        out.push_str("  nothing beyond its run directory\n");
    }
    for c in &i.capabilities {
        out.push_str(&format!("  {c}\n"));
    }
    if let Some(t) = &i.compare_template {
        out.push_str(&format!(
            "\ncomparison template: {t} (plumb compare lays out this pack's runs with it)\n"
        ));
    }
    out.push_str("\nfiles:\n");
    for (n, h, len) in &i.files {
        out.push_str(&format!("  {h}  {n} ({len} bytes)\n"));
    }
    print!("{}", crate::terminal::clean_text(&out));
    Ok(ExitCode::Ok)
}

fn verify(file: &Path, trust: &[String], keys: Option<&Path>) -> Outcome {
    let trusted = trust::trusted(trust, keys).map_err(|e| bad(e.to_string()))?;
    if trusted.is_empty() {
        return Err(bad(
            "no trusted key: give --trust PUBKEY or --trusted-keys FILE".into(),
        ));
    }
    let p = pack::load_bundle(file, &trusted).map_err(|e| (ExitCode::Failed, e.to_string()))?;
    match &p.origin {
        Origin::Bundle {
            signed: Signed::Verified { key_id, comment },
            ..
        } => {
            let said = format!(
                "{}: {} files match the index; signature by trusted key {key_id} verified ({comment})\nsha256 {}",
                file.display(),
                p.files.len(),
                p.sha256
            );
            println!("{}", crate::terminal::clean_text(&said));
            Ok(ExitCode::Ok)
        }
        Origin::Bundle {
            signed: Signed::Untrusted { key_id },
            ..
        } => Err((
            ExitCode::Failed,
            format!(
                "{}: signed by key {key_id}, which is not trusted",
                file.display()
            ),
        )),
        _ => Err((
            ExitCode::Failed,
            format!(
                "{}: not signed (no {})",
                file.display(),
                signature::signature_path(file).display()
            ),
        )),
    }
}
