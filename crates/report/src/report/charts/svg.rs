//! A small SVG writer for plumb's charts: shapes and text with every text
//! escaped (result files are input: a `</svg>` in a job name stays text),
//! a plot frame with linear or log axes whose ticks are labelled in scaled
//! units (`1k`, `10 µs`, `1 GiB/s`), and a legend drawn outside the data.

use crate::terminal::cleaned;
use crate::units::Scale;
use std::fmt::Write;

/// Colours of runs and series, told apart in print and by colour-blind readers.
pub const PALETTE: [&str; 8] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];
/// Better, worse and undecided bars of a change chart.
pub const BETTER: &str = "#2e8b57";
/// See [`BETTER`].
pub const WORSE: &str = "#c0392b";
/// See [`BETTER`].
pub const UNDECIDED: &str = "#9aa5b1";
/// Text and axes.
pub const INK: &str = "#222";
/// Grid lines.
pub const GRID: &str = "#e3e3e3";
/// Secondary text.
pub const MUTED: &str = "#666";

/// `s` as XML text or attribute: controls made visible (as on a
/// terminal), then `& < > " '` escaped.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in cleaned(s).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Not characters XML may hold.
            '\u{fffe}' | '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// About how wide `s` is in a sans-serif font of `size` px.
pub fn text_width(s: &str, size: f64) -> f64 {
    s.chars().count() as f64 * size * 0.56
}

/// `s` cut to about `width` px at `size`, with `…` where it was cut.
pub fn fit(s: &str, width: f64, size: f64) -> String {
    let max = (width / (size * 0.56)).floor().max(1.0) as usize;
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// How text is anchored at its point.
#[derive(Debug, Clone, Copy)]
pub enum Anchor {
    /// Its start.
    Start,
    /// Its middle.
    Middle,
    /// Its end.
    End,
}

/// An SVG document being drawn.
#[derive(Debug)]
pub struct Svg {
    width: f64,
    height: f64,
    body: String,
}

fn num(v: f64) -> String {
    if v.is_finite() {
        let s = format!("{v:.1}");
        s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
    } else {
        "0".into()
    }
}

impl Svg {
    /// A blank white image of `width` × `height` px.
    pub fn new(width: f64, height: f64) -> Svg {
        Svg {
            width,
            height,
            body: String::new(),
        }
    }

    /// Its height.
    pub fn height(&self) -> f64 {
        self.height
    }

    /// Sets its height (a chart grows with its legend).
    pub fn set_height(&mut self, height: f64) {
        self.height = height;
    }

    /// A rectangle; `extra` adds attributes (`opacity="0.5"`).
    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str, extra: &str) {
        let (x, w) = if w < 0.0 { (x + w, -w) } else { (x, w) };
        let _ = writeln!(
            self.body,
            r#"<rect x="{}" y="{}" width="{}" height="{}" fill="{fill}" {extra}/>"#,
            num(x),
            num(y),
            num(w),
            num(h.max(0.0))
        );
    }

    /// A straight line.
    pub fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, stroke: &str, width: f64) {
        let _ = writeln!(
            self.body,
            r#"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{stroke}" stroke-width="{}"/>"#,
            num(x1),
            num(y1),
            num(x2),
            num(y2),
            num(width)
        );
    }

    /// A line through `points`, dashed when `dash` is given (`4 3`).
    pub fn polyline(
        &mut self,
        points: &[(f64, f64)],
        stroke: &str,
        width: f64,
        dash: Option<&str>,
    ) {
        if points.is_empty() {
            return;
        }
        let pts: Vec<String> = points
            .iter()
            .map(|(x, y)| format!("{},{}", num(*x), num(*y)))
            .collect();
        let dash = dash
            .map(|d| format!(r#" stroke-dasharray="{d}""#))
            .unwrap_or_default();
        let _ = writeln!(
            self.body,
            r#"<polyline points="{}" fill="none" stroke="{stroke}" stroke-width="{}" stroke-linejoin="round"{dash}/>"#,
            pts.join(" "),
            num(width)
        );
    }

    /// A line of data through `points`, with the values it plots (each
    /// to four significant digits) in its `data-values` attribute: the
    /// figure says what it shows to a reader of the markup too.
    pub fn data_line(
        &mut self,
        points: &[(f64, f64)],
        values: &[f64],
        stroke: &str,
        dash: Option<&str>,
    ) {
        if points.is_empty() {
            return;
        }
        self.polyline(points, stroke, 2.0, dash);
        let vals: Vec<String> = values.iter().map(|v| format!("{v:.4e}")).collect();
        if let Some(end) = self.body.rfind("/>") {
            self.body
                .insert_str(end, &format!(r#" data-values="{}""#, vals.join(" ")));
        }
    }

    /// A filled dot.
    pub fn dot(&mut self, x: f64, y: f64, r: f64, fill: &str) {
        let _ = writeln!(
            self.body,
            r#"<circle cx="{}" cy="{}" r="{}" fill="{fill}"/>"#,
            num(x),
            num(y),
            num(r)
        );
    }

    /// Text at a point (escaped here).
    pub fn text(&mut self, x: f64, y: f64, size: f64, anchor: Anchor, fill: &str, s: &str) {
        self.text_styled((x, y), size, anchor, fill, "", s);
    }

    /// Bold text.
    pub fn bold(&mut self, x: f64, y: f64, size: f64, anchor: Anchor, s: &str) {
        self.text_styled((x, y), size, anchor, INK, r#" font-weight="bold""#, s);
    }

    /// Text with extra attributes (`transform`, `font-weight`).
    pub fn text_styled(
        &mut self,
        (x, y): (f64, f64),
        size: f64,
        anchor: Anchor,
        fill: &str,
        extra: &str,
        s: &str,
    ) {
        let anchor = match anchor {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        };
        let _ = writeln!(
            self.body,
            r#"<text x="{}" y="{}" font-size="{}" text-anchor="{anchor}" fill="{fill}"{extra}>{}</text>"#,
            num(x),
            num(y),
            num(size),
            esc(s)
        );
    }

    /// The finished document: a white background under everything, the
    /// title as the image's accessible name.
    pub fn finish(self, title: &str) -> String {
        format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"DejaVu Sans, Arial, Helvetica, sans-serif\" role=\"img\">\n<title>{t}</title>\n<rect x=\"0\" y=\"0\" width=\"{w}\" height=\"{h}\" fill=\"#ffffff\"/>\n{body}</svg>\n",
            w = num(self.width),
            h = num(self.height),
            t = esc(title),
            body = self.body
        )
    }
}

/// Round steps for linear ticks: 1, 2, 2.5, 5 times a power of ten.
fn nice_step(span: f64, count: usize) -> f64 {
    let raw = span / count.max(1) as f64;
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if m * mag >= raw {
            return m * mag;
        }
    }
    10.0 * mag
}

/// A value axis: where values go in pixels, and its labelled ticks.
#[derive(Debug, Clone)]
pub struct Axis {
    lo: f64,
    hi: f64,
    log: bool,
    /// Ticks: value and label (no two labels alike).
    pub ticks: Vec<(f64, String)>,
    /// Grid lines without labels (a log axis's 2 and 5 between decades).
    pub minor: Vec<f64>,
}

/// `tick` labelled in `scale`: a whole number or as few decimals as it
/// needs, the count's step and the unit (`250 MiB/s`, `1.5k`, `10 µs`).
fn label(scale: &Scale, tick: f64, unit: bool) -> String {
    let v = tick / scale.divisor();
    if v != 0.0 && !(1e-3..1e5).contains(&v.abs()) {
        // Far out: three digits and an exponent, not 300 digits.
        return format!("{}{}", crate::units::significant(v), scale.prefix());
    }
    let mut n = format!("{v:.3}");
    if n.contains('.') {
        n = n.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    if n == "-0" || n == "0" {
        return "0".into();
    }
    let mut s = format!("{n}{}", scale.prefix());
    if unit && !scale.unit().is_empty() {
        s = format!("{s} {}", scale.unit());
    }
    s
}

impl Axis {
    /// A linear axis from 0 (or below, for negative data) over `lo..hi` in
    /// `unit`, with about `count` round ticks in the unit a reader gets
    /// (MiB/s steps of bytes/s, k steps of IOPS); `unit_on_ticks` writes the
    /// unit on each label.
    pub fn linear(lo: f64, hi: f64, unit: &str, count: usize, unit_on_ticks: bool) -> Axis {
        let lo = lo.min(0.0);
        let hi = if hi > lo { hi } else { lo + 1.0 };
        let scale = Scale::of(hi.abs().max(lo.abs()), unit);
        let d = scale.divisor();
        let step = nice_step((hi - lo) / d, count) * d;
        let first = (lo / step).floor() * step;
        let mut ticks: Vec<(f64, String)> = Vec::new();
        let mut t = first;
        let mut guard = 0;
        while t <= hi + step * 0.999 && guard < 100 {
            let l = label(&scale, t, unit_on_ticks);
            if ticks.last().is_none_or(|(_, last)| *last != l) {
                ticks.push((t, l));
            }
            t = first + step * (ticks.len() as f64);
            guard += 1;
        }
        let top = ticks.last().map_or(hi, |t| t.0.max(hi));
        Axis {
            lo: first,
            hi: top,
            log: false,
            ticks,
            minor: Vec::new(),
        }
    }

    /// A log axis over `lo..hi` (both above 0) from the decade under the
    /// smallest value to the one over the largest: a label at each decade
    /// (and at 2 and 5 when it spans two decades or fewer), a light line at
    /// 2 and 5 otherwise.
    pub fn log(lo: f64, hi: f64, unit: &str) -> Axis {
        let lo = if lo > 0.0 && lo.is_finite() { lo } else { 1.0 };
        let hi = if hi >= lo && hi.is_finite() { hi } else { lo };
        let a = lo.log10().floor() as i32;
        let mut b = hi.log10().ceil() as i32;
        if b <= a {
            b = a + 1;
        }
        let few = b - a <= 2;
        let mut ticks: Vec<(f64, String)> = Vec::new();
        let mut minor = Vec::new();
        for e in a..=b {
            let base = 10f64.powi(e);
            for m in [1.0, 2.0, 5.0] {
                let v = base * m;
                if v > 10f64.powi(b) {
                    continue;
                }
                if m == 1.0 || few {
                    let l = label(&Scale::of(v, unit), v, true);
                    if !ticks.iter().any(|(_, x)| *x == l) {
                        ticks.push((v, l));
                    }
                } else {
                    minor.push(v);
                }
            }
        }
        Axis {
            lo: 10f64.powi(a),
            hi: 10f64.powi(b),
            log: true,
            ticks,
            minor,
        }
    }

    /// A symmetric axis around 0 with the ticks given.
    pub fn fixed(lo: f64, hi: f64, ticks: Vec<(f64, String)>) -> Axis {
        Axis {
            lo,
            hi,
            log: false,
            ticks,
            minor: Vec::new(),
        }
    }

    /// Where `v` falls between 0 (the low end) and 1 (the high end).
    pub fn frac(&self, v: f64) -> f64 {
        let f = if self.log {
            let v = v.max(self.lo * 1e-3);
            (v.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        if f.is_finite() {
            f
        } else {
            0.0
        }
    }

    /// Its range.
    pub fn range(&self) -> (f64, f64) {
        (self.lo, self.hi)
    }
}

/// A plot's area in pixels, its axes, and how it draws on an [`Svg`].
#[derive(Debug, Clone)]
pub struct Frame {
    /// Left edge of the data area.
    pub x0: f64,
    /// Top edge.
    pub y0: f64,
    /// Right edge.
    pub x1: f64,
    /// Bottom edge.
    pub y1: f64,
    /// The horizontal axis.
    pub x: Axis,
    /// The vertical axis.
    pub y: Axis,
}

impl Frame {
    /// The pixel column of `v` on the horizontal axis.
    pub fn px(&self, v: f64) -> f64 {
        self.x0 + self.x.frac(v) * (self.x1 - self.x0)
    }

    /// The pixel row of `v` on the vertical axis.
    pub fn py(&self, v: f64) -> f64 {
        self.y1 - self.y.frac(v) * (self.y1 - self.y0)
    }

    /// Draws `points` (axis values) as a data line in `color` and returns
    /// their pixel positions, for the caller's dots.
    pub fn plot(&self, svg: &mut Svg, points: &[(f64, f64)], color: &str) -> Vec<(f64, f64)> {
        let px: Vec<(f64, f64)> = points
            .iter()
            .map(|(x, y)| (self.px(*x), self.py(*y)))
            .collect();
        let values: Vec<f64> = points.iter().map(|p| p.1).collect();
        svg.data_line(&px, &values, color, None);
        px
    }

    /// Writes `message` in the middle of an empty data area.
    pub fn say_empty(&self, svg: &mut Svg, message: &str) {
        svg.text(
            (self.x0 + self.x1) / 2.0,
            (self.y0 + self.y1) / 2.0,
            13.0,
            Anchor::Middle,
            MUTED,
            message,
        );
    }

    /// Grid, ticks and their labels, the frame, and the axes' titles.
    pub fn draw_axes(&self, svg: &mut Svg, x_title: &str, y_title: &str) {
        for m in &self.y.minor {
            let y = self.py(*m);
            svg.line(self.x0, y, self.x1, y, "#f1f1f1", 1.0);
        }
        for (v, l) in &self.y.ticks {
            let y = self.py(*v);
            svg.line(self.x0, y, self.x1, y, GRID, 1.0);
            svg.text(self.x0 - 6.0, y + 4.0, 11.0, Anchor::End, INK, l);
        }
        for (v, l) in &self.x.ticks {
            let x = self.px(*v);
            svg.line(x, self.y1, x, self.y1 + 4.0, INK, 1.0);
            svg.text(x, self.y1 + 17.0, 11.0, Anchor::Middle, INK, l);
        }
        svg.line(self.x0, self.y1, self.x1, self.y1, INK, 1.0);
        svg.line(self.x0, self.y0, self.x0, self.y1, INK, 1.0);
        if !x_title.is_empty() {
            svg.text(
                (self.x0 + self.x1) / 2.0,
                self.y1 + 34.0,
                12.0,
                Anchor::Middle,
                MUTED,
                x_title,
            );
        }
        if !y_title.is_empty() {
            let widest = self
                .y
                .ticks
                .iter()
                .map(|(_, l)| text_width(l, 11.0))
                .fold(0.0, f64::max);
            let cx = (self.x0 - 6.0 - widest - 12.0).max(14.0);
            let cy = (self.y0 + self.y1) / 2.0;
            svg.text_styled(
                (cx, cy),
                12.0,
                Anchor::Middle,
                MUTED,
                &format!(r#" transform="rotate(-90 {} {})""#, num(cx), num(cy)),
                y_title,
            );
        }
    }
}

/// A legend entry: its colour, whether its line is dashed, and its text.
pub type Entry = (String, bool, String);

/// Draws `entries` in rows from `top` between `left` and `right` (under
/// the plot, outside the data); returns the y under the last row.
pub fn legend(svg: &mut Svg, entries: &[Entry], left: f64, right: f64, top: f64) -> f64 {
    let (mut x, mut y) = (left, top + 12.0);
    for (color, dashed, text) in entries {
        let t = fit(text, right - left - 30.0, 11.0);
        let w = 26.0 + text_width(&t, 11.0) + 18.0;
        if x > left && x + w > right {
            x = left;
            y += 18.0;
        }
        svg.polyline(
            &[(x, y - 4.0), (x + 20.0, y - 4.0)],
            color,
            2.5,
            dashed.then_some("5 3"),
        );
        svg.text(x + 26.0, y, 11.0, Anchor::Start, INK, &t);
        x += w;
    }
    y + 8.0
}

/// `s` broken at spaces into lines of about `width` px at `size`.
pub fn wrap(s: &str, width: f64, size: f64) -> Vec<String> {
    let max = (width / (size * 0.56)).floor().max(8.0) as usize;
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in s.split(' ') {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > max {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// The title (bold) and, under it, what the chart shows (muted, wrapped;
/// at most three lines of each paragraph); returns the y under them.
pub fn heading(svg: &mut Svg, width: f64, title: &str, subtitle: &[String]) -> f64 {
    svg.bold(
        16.0,
        24.0,
        15.0,
        Anchor::Start,
        &fit(title, width - 32.0, 15.0),
    );
    let mut y = 24.0;
    for s in subtitle {
        let lines = wrap(s, width - 32.0, 11.5);
        let shown = lines.len().min(3);
        for (i, l) in lines.iter().take(shown).enumerate() {
            y += 15.0;
            let l = if i + 1 == shown && lines.len() > shown {
                format!("{l} …")
            } else {
                l.clone()
            };
            svg.text(
                16.0,
                y,
                11.5,
                Anchor::Start,
                MUTED,
                &fit(&l, width - 32.0, 11.5),
            );
        }
    }
    y + 14.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_in_text_stays_text() {
        let mut s = Svg::new(100.0, 50.0);
        s.text(
            0.0,
            0.0,
            10.0,
            Anchor::Start,
            INK,
            "</svg><script>x</script>&\x1b",
        );
        let out = s.finish("t<");
        assert!(
            !out.contains("<script>") && !out.contains("</svg><"),
            "{out}"
        );
        assert!(out.contains("&lt;/svg&gt;&lt;script&gt;x&lt;/script&gt;&amp;\\x1b"));
    }

    #[test]
    fn linear_ticks_are_round_scaled_and_distinct() {
        let a = Axis::linear(0.0, 72_000.0, "IOPS", 5, false);
        let labels: Vec<&str> = a.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["0", "20k", "40k", "60k", "80k"]);
        let b = Axis::linear(0.0, 1.6 * 1073741824.0, "bytes/s", 4, true);
        let labels: Vec<&str> = b.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(
            labels,
            ["0", "0.5 GiB/s", "1 GiB/s", "1.5 GiB/s", "2 GiB/s"]
        );
        let c = Axis::linear(0.0, 3.0, "IOPS", 6, false);
        let mut l: Vec<&String> = c.ticks.iter().map(|t| &t.1).collect();
        l.dedup();
        assert_eq!(l.len(), c.ticks.len());
    }

    #[test]
    fn log_ticks_are_decades_in_time_units_around_the_data() {
        let a = Axis::log(45_000.0, 3_200_000.0, "ns");
        let labels: Vec<&str> = a.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["10 µs", "100 µs", "1 ms", "10 ms"]);
        assert!(a.range().0 <= 45_000.0 && a.range().1 >= 3_200_000.0);
        let b = Axis::log(60_000.0, 90_000.0, "ns");
        let labels: Vec<&str> = b.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["10 µs", "20 µs", "50 µs", "100 µs"]);
    }
}
