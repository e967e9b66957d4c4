//! Renderers of what the model holds: fio's text, terse and JSON layouts,
//! the end-of-run table of `plumb run`, the comparison table and its SVG
//! charts; plus saving result files safely. Renderers read [`crate::model`]
//! only.

pub mod charts;
pub mod comparison;
pub mod fio_json;
pub mod fio_normal;
pub mod fio_terse;
pub mod journal;
pub mod made_tables;
pub mod run_table;
pub mod save;
