//! The pack a fleet sent, as the driver knows it, and what a host's result
//! may say about it.
//!
//! A host is a stranger: its result could name another pack, hash or
//! version, or a signer "verified" there (a host only ever receives an
//! unsigned bundle, so it has nothing to verify). The driver refuses a
//! result whose pack claims differ from what it sent, and writes its own
//! record of the pack into every scenario it keeps: the pack's SHA-256,
//! version, signer (as the driver verified it) and origin here.

use super::remote::Payload;
use crate::model::document::RunDocument;
use crate::scenario::bundle;
use crate::scenario::pack::Pack;
use std::collections::BTreeSet;

/// The identity of the pack sent to every host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentPack {
    /// Its name as a host loads it: the pack's own name for a bundle, the
    /// payload file's stem for a lone scenario file.
    pub name: String,
    /// Its SHA-256 here (the bundle it was loaded from, as `fleet.json`
    /// and the signature know it).
    pub sha256: String,
    /// The SHA-256 of the bytes sent (what the host checks with
    /// `--sha256`); the same as `sha256` unless the pack came from a
    /// bundle written by another plumb.
    pub sent_sha256: String,
    /// Its version, if it has one.
    pub version: Option<String>,
    /// Who signed it, as verified here (`KEY verified`, `KEY untrusted`),
    /// None when it is not a signed bundle.
    pub signer: Option<String>,
    /// Where it came from here.
    pub origin: String,
    /// The SHA-256 of each scenario's source.
    pub sources: BTreeSet<String>,
}

/// A claim of a host's result about the pack that is not the pack sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{host}'s result claims {what} {claimed} for scenario '{scenario}', but plumb sent {sent}: refused"
)]
pub struct ClaimError {
    /// The host.
    pub host: String,
    /// The scenario whose record says so (cleaned, cut).
    pub scenario: String,
    /// Which claim (`pack`, `pack_sha256`, …).
    pub what: &'static str,
    /// What it claims (quoted, cleaned, cut).
    pub claimed: String,
    /// What was sent.
    pub sent: String,
}

/// At most so many characters of a claim go into a message.
const SHOWN: usize = 80;

fn shown(v: Option<&str>) -> String {
    match v {
        Some(v) => format!(
            "'{}'",
            crate::terminal::clean(v)
                .chars()
                .take(SHOWN)
                .collect::<String>()
        ),
        None => "none".into(),
    }
}

impl SentPack {
    /// The identity of `pack`, sent as `payload`.
    pub fn new(pack: &Pack, payload: &Payload) -> SentPack {
        let name = if pack.files.is_empty() {
            std::path::Path::new(&payload.name)
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_default()
                .to_string()
        } else {
            pack.name.clone()
        };
        SentPack {
            name,
            sha256: pack.sha256.clone(),
            sent_sha256: bundle::sha256_hex(&payload.bytes),
            version: Some(pack.version.clone()).filter(|v| !v.is_empty()),
            signer: pack.origin.signer(),
            origin: pack.origin.describe(),
            sources: pack.scenarios.iter().map(|s| s.sha256()).collect(),
        }
    }

    /// Checks what `host`'s result `doc` says of the pack in each
    /// scenario — its name, SHA-256 (the pack's or the bytes sent), version
    /// and signer when given, and the scenario's source among those sent —
    /// then writes the pack's SHA-256, version, signer and origin as the
    /// driver knows them.
    pub fn stamp(&self, host: &str, doc: &mut RunDocument) -> Result<(), ClaimError> {
        for s in &mut doc.scenarios {
            let refuse = |what, claimed: Option<&str>, sent: Option<&str>| ClaimError {
                host: host.to_string(),
                scenario: crate::terminal::clean(&s.name)
                    .chars()
                    .take(SHOWN)
                    .collect(),
                what,
                claimed: shown(claimed),
                sent: shown(sent),
            };
            if s.pack.as_deref() != Some(self.name.as_str()) {
                return Err(refuse("pack", s.pack.as_deref(), Some(&self.name)));
            }
            if let Some(h) = s.pack_sha256.as_deref() {
                if h != self.sha256 && h != self.sent_sha256 {
                    return Err(refuse("pack_sha256", Some(h), Some(&self.sha256)));
                }
            }
            if s.pack_version.is_some() && s.pack_version != self.version {
                return Err(refuse(
                    "pack_version",
                    s.pack_version.as_deref(),
                    self.version.as_deref(),
                ));
            }
            if s.pack_signer.is_some() && s.pack_signer != self.signer {
                return Err(refuse(
                    "pack_signer",
                    s.pack_signer.as_deref(),
                    self.signer.as_deref(),
                ));
            }
            if let Some(src) = s.source_sha256.as_deref() {
                if !self.sources.contains(src) {
                    return Err(refuse(
                        "source_sha256",
                        Some(src),
                        Some("none of the pack's scenarios with it"),
                    ));
                }
            }
            s.pack_sha256 = Some(self.sha256.clone());
            s.pack_version = self.version.clone();
            s.pack_signer = self.signer.clone();
            s.pack_origin = Some(self.origin.clone());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::document::ScenarioResult;

    fn sent() -> SentPack {
        SentPack {
            name: "quick".into(),
            sha256: "a".repeat(64),
            sent_sha256: "b".repeat(64),
            version: Some("1.0".into()),
            signer: None,
            origin: "builtin".into(),
            sources: ["c".repeat(64)].into_iter().collect(),
        }
    }

    fn doc(edit: impl FnOnce(&mut ScenarioResult)) -> RunDocument {
        let mut s: ScenarioResult = serde_json::from_value(serde_json::json!({
            "name": "randrw", "pack": "quick", "pack_sha256": "b".repeat(64),
            "pack_version": "1.0", "source_sha256": "c".repeat(64),
            "params": {}, "repeat": 1, "metrics": [], "jobs": [], "tables": [],
            "error": null
        }))
        .unwrap();
        edit(&mut s);
        let mut d: RunDocument = serde_json::from_value(serde_json::json!({
            "schema": "plumb.result.v1", "plumb_version": "0", "label": null,
            "started": "", "finished": "", "target": null, "scenarios": [],
            "host": {"hostname": "h", "os": "Linux", "kernel": "6", "arch": "x86_64",
                     "cpu_model": "c", "cpus": 1, "memory_bytes": 1}
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        d.scenarios.push(s);
        d
    }

    #[test]
    fn an_honest_result_gets_the_drivers_record_of_the_pack() {
        let mut d = doc(|_| {});
        sent().stamp("h", &mut d).unwrap();
        let s = &d.scenarios[0];
        assert_eq!(s.pack_sha256.as_deref(), Some("a".repeat(64).as_str()));
        assert_eq!(s.pack_origin.as_deref(), Some("builtin"));
        assert_eq!(s.pack_signer, None);
        // Claims left out are filled in.
        let mut d = doc(|s| {
            s.pack_sha256 = None;
            s.pack_version = None;
        });
        sent().stamp("h", &mut d).unwrap();
        assert_eq!(d.scenarios[0].pack_version.as_deref(), Some("1.0"));
    }

    #[test]
    fn every_other_claim_is_refused_naming_the_host_and_the_claim() {
        type Edit = fn(&mut ScenarioResult);
        let cases: [(&str, Edit); 5] = [
            ("pack", |s| s.pack = Some("other".into())),
            ("pack_sha256", |s| s.pack_sha256 = Some("d".repeat(64))),
            ("pack_version", |s| s.pack_version = Some("9.9".into())),
            ("pack_signer", |s| {
                s.pack_signer = Some("RWQ0000 verified".into())
            }),
            ("source_sha256", |s| s.source_sha256 = Some("e".repeat(64))),
        ];
        for (what, edit) in cases {
            let mut d = doc(edit);
            let e = sent().stamp("host-7", &mut d).unwrap_err();
            assert_eq!(e.what, what);
            let text = e.to_string();
            assert!(text.starts_with("host-7's result claims"), "{text}");
            assert!(text.contains("refused"), "{text}");
        }
    }
}
