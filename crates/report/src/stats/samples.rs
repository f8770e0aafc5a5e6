//! `sampled_sum`: the functions the sampled call stacks
//! (`CallingContextSample` events, `gputrace --sampling`) were in: per
//! function its self share (samples whose innermost frame it is) and its
//! inclusive share (samples with it anywhere on the stack, a recursive
//! function counted once per sample), of all samples, or of its process's
//! with `--by-rank`; and the source line most of its self samples were
//! at (`cg.f:523`), where the archive has lines.

use std::collections::{BTreeMap, HashMap, HashSet};

use otf2::reader::GlobalDefs;
use otf2::{CallingContextRef, RegionRef};

use crate::table::{Cell, Table};

/// Samples counted by (process, calling context).
#[derive(Debug, Default)]
pub struct Samples {
    counts: HashMap<(usize, CallingContextRef), u64>,
    /// Each context's region and caller's context.
    contexts: BTreeMap<CallingContextRef, (RegionRef, Option<CallingContextRef>)>,
    /// Each context's `file:line` (the file's base name).
    lines: HashMap<CallingContextRef, String>,
    names: HashMap<RegionRef, String>,
}

impl Samples {
    pub fn new(defs: &GlobalDefs) -> Samples {
        let contexts: BTreeMap<_, _> = defs.calling_contexts.iter().map(|(k, c)| (*k, (c.region, c.parent))).collect();
        let names = contexts.values().map(|(r, _)| (*r, defs.region_name(*r).to_string())).collect();
        let lines =
            defs.calling_contexts.iter().filter_map(|(k, c)| Some((*k, crate::names::source_line(defs, c)?))).collect();
        Samples { counts: HashMap::new(), contexts, lines, names }
    }

    /// One sample of `context` in `process`.
    pub fn add(&mut self, process: usize, context: CallingContextRef) {
        *self.counts.entry((process, context)).or_default() += 1;
    }

    /// (self, inclusive, self samples per line) per (process when
    /// `by_rank`, function), and the samples per process key.
    #[allow(clippy::type_complexity)]
    fn shares(&self, by_rank: bool) -> (BTreeMap<(Option<usize>, String), Share>, HashMap<Option<usize>, u64>) {
        let mut rows: BTreeMap<(Option<usize>, String), Share> = BTreeMap::new();
        let mut totals: HashMap<Option<usize>, u64> = HashMap::new();
        let name = |r: &RegionRef| self.names.get(r).cloned().unwrap_or_default();
        for (&(process, context), &n) in &self.counts {
            let key = by_rank.then_some(process);
            *totals.entry(key).or_default() += n;
            let mut seen: HashSet<RegionRef> = HashSet::new();
            let mut at = Some(context);
            let mut innermost = true;
            while let Some(c) = at {
                let Some(&(region, parent)) = self.contexts.get(&c) else { break };
                let row = rows.entry((key, name(&region))).or_default();
                if innermost {
                    row.0 += n;
                    if let Some(line) = self.lines.get(&c) {
                        *row.2.entry(line.clone()).or_default() += n;
                    }
                }
                if seen.insert(region) {
                    row.1 += n;
                }
                (at, innermost) = (parent, false);
            }
        }
        (rows, totals)
    }
}

/// A function's (self, inclusive) samples and its self samples per line.
type Share = (u64, u64, HashMap<String, u64>);

/// The `sampled_sum` table.
pub fn table(s: &Samples, by_rank: bool, label: &dyn Fn(usize) -> String) -> Table {
    let mut columns =
        vec!["Self (%)", "Inclusive (%)", "Self Samples", "Inclusive Samples", "Function", "Hottest Line"];
    if by_rank {
        columns.insert(0, "Process");
    }
    let mut t = Table::new("sampled_sum", "Sampled Functions (call stacks sampled on CPU time)", &columns);
    let (rows, totals) = s.shares(by_rank);
    let mut rows: Vec<_> = rows.into_iter().collect();
    rows.sort_by(|a, b| (a.0.0, b.1.0, b.1.1).cmp(&(b.0.0, a.1.0, a.1.1)).then(a.0.1.cmp(&b.0.1)));
    for ((process, function), (own, inclusive, lines)) in rows {
        let hottest = lines.into_iter().max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0))).map(|(l, _)| l);
        let total = totals.get(&process).copied().unwrap_or(1).max(1) as f64;
        let mut row = vec![
            Cell::Float(own as f64 * 100.0 / total, 1),
            Cell::Float(inclusive as f64 * 100.0 / total, 1),
            Cell::Int(u128::from(own)),
            Cell::Int(u128::from(inclusive)),
            Cell::Text(crate::names::for_terminal(&function, 70)),
            Cell::Text(hottest.unwrap_or_default()),
        ];
        if let Some(p) = process {
            row.insert(0, Cell::Text(label(p)));
        }
        t.rows.push(row);
    }
    t
}
