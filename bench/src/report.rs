//! One line per figure: value, baseline, ratio, target, verdict. Pure
//! helpers (median, percentiles, formatting) live here too, with their tests.

use std::fmt::Write as _;
use std::sync::Mutex;

/// What a figure must reach to PASS.
#[derive(Clone, Debug)]
pub enum Target {
    /// `value / baseline >= x`.
    RatioAtLeast(f64),
    /// `value / baseline <= x`.
    RatioAtMost(f64),
    /// `value >= x` (in the figure's unit).
    AtLeast(f64),
    /// `value <= x` (in the figure's unit).
    AtMost(f64),
    /// A yes/no check, with what was checked.
    Holds(bool, String),
    /// No target: the figure is reported for information.
    None,
}

#[derive(Clone, Debug)]
pub struct Figure {
    pub name: String,
    pub value: f64,
    pub unit: String,
    /// What the value is compared with, in the same unit.
    pub baseline_name: String,
    pub baseline: Option<f64>,
    pub target: Target,
}

impl Figure {
    pub fn new(name: impl Into<String>, value: f64, unit: impl Into<String>) -> Self {
        Figure {
            name: name.into(),
            value,
            unit: unit.into(),
            baseline_name: String::new(),
            baseline: None,
            target: Target::None,
        }
    }

    pub fn baseline(mut self, name: impl Into<String>, value: f64) -> Self {
        self.baseline_name = name.into();
        self.baseline = Some(value);
        self
    }

    pub fn target(mut self, t: Target) -> Self {
        self.target = t;
        self
    }

    pub fn ratio(&self) -> Option<f64> {
        match self.baseline {
            Some(b) if b != 0.0 && b.is_finite() && self.value.is_finite() => Some(self.value / b),
            _ => None,
        }
    }

    /// `Some(true)` PASS, `Some(false)` FAIL, `None` no target.
    pub fn verdict(&self) -> Option<bool> {
        match &self.target {
            Target::RatioAtLeast(x) => Some(self.ratio().is_some_and(|r| r >= *x)),
            Target::RatioAtMost(x) => Some(self.ratio().is_some_and(|r| r <= *x)),
            Target::AtLeast(x) => Some(self.value.is_finite() && self.value >= *x),
            Target::AtMost(x) => Some(self.value.is_finite() && self.value <= *x),
            Target::Holds(ok, _) => Some(*ok),
            Target::None => None,
        }
    }

    pub fn target_text(&self) -> String {
        match &self.target {
            Target::RatioAtLeast(x) => format!("ratio >= {}", num(*x)),
            Target::RatioAtMost(x) => format!("ratio <= {}", num(*x)),
            Target::AtLeast(x) => format!(">= {} {}", num(*x), self.unit),
            Target::AtMost(x) => format!("<= {} {}", num(*x), self.unit),
            Target::Holds(_, what) => what.clone(),
            Target::None => "-".into(),
        }
    }

    pub fn verdict_text(&self) -> &'static str {
        match self.verdict() {
            Some(true) => "PASS",
            Some(false) => "FAIL",
            None => "info",
        }
    }
}

/// Every figure printed so far, for the closing summary.
static FIGURES: Mutex<Vec<Figure>> = Mutex::new(Vec::new());

/// Prints one figure now and keeps it for the summary.
pub fn emit(f: Figure) {
    println!("{}", line(&f));
    FIGURES.lock().unwrap_or_else(|p| p.into_inner()).push(f);
}

/// A note under the figures (why a number is what it is).
pub fn note(text: impl AsRef<str>) {
    println!("    note: {}", text.as_ref());
}

pub fn section(title: &str) {
    println!("\n== {title}");
}

fn line(f: &Figure) -> String {
    let baseline = match f.baseline {
        Some(b) => format!("{} {}", num(b), f.baseline_name),
        None if f.baseline_name.is_empty() => "-".into(),
        None => f.baseline_name.clone(),
    };
    let ratio = f.ratio().map_or("-".into(), |r| format!("{}x", num(r)));
    format!(
        "{:<4} {:<46} {:>12} {:<9} | baseline {:<34} | ratio {:>8} | target {}",
        f.verdict_text(),
        f.name,
        num(f.value),
        f.unit,
        baseline,
        ratio,
        f.target_text()
    )
}

/// The summary as a Markdown table.
pub fn markdown() -> String {
    let figures = FIGURES.lock().unwrap_or_else(|p| p.into_inner());
    let mut out = String::new();
    out.push_str("| figure | value | baseline | ratio | target | verdict |\n");
    out.push_str("| --- | ---: | --- | ---: | --- | --- |\n");
    for f in figures.iter() {
        let baseline = match f.baseline {
            Some(b) => format!("{} {} ({})", num(b), f.unit, f.baseline_name),
            None if f.baseline_name.is_empty() => "-".into(),
            None => f.baseline_name.clone(),
        };
        let _ = writeln!(
            out,
            "| {} | {} {} | {} | {} | {} | {} |",
            f.name,
            num(f.value),
            f.unit,
            baseline,
            f.ratio().map_or("-".into(), |r| format!("{}x", num(r))),
            f.target_text(),
            f.verdict_text()
        );
    }
    out
}

pub fn summary() -> (usize, usize, usize) {
    let figures = FIGURES.lock().unwrap_or_else(|p| p.into_inner());
    let pass = figures.iter().filter(|f| f.verdict() == Some(true)).count();
    let fail = figures
        .iter()
        .filter(|f| f.verdict() == Some(false))
        .count();
    (pass, fail, figures.len() - pass - fail)
}

pub fn failed_names() -> Vec<String> {
    let figures = FIGURES.lock().unwrap_or_else(|p| p.into_inner());
    figures
        .iter()
        .filter(|f| f.verdict() == Some(false))
        .map(|f| f.name.clone())
        .collect()
}

/// A number with about 3 significant digits, thousands separated.
pub fn num(x: f64) -> String {
    if !x.is_finite() {
        return format!("{x}");
    }
    let a = x.abs();
    if a >= 1000.0 {
        group_thousands(x.round() as i64)
    } else if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else if a == 0.0 {
        "0".into()
    } else {
        format!("{x:.3}")
    }
}

fn group_thousands(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let groups: Vec<&str> = digits
        .as_bytes()
        .rchunks(3)
        .rev()
        .map(|c| std::str::from_utf8(c).unwrap_or("?"))
        .collect();
    let out = groups.join(",");
    if n < 0 {
        format!("-{out}")
    } else {
        out
    }
}

/// Median of the values (mean of the middle two for an even count).
pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The `p`-th percentile (0..=100) by nearest rank of sorted `values`.
pub fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests;
