//! Renderers of what the model holds: fio's text, terse and JSON layouts;
//! results as `run`, `show` and `compare` print them ([`results`], the one
//! renderer, built of the run table, the comparison, titled tables) and
//! their SVG charts; plus saving result files safely. Renderers read [`crate::model`]
//! only.

pub mod charts;
pub mod comparison;
pub mod fio_json;
pub mod fio_normal;
pub mod fio_terse;
pub mod journal;
pub mod made_tables;
pub mod replay;
pub mod results;
pub mod run_table;
pub mod save;
pub mod tables;
