//! Renderers of run results: fio's text, terse and JSON layouts.

pub mod fio_json;
pub mod fio_normal;
pub mod fio_terse;
