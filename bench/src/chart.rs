//! SVG bar charts of a scenario: one group of bars per measure, each group
//! on its own scale (its longest bar fills the width), the figure written
//! at the end of every bar.

use std::fmt::Write;

/// One measure shown for every series, e.g. "p50, 100 B" in milliseconds.
#[derive(Clone, Debug)]
pub struct Group {
    /// What is measured.
    pub label: String,
    /// The unit printed after each figure.
    pub unit: &'static str,
    /// One value per series, in the chart's series order (`None`: not measured).
    pub values: Vec<Option<f64>>,
}

/// A chart: a title, the series (programs compared) and the measures.
#[derive(Clone, Debug)]
pub struct Chart {
    /// Shown above the bars.
    pub title: String,
    /// The programs compared, in legend order.
    pub series: Vec<String>,
    /// The measures.
    pub groups: Vec<Group>,
}

const COLOURS: [&str; 4] = ["#2b6cb0", "#dd6b20", "#38a169", "#805ad5"];
const WIDTH: f64 = 760.0;
const LABEL_WIDTH: f64 = 190.0;
const BAR_AREA: f64 = 460.0;
const BAR_HEIGHT: f64 = 16.0;
const GROUP_GAP: f64 = 14.0;

/// A figure with three significant digits at most, and its unit.
pub fn figure(value: f64, unit: &str) -> String {
    let text = if value >= 100.0 {
        format!("{value:.0}")
    } else if value >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    };
    if unit.is_empty() { text } else { format!("{text} {unit}") }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

impl Chart {
    /// The chart as an SVG document.
    pub fn to_svg(&self) -> String {
        // One legend line per series: the names are long.
        let legend_height = 16.0 * self.series.len() as f64 + 8.0;
        let top = 40.0 + legend_height;
        let group_height = |g: &Group| g.values.len() as f64 * BAR_HEIGHT + GROUP_GAP;
        let height = top + self.groups.iter().map(group_height).sum::<f64>() + 10.0;
        let mut svg = String::new();
        let _ = write!(
            svg,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">"#
        );
        let _ = write!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
        let _ = write!(svg, r#"<text x="10" y="22" font-size="15" font-weight="bold">{}</text>"#, escape(&self.title));
        for (index, name) in self.series.iter().enumerate() {
            let colour = COLOURS[index % COLOURS.len()];
            let y = 36.0 + 16.0 * index as f64;
            let _ = write!(svg, r#"<rect x="10" y="{y}" width="12" height="12" fill="{colour}"/>"#);
            let _ = write!(svg, r#"<text x="26" y="{}">{}</text>"#, y + 10.0, escape(name));
        }
        let mut y = top;
        for group in &self.groups {
            let max = group.values.iter().flatten().copied().fold(0.0_f64, f64::max);
            let middle = y + group.values.len() as f64 * BAR_HEIGHT / 2.0 + 4.0;
            let _ = write!(svg, r#"<text x="10" y="{middle}">{}</text>"#, escape(&group.label));
            for (index, value) in group.values.iter().enumerate() {
                let bar_y = y + index as f64 * BAR_HEIGHT;
                let colour = COLOURS[index % COLOURS.len()];
                let Some(value) = value else {
                    let _ = write!(
                        svg,
                        r##"<text x="{LABEL_WIDTH}" y="{}" fill="#888">not measured</text>"##,
                        bar_y + 12.0
                    );
                    continue;
                };
                let length = if max > 0.0 { (value / max * BAR_AREA).max(1.0) } else { 1.0 };
                let _ = write!(
                    svg,
                    r#"<rect x="{LABEL_WIDTH}" y="{bar_y}" width="{length:.1}" height="{}" fill="{colour}"/>"#,
                    BAR_HEIGHT - 3.0
                );
                let _ = write!(
                    svg,
                    r#"<text x="{:.1}" y="{}">{}</text>"#,
                    LABEL_WIDTH + length + 4.0,
                    bar_y + 11.0,
                    escape(&figure(*value, group.unit))
                );
            }
            y += group_height(group);
        }
        svg.push_str("</svg>\n");
        svg
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_are_scaled_within_their_group_and_labelled() {
        let chart = Chart {
            title: "a < b".into(),
            series: vec!["bridge".into(), "direct".into()],
            groups: vec![
                Group { label: "p50".into(), unit: "ms", values: vec![Some(2.0), Some(1.0)] },
                Group { label: "RSS".into(), unit: "MiB", values: vec![Some(300.0), None] },
            ],
        };
        let svg = chart.to_svg();
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert!(svg.contains(r#"width="460.0""#), "the longest bar of a group fills the area");
        assert!(svg.contains(r#"width="230.0""#), "half the value, half the length");
        assert!(svg.contains("2.00 ms") && svg.contains("300 MiB") && svg.contains("not measured"));
        assert!(svg.contains("a &lt; b"));
    }

    #[test]
    fn figures_keep_three_significant_digits() {
        assert_eq!(figure(0.1234, "ms"), "0.12 ms");
        assert_eq!(figure(12.345, "x"), "12.3 x");
        assert_eq!(figure(1234.4, ""), "1234");
    }
}
