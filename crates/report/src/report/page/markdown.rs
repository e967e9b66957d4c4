//! The page in Markdown: the same sections as the HTML page, the charts
//! linked as SVG files beside it. Every text from a result file is
//! Markdown text ([`crate::report::markdown::text`]), headings included:
//! nothing a file says becomes an image, a link, a heading or HTML.

use super::{left_out_line, measured_grid, packs_grid, runs_grid, title, Page, MARKS};
use crate::report::many::ManyOptions;
use crate::report::markdown;
use crate::report::run_table::Format;
use crate::report::tables::{self, Cells};
use crate::report::{comparison, results};

/// A Markdown table of `header` and `rows`, every text Markdown text.
fn md_table(header: &[String], rows: &[Vec<String>]) -> String {
    let mut t = tables::grid(true);
    t.set_header(header.iter().map(|h| markdown::text(h)));
    for r in rows {
        t.add_row(r.iter().map(|c| markdown::text(c)));
    }
    format!("{t}\n")
}

/// The page in Markdown; its charts are linked as `dir/FILE.svg` (`dir`
/// and the files' names are plumb's, made of safe characters).
pub fn markdown(p: &Page, dir: &str) -> String {
    let mut cells = Cells::default();
    let (h, r) = runs_grid(p);
    let mut out = String::from("## Runs\n\n");
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
        results::compare_within(
            p.c,
            p.docs,
            p.layouts.first(),
            Format::Markdown,
            &ManyOptions::default(),
            &mut cells,
        )
        .unwrap_or_default()
    } else {
        let r = results::run_within(&p.docs[0], p.layouts, Format::Markdown, &mut cells);
        let (h, rows) = comparison::machine_grid(p.c, p.docs);
        format!("{}\n{r}", md_table(&h, &rows))
    };
    out.push_str(&results);
    out.push_str("\n## Charts\n\n");
    for c in p.charts {
        let title = markdown::text(&c.title);
        out.push_str(&format!("### {title}\n\n![{title}]({dir}/{})\n\n", c.file));
    }
    let mut head = format!("# {}\n\n", markdown::text(&title(p)));
    if let Some(line) = left_out_line(cells.left_out()) {
        head.push_str(&format!("{}\n\n", markdown::text(&line)));
    }
    head + &out
}
