//! What a pack asks for (its capabilities) against what the run grants:
//! bytes (`--max-bytes`, else the free space), files and directories
//! (`--max-inodes`), network endpoints (`--allow-net`) and root.

use crate::scenario::pack::Pack;
use crate::session::{Event, Observer};
use std::collections::BTreeMap;
use std::path::Path;

/// A pack that asks for more than the run grants.
#[derive(Debug, thiserror::Error)]
pub enum GrantError {
    /// The pack's byte budget cannot be reckoned with the run's parameters.
    #[error("{pack}: {reason}")]
    Budget {
        /// The pack's name.
        pack: String,
        /// Why (naming `capabilities.max_bytes`).
        reason: crate::api::CapabilityError,
    },
    /// The pack may write more than is granted; the refusal names its
    /// declaration, the parameters driving it and the remedies.
    #[error("{0}")]
    Bytes(String),
    /// The pack may make more files and directories than are granted.
    #[error("pack {pack} may make {need} files and directories but only {granted} are granted (--max-inodes, or half the free inodes)")]
    Inodes {
        /// The pack's name.
        pack: String,
        /// What it declares.
        need: u64,
        /// What the run grants.
        granted: u64,
    },
    /// The pack needs an endpoint `--allow-net` does not grant.
    #[error(
        "pack {pack} needs network access to {endpoint}: grant it with --allow-net {endpoint}"
    )]
    Net {
        /// The pack's name.
        pack: String,
        /// The endpoint.
        endpoint: String,
    },
    /// The pack needs root.
    #[error("pack {0} needs root (it drops the page cache)")]
    Root(String),
}

/// What a run grants its packs.
#[derive(Debug, Clone)]
pub struct Grants<'a> {
    /// The bytes the run may write: `--max-bytes`, or the free space.
    pub bytes: u64,
    /// True when `bytes` came from `--max-bytes`.
    pub bytes_by_flag: bool,
    /// The free space under the target.
    pub free: u64,
    /// The target directory, for messages.
    pub target: &'a Path,
    /// The files and directories the run may have at once.
    pub inodes: u64,
    /// The endpoints `--allow-net` grants.
    pub net: &'a [String],
}

/// Refuses a pack that asks for more than `grants`; its byte budget
/// reckoned with the run's parameters (`cli` over the pack's defaults).
/// What the pack asks for is told to `observer` first.
pub fn grant(
    p: &Pack,
    cli: &BTreeMap<String, String>,
    grants: &Grants,
    observer: &mut dyn Observer,
) -> Result<(), GrantError> {
    let caps = p.capabilities.describe();
    if !caps.is_empty() {
        observer.event(Event::PackNeeds {
            pack: &p.name,
            needs: &caps,
        });
    }
    let need = p
        .capabilities
        .max_bytes(&p.params_for(cli))
        .map_err(|reason| GrantError::Budget {
            pack: p.name.clone(),
            reason,
        })?;
    if let Some(need) = need {
        let granted = grants.bytes.min(grants.free);
        if need.bytes > granted {
            let target = format!("the target {} has", grants.target.display());
            let (grant, more) = if grants.bytes_by_flag && grants.bytes <= grants.free {
                ("--max-bytes grants", "a larger --max-bytes")
            } else {
                (target.as_str(), "more free space under --target")
            };
            return Err(GrantError::Bytes(
                need.refusal(&p.name, grant, granted, more),
            ));
        }
    }
    if let Some(need) = p.capabilities.max_inodes.filter(|n| *n > grants.inodes) {
        return Err(GrantError::Inodes {
            pack: p.name.clone(),
            need,
            granted: grants.inodes,
        });
    }
    if let Some(missing) = p.capabilities.net.iter().find(|n| !grants.net.contains(n)) {
        return Err(GrantError::Net {
            pack: p.name.clone(),
            endpoint: missing.clone(),
        });
    }
    // SAFETY: geteuid has no preconditions.
    if p.capabilities.root && unsafe { libc::geteuid() } != 0 {
        return Err(GrantError::Root(p.name.clone()));
    }
    Ok(())
}
