//! Hand-made SVG charts (no script, no network): lines over a numeric or log-percentile x
//! axis, points over categories, grouped bars. Each scales to its container's width.

use std::fmt::Write;

const W: f64 = 640.0;
const H: f64 = 320.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 36.0;
const BOTTOM: f64 = 56.0;
const COLORS: [&str; 6] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"];

/// `s` made safe as XML/HTML text or attribute value (&, <, > and " escaped).
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// One named series of (x, y).
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// How x is drawn.
pub enum XAxis {
    /// Plain numbers.
    Linear,
    /// Percentiles, spread as HdrHistogram plots them: 1/(1 - p) on a log scale.
    Percentile,
    /// Category labels at x = 0, 1, 2...
    Categories(Vec<String>),
}

fn frame(out: &mut String, title: &str, class: &str) {
    let _ = write!(
        out,
        "<svg class=\"chart {class}\" viewBox=\"0 0 {W} {H}\" width=\"100%\" role=\"img\" aria-label=\"{t}\" \
         xmlns=\"http://www.w3.org/2000/svg\"><title>{t}</title>\
         <text x=\"{}\" y=\"20\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">{t}</text>",
        W / 2.0,
        t = escape(title)
    );
}

/// The i-th series' colour key, across the top.
fn legend(out: &mut String, i: usize, name: &str) {
    let _ = write!(
        out,
        "<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"{}\" font-size=\"11\">{}</text>",
        LEFT + 8.0 + 150.0 * i as f64,
        TOP - 4.0,
        COLORS[i % COLORS.len()],
        LEFT + 22.0 + 150.0 * i as f64,
        TOP + 5.0,
        escape(name)
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
        format!("{v:.2}").trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// A line chart; y from 0 to a round maximum.
pub fn lines(title: &str, x_label: &str, y_label: &str, x: XAxis, series: &[Series]) -> String {
    let mut out = String::new();
    frame(&mut out, title, "lines");
    let tx = |v: f64| match x {
        XAxis::Percentile => (1.0 / (1.0 - v.min(99.9999) / 100.0)).log10(),
        _ => v,
    };
    let xs: Vec<f64> = series.iter().flat_map(|s| s.points.iter().map(|p| tx(p.0))).collect();
    let (x0, x1) = match &x {
        XAxis::Categories(c) => (-0.5, c.len() as f64 - 0.5),
        _ => (
            xs.iter().cloned().fold(f64::INFINITY, f64::min).min(0.0),
            xs.iter().cloned().fold(0.0, f64::max).max(1e-9),
        ),
    };
    let ymax = nice_max(series.iter().flat_map(|s| s.points.iter().map(|p| p.1)).fold(0.0, f64::max));
    let px = |v: f64| LEFT + (tx(v) - x0) / (x1 - x0).max(1e-12) * (W - LEFT - RIGHT);
    let py = |v: f64| H - BOTTOM - v / ymax * (H - TOP - BOTTOM);
    // Axes and grid.
    for i in 0..=4 {
        let v = ymax * i as f64 / 4.0;
        let y = py(v);
        let _ = write!(
            out,
            "<line x1=\"{LEFT}\" y1=\"{y:.1}\" x2=\"{}\" y2=\"{y:.1}\" stroke=\"#ddd\"/>\
             <text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\" font-size=\"11\">{}</text>",
            W - RIGHT,
            LEFT - 6.0,
            y + 4.0,
            fmt_tick(v)
        );
    }
    let ticks: Vec<(f64, String)> = match &x {
        XAxis::Categories(c) => c.iter().enumerate().map(|(i, l)| (i as f64, l.clone())).collect(),
        XAxis::Percentile => [0.0, 90.0, 99.0, 99.9, 99.99, 99.999]
            .iter()
            .filter(|p| tx(**p) <= x1 + 1e-9)
            .map(|p| (*p, format!("{p}%")))
            .collect(),
        XAxis::Linear => (0..=4).map(|i| x0 + (x1 - x0) * i as f64 / 4.0).map(|v| (v, fmt_tick(v))).collect(),
    };
    for (v, label) in ticks {
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\" font-size=\"11\">{}</text>",
            px(v),
            H - BOTTOM + 16.0,
            escape(&label)
        );
    }
    let _ = write!(
        out,
        "<line x1=\"{LEFT}\" y1=\"{b}\" x2=\"{}\" y2=\"{b}\" stroke=\"#333\"/><line x1=\"{LEFT}\" y1=\"{TOP}\" x2=\"{LEFT}\" y2=\"{b}\" stroke=\"#333\"/>\
         <text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"12\">{}</text>\
         <text x=\"14\" y=\"{}\" text-anchor=\"middle\" font-size=\"12\" transform=\"rotate(-90 14 {})\">{}</text>",
        W - RIGHT,
        (LEFT + W - RIGHT) / 2.0,
        H - 18.0,
        escape(x_label),
        (TOP + H - BOTTOM) / 2.0,
        (TOP + H - BOTTOM) / 2.0,
        escape(y_label),
        b = H - BOTTOM
    );
    for (i, s) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let path: Vec<String> = s.points.iter().map(|&(a, b)| format!("{:.1},{:.1}", px(a), py(b))).collect();
        let _ = write!(
            out,
            "<polyline class=\"series\" fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" points=\"{}\"/>",
            path.join(" ")
        );
        for &(a, b) in &s.points {
            let _ = write!(
                out,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{color}\"><title>{}: {}</title></circle>",
                px(a),
                py(b),
                escape(&s.name),
                fmt_tick(b)
            );
        }
        legend(&mut out, i, &s.name);
    }
    out.push_str("</svg>");
    out
}

/// Grouped bars: one group per category, one bar per series.
pub fn bars(title: &str, y_label: &str, categories: &[String], series: &[Series]) -> String {
    let mut out = String::new();
    frame(&mut out, title, "bars");
    let ymax = nice_max(series.iter().flat_map(|s| s.points.iter().map(|p| p.1)).fold(0.0, f64::max));
    let py = |v: f64| H - BOTTOM - v / ymax * (H - TOP - BOTTOM);
    let group = (W - LEFT - RIGHT) / categories.len().max(1) as f64;
    let bar = group * 0.8 / series.len().max(1) as f64;
    for i in 0..=4 {
        let v = ymax * i as f64 / 4.0;
        let _ = write!(
            out,
            "<line x1=\"{LEFT}\" y1=\"{y:.1}\" x2=\"{}\" y2=\"{y:.1}\" stroke=\"#ddd\"/><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\" font-size=\"11\">{}</text>",
            W - RIGHT,
            LEFT - 6.0,
            py(v) + 4.0,
            fmt_tick(v),
            y = py(v)
        );
    }
    for (c, label) in categories.iter().enumerate() {
        let gx = LEFT + group * c as f64 + group * 0.1;
        for (i, s) in series.iter().enumerate() {
            let v = s.points.get(c).map_or(0.0, |p| p.1);
            let _ = write!(
                out,
                "<rect class=\"bar\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{}\"><title>{} {}: {}</title></rect>",
                gx + bar * i as f64,
                py(v),
                bar.max(1.0),
                (H - BOTTOM - py(v)).max(0.0),
                COLORS[i % COLORS.len()],
                escape(label),
                escape(&s.name),
                fmt_tick(v)
            );
        }
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\" font-size=\"10\">{}</text>",
            gx + group * 0.4,
            H - BOTTOM + 14.0,
            escape(&label.chars().take(18).collect::<String>())
        );
    }
    for (i, s) in series.iter().enumerate() {
        legend(&mut out, i, &s.name);
    }
    let _ = write!(
        out,
        "<line x1=\"{LEFT}\" y1=\"{b}\" x2=\"{}\" y2=\"{b}\" stroke=\"#333\"/><text x=\"14\" y=\"{m}\" text-anchor=\"middle\" font-size=\"12\" transform=\"rotate(-90 14 {m})\">{}</text></svg>",
        W - RIGHT,
        escape(y_label),
        b = H - BOTTOM,
        m = (TOP + H - BOTTOM) / 2.0
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_are_well_formed_and_escaped() {
        let s = [Series { name: "a<b".into(), points: vec![(0.0, 1.0), (99.0, 5.0)] }];
        let svg = lines("T & U", "x", "y", XAxis::Percentile, &s);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert!(svg.contains("T &amp; U") && svg.contains("a&lt;b") && svg.contains("99%"));
        let b = bars("B", "KiB", &["p1".into(), "p2".into()], &s);
        assert_eq!(b.matches("class=\"bar\"").count(), 2);
    }
}
