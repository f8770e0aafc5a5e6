//! A report as rows of typed cells, and its three renderings: an aligned
//! terminal table (numbers with thousands separators, as `nsys stats`
//! prints them), CSV (plain numbers, one header line) and JSON (one object
//! per row, keyed by column name).

use std::fmt::Write as _;
use std::io::{self, Write};

use serde_json::{Map, Value, json};

pub use crate::numbers::{human_bytes, human_ns, thousands};

/// One cell.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Int(u128),
    /// A float shown with `decimals` decimals in the terminal.
    Float(f64, usize),
    /// A float estimated rather than exact (a median from a histogram):
    /// shown with a `~` in the terminal.
    Estimate(f64, usize),
    Text(String),
    /// A kernel's name: its base name in the terminal, cut to
    /// [`NAME_WIDTH`] (see [`crate::names`]), the full name in CSV and
    /// JSON.
    Name(String),
}

/// The widest a [`Cell::Name`] is shown in a terminal table.
pub const NAME_WIDTH: usize = 60;

impl Cell {
    fn terminal(&self) -> String {
        match self {
            Cell::Int(v) => thousands(*v),
            Cell::Float(v, d) => float_thousands(*v, *d),
            Cell::Estimate(v, d) => format!("~{}", float_thousands(*v, *d)),
            Cell::Text(s) => s.clone(),
            Cell::Name(s) => crate::names::for_terminal(s, NAME_WIDTH),
        }
    }

    fn plain(&self) -> String {
        match self {
            Cell::Int(v) => v.to_string(),
            Cell::Float(v, _) | Cell::Estimate(v, _) => format_float(*v),
            Cell::Text(s) | Cell::Name(s) => s.clone(),
        }
    }

    fn json(&self) -> Value {
        match self {
            Cell::Int(v) => u64::try_from(*v).map_or_else(|_| json!(*v as f64), |x| json!(x)),
            Cell::Float(v, _) | Cell::Estimate(v, _) => json!(v),
            Cell::Text(s) | Cell::Name(s) => json!(s),
        }
    }
}

/// A report's table.
#[derive(Clone, Debug, Default)]
pub struct Table {
    /// The report's name (`cuda_api_sum`).
    pub name: String,
    /// A heading (`CUDA API Summary`).
    pub title: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
    /// Lines printed under the terminal table.
    pub notes: Vec<String>,
    /// A terminal rendering that replaces the rows (matrices as grids).
    pub grid: Option<String>,
}

/// How reports are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Table,
    Csv,
    Json,
}

impl Table {
    pub fn new(name: &str, title: &str, columns: &[&str]) -> Self {
        Self {
            name: name.into(),
            title: title.into(),
            columns: columns.iter().map(|c| (*c).to_owned()).collect(),
            ..Self::default()
        }
    }

    /// The terminal table, `limit` rows at most.
    pub fn render(&self, limit: Option<usize>) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "** {} ({}):\n", self.title, self.name);
        if let Some(grid) = &self.grid {
            out.push_str(grid);
        } else if self.rows.is_empty() {
            out.push_str("SKIPPED: nothing of this kind in the archive.\n");
        } else {
            let rows: Vec<Vec<String>> = self
                .rows
                .iter()
                .take(limit.unwrap_or(usize::MAX))
                .map(|r| r.iter().map(Cell::terminal).collect())
                .collect();
            out.push_str(&align(&self.columns, &rows, &self.rows[0]));
            if let Some(l) = limit.filter(|l| self.rows.len() > *l) {
                let _ = writeln!(out, " ... and {} more", self.rows.len() - l);
            }
        }
        for n in &self.notes {
            let _ = writeln!(out, "{n}");
        }
        out
    }

    /// The header line, then one line per row; fields quoted where CSV
    /// needs it. A row whose length differs from the header's is an error.
    pub fn write_csv(&self, out: &mut dyn Write) -> io::Result<()> {
        let mut w = csv::Writer::from_writer(out);
        w.write_record(&self.columns)?;
        for r in &self.rows {
            w.write_record(r.iter().map(Cell::plain))?;
        }
        w.flush()
    }

    pub fn to_json(&self) -> Value {
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|r| {
                let mut m = Map::new();
                for (c, v) in self.columns.iter().zip(r) {
                    m.insert(c.clone(), v.json());
                }
                Value::Object(m)
            })
            .collect();
        json!({ "title": self.title, "columns": self.columns, "rows": rows, "notes": self.notes })
    }
}

/// Writes reports in a format: tables one after the other; CSV one after
/// the other, each after a `# name` line when there are several; JSON as
/// one object keyed by report name.
pub fn write_reports(tables: &[Table], format: Format, out: &mut dyn Write) -> io::Result<()> {
    match format {
        Format::Table => {
            for t in tables {
                writeln!(out, "{}", t.render(None))?;
            }
        }
        Format::Csv => {
            for (i, t) in tables.iter().enumerate() {
                if tables.len() > 1 {
                    if i > 0 {
                        writeln!(out)?;
                    }
                    writeln!(out, "# {}", t.name)?;
                }
                t.write_csv(out)?;
            }
        }
        Format::Json => {
            let mut m = Map::new();
            for t in tables {
                m.insert(t.name.clone(), t.to_json());
            }
            serde_json::to_writer_pretty(&mut *out, &Value::Object(m))?;
            writeln!(out)?;
        }
    }
    Ok(())
}

/// Columns right-aligned for numbers, left for text (judged by the first
/// row), two spaces apart.
fn align(columns: &[String], rows: &[Vec<String>], kinds: &[Cell]) -> String {
    let widths: Vec<usize> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| rows.iter().map(|r| r[i].chars().count()).chain([c.chars().count()]).max().unwrap_or(0))
        .collect();
    let left = |i: usize| matches!(kinds.get(i), Some(Cell::Text(_) | Cell::Name(_)));
    let mut out = String::new();
    let line = |cells: &[String], out: &mut String| {
        let parts: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| if left(i) { format!("{c:<w$}", w = widths[i]) } else { format!("{c:>w$}", w = widths[i]) })
            .collect();
        let _ = writeln!(out, " {}", parts.join("  ").trim_end());
    };
    line(columns, &mut out);
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    line(&rule, &mut out);
    for r in rows {
        line(r, &mut out);
    }
    out
}

/// A float without needless digits: integers as integers, else up to 3 decimals.
fn format_float(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e18 {
        format!("{}", v as i128)
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

fn float_thousands(v: f64, decimals: usize) -> String {
    let s = format!("{:.*}", decimals, v.abs());
    let (int, frac) = s.split_once('.').map_or((s.as_str(), None), |(a, b)| (a, Some(b)));
    let mut out = if v < 0.0 { "-".to_owned() } else { String::new() };
    out.push_str(&int.parse::<u128>().map_or_else(|_| int.to_owned(), thousands));
    if let Some(f) = frac {
        out.push('.');
        out.push_str(f);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renderings() {
        let mut t = Table::new("x_sum", "X Summary", &["Total Time (ns)", "Avg (ns)", "Name"]);
        t.rows.push(vec![Cell::Int(1_234_567), Cell::Float(1234.5, 1), Cell::Text("a, b".into())]);
        t.rows.push(vec![Cell::Int(0), Cell::Estimate(0.25, 2), Cell::Text("say \"hi\"\nthere".into())]);
        let r = t.render(None);
        assert!(r.contains("1,234,567"), "{r}");
        assert!(r.contains("1,234.5"), "{r}");
        let mut csv = Vec::new();
        t.write_csv(&mut csv).unwrap();
        assert_eq!(
            String::from_utf8(csv).unwrap(),
            "Total Time (ns),Avg (ns),Name\n1234567,1234.5,\"a, b\"\n0,0.25,\"say \"\"hi\"\"\nthere\"\n"
        );
        let mut ragged = t.clone();
        ragged.rows.push(vec![Cell::Int(1)]);
        assert!(ragged.write_csv(&mut Vec::new()).is_err(), "a short row is an error, not a short line");
        assert_eq!(t.to_json()["rows"][0]["Total Time (ns)"], 1_234_567);
    }

    #[test]
    fn kernel_names_are_base_names_in_the_terminal_and_whole_elsewhere() {
        let long = format!(
            "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl<at::native::AddFunctor<float> \
             >(at::TensorIteratorBase&, at::native::AddFunctor<float> const&)::{{lambda(int)#1}}>(int, {})",
            "at::native::AddFunctor<float> const&, ".repeat(80)
        );
        let mut t = Table::new("gpu_kern_sum", "Kernels", &["Instances", "Name"]);
        t.rows.push(vec![Cell::Int(3), Cell::Name(long.clone())]);
        t.rows.push(vec![Cell::Int(1), Cell::Name("x".repeat(200))]);
        let r = t.render(None);
        assert!(r.contains("at::native::elementwise_kernel\n"), "{r}");
        assert!(r.contains(&format!("{}…\n", "x".repeat(NAME_WIDTH - 1))), "{r}");
        assert!(r.lines().all(|l| l.chars().count() < 80), "{r}");
        let mut csv = Vec::new();
        t.write_csv(&mut csv).unwrap();
        assert!(String::from_utf8(csv).unwrap().contains(&long));
        assert_eq!(t.to_json()["rows"][0]["Name"], long.as_str());
    }
}
