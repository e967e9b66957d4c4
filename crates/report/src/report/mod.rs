//! Renderers of what the model holds: fio's text, terse and JSON layouts;
//! results as `run`, `show` and `compare` print them ([`results`], the one
//! renderer, built of the run table, the comparison, titled tables) and
//! their SVG charts; plus saving result files safely. Renderers read [`crate::model`]
//! only. A renderer builds what it shows once ([`export::Content`]); the
//! exporter of the output format ([`export`]: text, Markdown, CSV, JSON,
//! HTML) writes it.

pub mod charts;
pub mod comparison;
pub mod export;
pub mod fio_json;
pub mod fio_normal;
pub mod fio_num;
pub mod fio_terse;
pub mod made_tables;
pub mod many;
pub mod markdown;
pub mod page;
pub mod replay;
pub mod replay_result;
pub mod results;
pub mod run_table;
pub mod tables;

/// The fio release whose output layouts (normal, terse, JSON) `plumb fio`
/// reproduces and is tested against.
pub const FIO_LAYOUT_VERSION: &str = "3.33";

/// What `plumb fio --version` prints, and the version in its reports:
/// `fio-3.33-plumb-0.1.0`. Scripts that read `fio --version` take the
/// release after `fio-` and up to the next `-` (as they do for a fio built
/// from git, `fio-3.27-64-ga006`) or look for `fio-3`; the suffix says
/// plainly that plumb answered, and which plumb.
pub fn fio_version() -> String {
    format!(
        "fio-{FIO_LAYOUT_VERSION}-plumb-{}",
        env!("CARGO_PKG_VERSION")
    )
}
