//! Hand-made SVG charts (no script, no network): lines over a numeric or log-percentile x
//! axis, points over categories, grouped bars; error bars where a point has a spread. Each is
//! drawn at its real size for a 1280 px window (one chart per row, text of 11 px and more) and
//! shrinks with a narrower one. Labels are laid out so that none overprints another: category
//! labels wrap within their slot, or are thinned out; legends wrap to new rows.

use std::fmt::Write;

/// The width every chart is drawn at, px: one per row within a 1280 px window.
pub const W: f64 = 1200.0;
/// The height every chart is drawn at, px; rows of a wrapped legend take their room from the plot.
const H: f64 = 400.0;
/// The room left of the plot for the y axis's tick labels and title, px; and right of it,
/// for the last x tick label.
const LEFT: f64 = 84.0;
const RIGHT: f64 = 24.0;
/// Ticks, category labels and legends, px; the chart's title a size up.
const FONT: f64 = 12.0;
const TITLE_FONT: f64 = 16.0;
/// The smallest text any chart may have, px.
pub const MIN_FONT: f64 = 11.0;
/// A character's width in em: generous for the sans-serif fonts browsers pick, so that the
/// estimate is never narrower than the text drawn.
const CHAR_EM: f64 = 0.66;
/// Lines a category label may wrap to before it is cut with an ellipsis.
const LABEL_LINES: usize = 3;
/// Bar groups per chart at the most: more are split over several charts.
pub const MAX_GROUPS: usize = 12;
const COLORS: [&str; 6] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"];
/// Each series its own dash and width, so that a series drawn over another (first byte over
/// total) leaves it visible.
const DASHES: [&str; 4] = ["", "8 5", "2 4", "12 4 3 4"];
const WIDTHS: [f64; 4] = [4.0, 2.0, 2.0, 2.0];

/// `s` made safe as XML/HTML text or attribute value (&, <, > and " escaped).
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A point (x, y) with its spread (low, high), when it has one.
pub type Spread = (f64, f64, Option<(f64, f64)>);

/// One named series of (x, y), each point with an optional spread (low, high) drawn as an
/// error bar.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub spread: Vec<Option<(f64, f64)>>,
}

impl Series {
    /// A named series of points, without spreads.
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series { name: name.into(), points, spread: Vec::new() }
    }

    /// Points with their spreads (e.g. the min and max of a point's repeats).
    pub fn with_spread(name: impl Into<String>, points: Vec<Spread>) -> Series {
        let spread = points.iter().map(|p| p.2).collect();
        Series { name: name.into(), points: points.into_iter().map(|(x, y, _)| (x, y)).collect(), spread }
    }

    fn spread_at(&self, i: usize) -> Option<(f64, f64)> {
        self.spread.get(i).copied().flatten()
    }
}

/// How x is drawn.
pub enum XAxis {
    /// Plain numbers.
    Linear,
    /// Percentiles, spread as HdrHistogram plots them: 1/(1 - p) on a log scale.
    Percentile,
    /// Unordered category labels at x = 0, 1, 2... (on/off): points, never joined by lines.
    Categories(Vec<String>),
    /// Ordered labels at x = 0, 1, 2... (worker counts): points joined by lines.
    Ordered(Vec<String>),
}

/// How y is drawn.
#[derive(Clone, Copy, PartialEq)]
pub enum YAxis {
    /// From 0 to a round maximum.
    Linear,
    /// Decades: a latency tail of seconds beside a body of milliseconds, both readable.
    Log,
}

/// A line (or point) chart.
pub struct Chart<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub x: XAxis,
    pub y: YAxis,
    pub series: &'a [Series],
}

/// The estimated width of `text` at `font` px.
pub fn text_width(text: &str, font: f64) -> f64 {
    text.chars().count() as f64 * font * CHAR_EM
}

/// A <text> element; `anchor` is start, middle or end.
fn text(out: &mut String, x: f64, y: f64, font: f64, anchor: &str, s: &str) {
    let _ = write!(
        out,
        "<text x=\"{x:.1}\" y=\"{y:.1}\" font-size=\"{font}\" text-anchor=\"{anchor}\">{}</text>",
        escape(s)
    );
}

/// `s` cut to `chars` characters, with an ellipsis when cut.
fn cut(s: &str, chars: usize) -> String {
    if s.chars().count() <= chars {
        return s.to_string();
    }
    let mut c: String = s.chars().take(chars.saturating_sub(1)).collect();
    c.push('…');
    c
}

/// `label` in lines of at most `width` characters, broken after spaces, commas and '=' where
/// it can be; at most `LABEL_LINES`, the last cut with an ellipsis.
fn wrap(label: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines: Vec<String> = Vec::new();
    let mut rest: Vec<char> = label.chars().collect();
    while !rest.is_empty() {
        if lines.len() + 1 == LABEL_LINES || rest.len() <= width {
            lines.push(cut(&rest.iter().collect::<String>(), width));
            break;
        }
        let head = &rest[..=width.min(rest.len() - 1)];
        let at = head.iter().rposition(|c| [' ', ',', '='].contains(c)).filter(|&i| i > 0).map_or(width, |i| i + 1);
        let at = at.min(width);
        lines.push(rest[..at].iter().collect::<String>().trim_end().to_string());
        rest = rest[at..].iter().copied().skip_while(|c| *c == ' ').collect();
    }
    lines
}

/// Category labels centred on `slots` (x of each), `slot` px apart, from `y` down: each wrapped
/// within its slot; when even a few characters do not fit, only every k-th is shown. Returns
/// the lines used.
fn x_labels(out: &mut String, slots: &[(f64, String)], slot: f64, y: f64) -> usize {
    const LINE: f64 = FONT * 1.25;
    let chars = ((slot * 0.92) / (FONT * CHAR_EM)).floor() as usize;
    // Thinned out to slots wide enough for 4 characters (and labels this short in one line).
    let (every, chars) = if chars >= 4 {
        (1, chars)
    } else {
        let k = (4.0 * FONT * CHAR_EM / 0.92 / slot.max(1.0)).ceil() as usize;
        (k.max(1), ((slot * k as f64 * 0.92) / (FONT * CHAR_EM)).floor() as usize)
    };
    let mut used = 0;
    for (i, (x, label)) in slots.iter().enumerate() {
        if i % every != 0 {
            continue;
        }
        let lines = if every == 1 { wrap(label, chars) } else { vec![cut(label, chars)] };
        for (n, line) in lines.iter().enumerate() {
            text(out, *x, y + FONT + LINE * n as f64, FONT, "middle", line);
        }
        used = used.max(lines.len());
    }
    used
}

/// The legend's entries laid out left to right from `top`, wrapping to new rows: (x, y) of
/// each, and the y below the last row.
fn legend_layout(names: &[&str], top: f64) -> (Vec<(f64, f64)>, f64) {
    const ROW: f64 = FONT * 1.6;
    let (mut x, mut y) = (LEFT, top);
    let mut at = Vec::new();
    for name in names {
        let w = 28.0 + text_width(name, FONT) + 24.0;
        if x > LEFT && x + w > W - RIGHT {
            x = LEFT;
            y += ROW;
        }
        at.push((x, y));
        x += w;
    }
    (at, if names.is_empty() { top } else { y + ROW })
}

/// Each series' key: a short stroke in its colour and dash (a swatch for bars), then its name.
fn legend(out: &mut String, names: &[&str], at: &[(f64, f64)], swatch: bool) {
    for (i, (name, (x, y))) in names.iter().zip(at).enumerate() {
        let color = COLORS[i % COLORS.len()];
        if swatch {
            let _ =
                write!(out, "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"20\" height=\"10\" fill=\"{color}\"/>", y - 9.0);
        } else {
            let _ = write!(
                out,
                "<line x1=\"{x:.1}\" y1=\"{y1:.1}\" x2=\"{:.1}\" y2=\"{y1:.1}\" stroke=\"{color}\" stroke-width=\"{}\" stroke-dasharray=\"{}\"/>",
                x + 22.0,
                WIDTHS[i % WIDTHS.len()],
                DASHES[i % DASHES.len()],
                y1 = y - 4.0
            );
        }
        text(out, x + 28.0, *y, FONT, "start", name);
    }
}

fn frame(out: &mut String, title: &str, class: &str) {
    let _ = write!(
        out,
        "<svg class=\"chart {class}\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" \
         preserveAspectRatio=\"xMinYMin meet\" role=\"img\" aria-label=\"{t}\" \
         xmlns=\"http://www.w3.org/2000/svg\"><title>{t}</title>\
         <text x=\"{}\" y=\"22\" font-size=\"{TITLE_FONT}\" font-weight=\"bold\" text-anchor=\"middle\">{t}</text>",
        W / 2.0,
        t = escape(&cut(title, ((W - 20.0) / (TITLE_FONT * 0.7)) as usize))
    );
}

fn nice_max(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        return 1.0;
    }
    let mag = 10f64.powf(v.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if v <= m * mag {
            return m * mag;
        }
    }
    10.0 * mag
}

fn fmt_tick(v: f64) -> String {
    if v >= 10.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}").trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// The y axis: the value to pixel map over [top, bottom], and its ticks.
struct Scale {
    log: bool,
    lo: f64,
    hi: f64,
    top: f64,
    bottom: f64,
}

impl Scale {
    fn new(y: YAxis, values: impl Iterator<Item = f64> + Clone, top: f64, bottom: f64) -> Scale {
        let max = values.clone().filter(|v| v.is_finite()).fold(0.0, f64::max);
        match y {
            YAxis::Linear => Scale { log: false, lo: 0.0, hi: nice_max(max), top, bottom },
            YAxis::Log => {
                let min = values.filter(|v| v.is_finite() && *v > 0.0).fold(f64::INFINITY, f64::min);
                let (min, max) = if min.is_finite() { (min, max.max(min)) } else { (1.0, 10.0) };
                let lo = 10f64.powf(min.log10().floor());
                let hi = 10f64.powf(max.log10().ceil()).max(lo * 10.0);
                Scale { log: true, lo, hi, top, bottom }
            }
        }
    }

    fn y(&self, v: f64) -> f64 {
        let share = if self.log {
            (v.max(self.lo).log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            v / self.hi
        };
        self.bottom - share.clamp(0.0, 1.0) * (self.bottom - self.top)
    }

    fn ticks(&self) -> Vec<f64> {
        if !self.log {
            return (0..=4).map(|i| self.hi * i as f64 / 4.0).collect();
        }
        let decades = (self.hi / self.lo).log10().round() as i32;
        let mut t = Vec::new();
        for d in 0..=decades {
            let base = self.lo * 10f64.powi(d);
            t.push(base);
            // Few decades: 2 and 5 of each too, where there is room.
            if decades <= 3 && d < decades {
                t.extend([2.0 * base, 5.0 * base]);
            }
        }
        t
    }

    /// Grid lines and tick labels, left of the plot.
    fn draw(&self, out: &mut String) {
        let mut last = f64::INFINITY;
        for v in self.ticks() {
            let y = self.y(v);
            let _ =
                write!(out, "<line x1=\"{LEFT}\" y1=\"{y:.1}\" x2=\"{}\" y2=\"{y:.1}\" stroke=\"#ddd\"/>", W - RIGHT);
            // A label only where it clears the one below it.
            if last - y >= FONT * 1.2 {
                text(out, LEFT - 10.0, y + FONT * 0.35, FONT, "end", &fmt_tick(v));
                last = y;
            }
        }
    }
}

/// The axis titles: x centred under the plot at `x_y`, y rotated along the left edge.
fn axis_titles(out: &mut String, x_label: &str, y_label: &str, x_y: f64, top: f64, bottom: f64) {
    let m = (top + bottom) / 2.0;
    if !x_label.is_empty() {
        text(out, (LEFT + W - RIGHT) / 2.0, x_y, FONT + 1.0, "middle", x_label);
    }
    let _ = write!(
        out,
        "<text x=\"18\" y=\"{m:.1}\" font-size=\"{}\" text-anchor=\"middle\" transform=\"rotate(-90 18 {m:.1})\">{}</text>",
        FONT + 1.0,
        escape(&cut(y_label, ((bottom - top) / ((FONT + 1.0) * CHAR_EM)) as usize))
    );
    let _ = write!(
        out,
        "<line x1=\"{LEFT}\" y1=\"{bottom:.1}\" x2=\"{}\" y2=\"{bottom:.1}\" stroke=\"#333\"/>\
         <line x1=\"{LEFT}\" y1=\"{top:.1}\" x2=\"{LEFT}\" y2=\"{bottom:.1}\" stroke=\"#333\"/>",
        W - RIGHT
    );
}

/// An error bar from `lo` to `hi` (px) at `x`, with caps.
fn error_bar(out: &mut String, x: f64, lo: f64, hi: f64, color: &str) {
    let _ = write!(
        out,
        "<path class=\"error-bar\" d=\"M{:.1},{lo:.1}H{:.1}M{x:.1},{lo:.1}V{hi:.1}M{:.1},{hi:.1}H{:.1}\" \
         stroke=\"{color}\" stroke-width=\"1.5\" fill=\"none\"/>",
        x - 5.0,
        x + 5.0,
        x - 5.0,
        x + 5.0
    );
}

/// A line chart over a linear y axis from 0 (see `chart`).
pub fn lines(title: &str, x_label: &str, y_label: &str, x: XAxis, series: &[Series]) -> String {
    chart(&Chart { title, x_label, y_label, x, y: YAxis::Linear, series })
}

/// A line chart; over categories, points without lines, side by side when several series
/// share a category.
pub fn chart(c: &Chart) -> String {
    let mut out = String::new();
    frame(&mut out, c.title, "lines");
    let names: Vec<&str> = c.series.iter().map(|s| s.name.as_str()).collect();
    let (at, top) = legend_layout(&names, 48.0);
    legend(&mut out, &names, &at, false);
    let top = top + 6.0;
    let tx = |v: f64| match c.x {
        XAxis::Percentile => (1.0 / (1.0 - v.min(99.9999) / 100.0)).log10(),
        _ => v,
    };
    let xs: Vec<f64> = c.series.iter().flat_map(|s| s.points.iter().map(|p| tx(p.0))).collect();
    let (x0, x1) = match &c.x {
        XAxis::Categories(l) | XAxis::Ordered(l) => (-0.5, l.len() as f64 - 0.5),
        _ => (
            xs.iter().cloned().fold(f64::INFINITY, f64::min).min(0.0),
            xs.iter().cloned().fold(0.0, f64::max).max(1e-9),
        ),
    };
    let px = |v: f64| LEFT + (tx(v) - x0) / (x1 - x0).max(1e-12) * (W - LEFT - RIGHT);
    let ticks: Vec<(f64, String)> = match &c.x {
        XAxis::Categories(l) | XAxis::Ordered(l) => l.iter().enumerate().map(|(i, l)| (i as f64, l.clone())).collect(),
        XAxis::Percentile => [0.0, 90.0, 99.0, 99.9, 99.99, 99.999]
            .iter()
            .filter(|p| tx(**p) <= x1 + 1e-9)
            .map(|p| (*p, format!("{p}%")))
            .collect(),
        XAxis::Linear => (0..=4).map(|i| x0 + (x1 - x0) * i as f64 / 4.0).map(|v| (v, fmt_tick(v))).collect(),
    };
    // The bottom margin holds the tick labels' lines (wrapped categories) and the axis title.
    let slots: Vec<(f64, String)> = ticks.iter().map(|(v, l)| (px(*v), l.clone())).collect();
    let slot = slots.windows(2).map(|w| w[1].0 - w[0].0).fold(W - LEFT - RIGHT, f64::min);
    let mut labels = String::new();
    let lines_used = {
        // Drawn below the plot, whose bottom depends on them: measured first at y = 0.
        let mut probe = String::new();
        x_labels(&mut probe, &slots, slot, 0.0)
    };
    let bottom = H - (FONT * 1.25 * lines_used as f64 + 2.0 * FONT + 20.0);
    x_labels(&mut labels, &slots, slot, bottom + 4.0);
    let values = c
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1).chain(s.spread.iter().flatten().flat_map(|&(lo, hi)| [lo, hi])));
    let scale = Scale::new(c.y, values, top, bottom);
    scale.draw(&mut out);
    out.push_str(&labels);
    axis_titles(&mut out, c.x_label, c.y_label, H - 10.0, top, bottom);
    let joined = !matches!(c.x, XAxis::Categories(_));
    let n = c.series.len() as f64;
    for (i, s) in c.series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        // Unjoined points of several series at one category: side by side, not on top.
        let shift = if joined { 0.0 } else { (i as f64 - (n - 1.0) / 2.0) * 14.0 };
        if joined {
            let path: Vec<String> = s.points.iter().map(|&(a, b)| format!("{:.1},{:.1}", px(a), scale.y(b))).collect();
            let _ = write!(
                out,
                "<polyline class=\"series\" fill=\"none\" stroke=\"{color}\" stroke-width=\"{}\" \
                 stroke-dasharray=\"{}\" stroke-linejoin=\"round\" points=\"{}\"/>",
                WIDTHS[i % WIDTHS.len()],
                DASHES[i % DASHES.len()],
                path.join(" ")
            );
        }
        for (k, &(a, b)) in s.points.iter().enumerate() {
            let x = px(a) + shift;
            if let Some((lo, hi)) = s.spread_at(k) {
                error_bar(&mut out, x, scale.y(lo), scale.y(hi), color);
            }
            let r = if joined && s.points.len() > 30 { 0.0 } else { 4.0 };
            let spread =
                s.spread_at(k).map_or(String::new(), |(lo, hi)| format!(" [{} to {}]", fmt_tick(lo), fmt_tick(hi)));
            let _ = write!(
                out,
                "<circle class=\"point\" cx=\"{x:.1}\" cy=\"{:.1}\" r=\"{r}\" fill=\"{color}\"><title>{}: {}{spread}</title></circle>",
                scale.y(b),
                escape(&s.name),
                fmt_tick(b)
            );
        }
    }
    out.push_str("</svg>");
    out
}

/// Grouped bars: one group per category, one bar per series (with its spread as an error
/// bar). Over `MAX_GROUPS` categories the first `MAX_GROUPS` only: see `bars_paged`.
pub fn bars(title: &str, y_label: &str, categories: &[String], series: &[Series]) -> String {
    let mut out = String::new();
    frame(&mut out, title, "bars");
    let categories = &categories[..categories.len().min(MAX_GROUPS)];
    let names: Vec<&str> = series.iter().map(|s| s.name.as_str()).collect();
    let (at, top) = legend_layout(&names, 48.0);
    legend(&mut out, &names, &at, true);
    let top = top + 6.0;
    let group = (W - LEFT - RIGHT) / categories.len().max(1) as f64;
    let bar = group * 0.8 / series.len().max(1) as f64;
    let slots: Vec<(f64, String)> =
        categories.iter().enumerate().map(|(c, l)| (LEFT + group * (c as f64 + 0.5), l.clone())).collect();
    let lines_used = x_labels(&mut String::new(), &slots, group, 0.0);
    let bottom = H - (FONT * 1.25 * lines_used as f64 + 20.0);
    let values = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1).chain(s.spread.iter().flatten().flat_map(|&(lo, hi)| [lo, hi])));
    let scale = Scale::new(YAxis::Linear, values, top, bottom);
    scale.draw(&mut out);
    x_labels(&mut out, &slots, group, bottom + 4.0);
    for (c, label) in categories.iter().enumerate() {
        let gx = LEFT + group * c as f64 + group * 0.1;
        for (i, s) in series.iter().enumerate() {
            let Some(k) = s.points.iter().position(|p| p.0 == c as f64) else { continue };
            let v = s.points[k].1;
            let color = COLORS[i % COLORS.len()];
            let x = gx + bar * i as f64;
            let spread = s.spread_at(k);
            let _ = write!(
                out,
                "<rect class=\"bar\" x=\"{x:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{color}\"><title>{} {}: {}{}</title></rect>",
                scale.y(v),
                bar.max(1.0),
                (bottom - scale.y(v)).max(0.0),
                escape(label),
                escape(&s.name),
                fmt_tick(v),
                spread.map_or(String::new(), |(lo, hi)| format!(" [{} to {}]", fmt_tick(lo), fmt_tick(hi)))
            );
            if let Some((lo, hi)) = spread {
                error_bar(&mut out, x + bar / 2.0, scale.y(lo), scale.y(hi), "#333");
            }
        }
    }
    axis_titles(&mut out, "", y_label, H - 4.0, top, bottom);
    out.push_str("</svg>");
    out
}

/// Grouped bars split over as many charts as `MAX_GROUPS` a chart needs, each titled with
/// the range it shows ("(13-24 of 37)").
pub fn bars_paged(title: &str, y_label: &str, categories: &[String], series: &[Series]) -> Vec<String> {
    let pages = categories.len().div_ceil(MAX_GROUPS).max(1);
    (0..pages)
        .map(|page| {
            let (from, to) = (page * MAX_GROUPS, ((page + 1) * MAX_GROUPS).min(categories.len()));
            let part: Vec<Series> = series
                .iter()
                .map(|s| {
                    let (points, spread) = s
                        .points
                        .iter()
                        .enumerate()
                        .filter(|(_, p)| p.0 >= from as f64 && p.0 < to as f64)
                        .map(|(k, p)| ((p.0 - from as f64, p.1), s.spread_at(k)))
                        .unzip();
                    Series { name: s.name.clone(), points, spread }
                })
                .collect();
            let title = if pages > 1 {
                format!("{title} ({}-{to} of {})", from + 1, categories.len())
            } else {
                title.to_string()
            };
            bars(&title, y_label, &categories[from..to], &part)
        })
        .collect()
}

/// A text label as a layout check sees it: its box, font size and content.
#[derive(Debug, Clone)]
pub struct Label {
    pub text: String,
    pub font: f64,
    pub x0: f64,
    pub y0: f64,
    pub x1: f64,
    pub y1: f64,
}

/// One chart as a layout check sees it.
#[derive(Debug)]
pub struct Drawn {
    pub title: String,
    pub width: f64,
    pub height: f64,
    pub labels: Vec<Label>,
}

/// The value of attribute `name` in the tag text `tag`.
fn attr<'t>(tag: &'t str, name: &str) -> Option<&'t str> {
    let mut from = 0;
    while let Some(i) = tag[from..].find(name) {
        let at = from + i;
        let before = tag[..at].chars().last();
        let rest = &tag[at + name.len()..];
        if before.is_some_and(char::is_whitespace) && rest.starts_with("=\"") {
            return rest[2..].split('"').next();
        }
        from = at + name.len();
    }
    None
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&amp;", "&")
}

/// Every chart in `html` (as written, or as a browser serialised its DOM) with the estimated
/// box of each text label: from x, y (the baseline), the anchor, the font size and the
/// length, turned upright for a label rotated by -90 degrees.
pub fn drawn(html: &str) -> Vec<Drawn> {
    let mut charts = Vec::new();
    for part in html.split("<svg").skip(1) {
        let Some(end) = part.find("</svg>") else { continue };
        let svg = &part[..end];
        let head = &svg[..svg.find('>').unwrap_or(0)];
        let num = |t: &str, n: &str| attr(t, n).and_then(|v| v.trim_end_matches("px").parse::<f64>().ok());
        let title = svg.split("<title>").nth(1).and_then(|t| t.split("</title>").next()).unwrap_or("");
        let mut labels = Vec::new();
        for t in svg.split("<text").skip(1) {
            let Some(close) = t.find('>') else { continue };
            let tag = &t[..close];
            let content = unescape(t[close + 1..].split("</text>").next().unwrap_or(""));
            let font = num(tag, "font-size").unwrap_or(16.0);
            let (x, y) = (num(tag, "x").unwrap_or(0.0), num(tag, "y").unwrap_or(0.0));
            let bold = attr(tag, "font-weight") == Some("bold");
            let w = text_width(&content, font) * if bold { 1.1 } else { 1.0 };
            let start = match attr(tag, "text-anchor") {
                Some("middle") => -w / 2.0,
                Some("end") => -w,
                _ => 0.0,
            };
            // Upright: from the baseline up by the ascent, down by the descent.
            let (mut x0, mut x1, mut y0, mut y1) = (x + start, x + start + w, y - font * 0.8, y + font * 0.25);
            if attr(tag, "transform").is_some_and(|t| t.starts_with("rotate(-90")) {
                (x0, x1, y0, y1) = (x - font * 0.8, x + font * 0.25, y - start - w, y - start);
            }
            labels.push(Label { text: content, font, x0, y0, x1, y1 });
        }
        charts.push(Drawn {
            title: unescape(title),
            width: num(head, "width").unwrap_or(f64::INFINITY),
            height: num(head, "height").unwrap_or(f64::INFINITY),
            labels,
        });
    }
    charts
}

/// What would make the charts in `html` hard to read in a window `window` px wide: a chart
/// wider than it, text under `MIN_FONT`, labels whose boxes overlap, labels outside their
/// chart. Empty when every chart reads.
pub fn layout_problems(html: &str, window: f64) -> Vec<String> {
    let mut problems = Vec::new();
    for c in drawn(html) {
        if c.width > window {
            problems.push(format!("{:?}: {} px wide, over {window}", c.title, c.width));
        }
        for l in &c.labels {
            if l.font < MIN_FONT {
                problems.push(format!("{:?}: {:?} at {} px", c.title, l.text, l.font));
            }
            if l.x0 < -0.5 || l.y0 < -0.5 || l.x1 > c.width + 0.5 || l.y1 > c.height + 0.5 {
                problems.push(format!("{:?}: {:?} outside the chart: {l:?}", c.title, l.text));
            }
        }
        for (i, a) in c.labels.iter().enumerate() {
            for b in &c.labels[i + 1..] {
                if a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1 {
                    problems.push(format!("{:?}: {:?} overlaps {:?}", c.title, a.text, b.text));
                }
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_are_well_formed_and_escaped() {
        let s = [Series::new("a<b", vec![(0.0, 1.0), (99.0, 5.0)])];
        let svg = lines("T & U", "x", "y", XAxis::Percentile, &s);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert!(svg.contains("T &amp; U") && svg.contains("a&lt;b") && svg.contains("99%"));
        let b = bars("B", "KiB", &["p1".into(), "p2".into()], &[Series::new("a", vec![(0.0, 1.0), (1.0, 5.0)])]);
        assert_eq!(b.matches("class=\"bar\"").count(), 2);
    }

    #[test]
    fn long_category_labels_wrap_within_their_slot_and_never_overlap() {
        let labels: Vec<String> = (0..12).map(|i| format!("workers={i} with max_requests=100 (pass 2) #{i}")).collect();
        let s = [Series::with_spread(
            "USS",
            (0..12).map(|i| (i as f64, 10.0 + i as f64, Some((9.0, 12.0 + i as f64)))).collect(),
        )];
        let svg = bars("Memory", "MiB", &labels, &s);
        assert_eq!(layout_problems(&svg, 1280.0), Vec::<String>::new());
        assert_eq!(svg.matches("class=\"error-bar\"").count(), 12);
        // 37 groups: four charts, each readable.
        let labels: Vec<String> = (0..37).map(|i| format!("keepalive=off #{i}")).collect();
        let s = [Series::new("USS", (0..37).map(|i| (i as f64, i as f64)).collect())];
        let pages = bars_paged("Memory", "MiB", &labels, &s);
        assert_eq!(pages.len(), 4);
        assert!(pages[3].contains("(37-37 of 37)"), "{}", pages[3]);
        for p in &pages {
            assert_eq!(layout_problems(p, 1280.0), Vec::<String>::new());
        }
        // The old layout's overprint is caught: 37 labels of 10 px at 17 px apart.
        let overprint: String = (0..37)
            .map(|i| {
                format!(
                    "<text x=\"{}\" y=\"280\" text-anchor=\"middle\" font-size=\"10\">keepalive=off #{i}</text>",
                    70 + 17 * i
                )
            })
            .collect();
        let old = format!("<svg width=\"640\" height=\"320\">{overprint}</svg>");
        let problems = layout_problems(&old, 1280.0);
        assert!(problems.iter().any(|p| p.contains("overlaps")), "{problems:?}");
        assert!(problems.iter().any(|p| p.contains("at 10 px")), "{problems:?}");
    }

    #[test]
    fn categories_are_points_without_lines_and_latency_can_be_log() {
        let cats = XAxis::Categories(vec!["on".into(), "off".into()]);
        let s =
            [Series::with_spread("req/s", vec![(0.0, 100.0, Some((95.0, 104.0))), (1.0, 94.0, Some((90.0, 97.0)))])];
        let svg =
            chart(&Chart { title: "t", x_label: "keepalive", y_label: "req/s", x: cats, y: YAxis::Linear, series: &s });
        assert!(!svg.contains("<polyline"), "no line between on and off");
        assert_eq!(svg.matches("class=\"error-bar\"").count(), 2);
        let ordered = XAxis::Ordered(vec!["1".into(), "2".into()]);
        let svg = chart(&Chart { title: "t", x_label: "w", y_label: "r", x: ordered, y: YAxis::Linear, series: &s });
        assert!(svg.contains("<polyline"));
        // A body at 2 ms and a tail at 1 s: on a log axis the body is not flattened to the floor.
        let lat = [Series::new("total", vec![(0.0, 2.0), (50.0, 2.5), (99.9, 1000.0)])];
        let svg = chart(&Chart {
            title: "t",
            x_label: "p",
            y_label: "ms",
            x: XAxis::Percentile,
            y: YAxis::Log,
            series: &lat,
        });
        let ys: Vec<f64> = svg.split("<circle").skip(1).map(|c| attr(c, "cy").unwrap().parse().unwrap()).collect();
        assert!((ys[0] - ys[2]).abs() > 150.0 && (ys[0] - ys[1]).abs() > 5.0, "{ys:?}");
        for tick in ["1", "10", "100", "1000"] {
            assert!(svg.contains(&format!(">{tick}</text>")), "{tick}");
        }
        assert_eq!(layout_problems(&svg, 1280.0), Vec::<String>::new());
    }

    #[test]
    fn each_series_has_its_own_dash_and_width() {
        let s = [
            Series::new("total", vec![(0.0, 1.0), (1.0, 2.0)]),
            Series::new("first byte", vec![(0.0, 1.0), (1.0, 2.0)]),
        ];
        let svg = lines("t", "x", "y", XAxis::Linear, &s);
        let lines: Vec<&str> = svg.split("<polyline").skip(1).collect();
        assert_eq!(lines.len(), 2);
        assert_ne!(attr(lines[0], "stroke-dasharray"), attr(lines[1], "stroke-dasharray"));
        assert!(
            attr(lines[0], "stroke-width").unwrap().parse::<f64>().unwrap()
                > attr(lines[1], "stroke-width").unwrap().parse().unwrap()
        );
    }

    #[test]
    fn long_legends_wrap_instead_of_overprinting() {
        let s: Vec<Series> = (0..5)
            .map(|i| {
                Series::new(
                    format!("recommended: workers={i} keepalive=on max_requests=1000 (pass 2)"),
                    vec![(0.0, 1.0)],
                )
            })
            .collect();
        let svg = lines("t", "x", "y", XAxis::Linear, &s);
        assert_eq!(layout_problems(&svg, 1280.0), Vec::<String>::new());
    }
}
