//! The page in Markdown: the same sections as the HTML page, the charts
//! linked as SVG files beside it.

use super::{measured_grid, packs_grid, runs_grid, title, Page, MARKS};
use crate::report::many::ManyOptions;
use crate::report::run_table::Format;
use crate::report::tables;
use crate::report::{comparison, results};

/// `s` safe in Markdown that a blog renders: `&`, `<` and `>` as entities
/// (a result file's `<script>` stays text).
fn md_text(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A Markdown table of `header` and `rows` (cells' `|` escaped).
fn md_table(header: &[String], rows: &[Vec<String>]) -> String {
    let mut t = tables::grid(true);
    t.set_header(header.iter().map(|h| tables::cell_text(h, true)));
    for r in rows {
        t.add_row(r.iter().map(|c| tables::cell_text(c, true)));
    }
    format!("{t}\n")
}

/// The page in Markdown; its charts are linked as `dir/FILE.svg`.
pub fn markdown(p: &Page, dir: &str) -> String {
    let mut out = format!("# {}\n\n", title(p));
    let (h, r) = runs_grid(p);
    out.push_str("## Runs\n\n");
    out.push_str(&md_table(&h, &r));
    out.push_str("\n## What was measured\n\n");
    let (h, r) = packs_grid(p);
    out.push_str(&md_table(&h, &r));
    out.push('\n');
    let (h, r) = measured_grid(p);
    out.push_str(&md_table(&h, &r));
    out.push('\n');
    for (m, what) in MARKS {
        out.push_str(&format!("- **{m}**: {what}\n"));
    }
    out.push_str("\n## Results\n\n");
    let results = if p.docs.len() > 1 {
        // A report's page takes the default many-run layout (ManyOptions
        // chooses nothing that can be refused).
        results::compare(
            p.c,
            p.docs,
            p.layouts.first(),
            Format::Markdown,
            &ManyOptions::default(),
        )
        .unwrap_or_default()
    } else {
        let mut r = results::run(&p.docs[0], p.layouts, Format::Markdown);
        let (h, rows) = comparison::machine_grid(p.c, p.docs);
        r = format!("{}\n{r}", md_table(&h, &rows));
        r
    };
    out.push_str(&results);
    out.push_str("\n## Charts\n\n");
    for c in p.charts {
        let alt = tables::cell_text(&c.title, true).replace(['[', ']'], "");
        out.push_str(&format!(
            "### {}\n\n![{alt}]({dir}/{})\n\n",
            c.title, c.file
        ));
    }
    md_text(&out)
}
