//! Renderers of run results: fio's text, terse and JSON layouts, and the
//! end-of-run table of `plumb run`.

pub mod charts;
pub mod fio_json;
pub mod fio_normal;
pub mod fio_terse;
pub mod journal;
pub mod run_table;
pub mod save;
pub mod terminal;
