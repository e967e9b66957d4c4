//! Renderers of run results: fio's text and JSON layouts.

pub mod fio_json;
pub mod fio_normal;
