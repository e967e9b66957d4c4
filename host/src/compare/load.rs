//! Reading result files: the schema is checked, errors name the file and position.

use crate::document::{RunDocument, SCHEMA};
use std::path::Path;

/// Loads a `plumb.result.v1` document.
pub fn load(path: &Path) -> Result<RunDocument, String> {
    let name = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{name}: {e}"))?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| format!("{name}:{}:{}: not valid JSON: {e}", e.line(), e.column()))?;
    match value.get("schema").and_then(|s| s.as_str()) {
        Some(SCHEMA) => {}
        Some(other) if other.starts_with("plumb.result.v") => {
            return Err(format!(
                "{name}: written by another plumb (schema {other}); this plumb reads {SCHEMA}: upgrade plumb to compare it"
            ))
        }
        Some(other) => return Err(format!("{name}: schema '{other}' is not a plumb result ({SCHEMA})")),
        None => return Err(format!("{name}: no \"schema\" field: not a plumb result file")),
    }
    serde_json::from_value(value).map_err(|e| format!("{name}: not a valid {SCHEMA} document: {e}"))
}
