//! Where the computation went, by sampling: the archive's
//! `CallingContextSample` events (`gputrace --sampling`) taken while their
//! thread was computing — in no MPI, NCCL or CUDA synchronization call —
//! counted per process by the deepest [`DEPTH`] frames of the sampled
//! call path and the innermost one's source line (`extra_work > busy`:
//! the same function under two callers is two rows). Each function's share of its process's computation
//! samples times the process's computation is its estimated time.

use std::collections::HashMap;

use otf2::CallingContextRef;
use otf2::reader::GlobalDefs;
use serde::Serialize;

use super::RankTime;
use super::describe::Describe;

/// The call paths shown per process at most.
pub const TOP: usize = 5;

/// The frames of a call path kept, innermost last.
pub const DEPTH: usize = 3;

/// A function the samples of a process's computation fell in.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HotFunction {
    pub process: String,
    pub rank: Option<u32>,
    /// The innermost function of the sampled call paths.
    pub function: String,
    /// Their deepest [`DEPTH`] frames, outermost first (`main > extra_work
    /// > busy`).
    pub call_path: String,
    /// `file.c:21`, where the archive has the line.
    pub source: Option<String>,
    /// Its samples, and their share of the process's computation samples
    /// (%).
    pub samples: u64,
    pub share: f64,
    /// That share of the process's computation (ns).
    pub time_ns: u64,
}

/// The samples counted by the pass.
#[derive(Default)]
pub(crate) struct Counts {
    per: HashMap<(usize, CallingContextRef), u64>,
    computing: HashMap<usize, u64>,
}

impl Counts {
    /// A sample of call path `context` on a thread of `process` while it
    /// computed.
    pub(crate) fn add(&mut self, process: usize, context: CallingContextRef) {
        *self.per.entry((process, context)).or_default() += 1;
        *self.computing.entry(process).or_default() += 1;
    }

    /// Per process, its [`TOP`] functions (by function and line), the most
    /// samples first; processes in `ranks`' order.
    pub(crate) fn report(&self, defs: &GlobalDefs, d: &dyn Describe, ranks: &[RankTime]) -> Vec<HotFunction> {
        let name = |c: &otf2::reader::CallingContextDef| {
            defs.regions.get(&c.region).map_or("?", |r| defs.string(r.name)).to_string()
        };
        let mut per: HashMap<(usize, String, Option<String>), u64> = HashMap::new();
        for (&(process, context), &n) in &self.per {
            let Some(c) = defs.calling_contexts.get(&context) else { continue };
            let source = crate::names::source_line(defs, c);
            let mut frames = vec![name(c)];
            let mut up = c.parent;
            while let Some(p) = up.and_then(|p| defs.calling_contexts.get(&p))
                && frames.len() < DEPTH
            {
                frames.push(name(p));
                up = p.parent;
            }
            frames.reverse();
            *per.entry((process, frames.join(" > "), source)).or_default() += n;
        }
        let mut rows: Vec<(usize, String, Option<String>, u64)> =
            per.into_iter().map(|((p, f, s), n)| (p, f, s, n)).collect();
        rows.sort_by(|a, b| a.0.cmp(&b.0).then(b.3.cmp(&a.3)).then_with(|| a.1.cmp(&b.1)));
        let mut out = Vec::new();
        let mut shown: HashMap<usize, usize> = HashMap::new();
        for (process, call_path, source, samples) in rows {
            let k = shown.entry(process).or_default();
            if *k >= TOP {
                continue;
            }
            *k += 1;
            let total = self.computing.get(&process).copied().unwrap_or(1).max(1);
            let share = 100.0 * samples as f64 / total as f64;
            let name = d.process(process);
            let computation = ranks.iter().find(|r| r.process == name).map_or(0, |r| r.computation_ns);
            out.push(HotFunction {
                process: name,
                rank: d.rank(process),
                function: call_path.rsplit(" > ").next().unwrap_or_default().to_string(),
                call_path,
                source,
                samples,
                share,
                time_ns: (computation as f64 * share / 100.0) as u64,
            });
        }
        out
    }
}

/// `main > extra_work > busy (hot.c:21) 49.8%, …`: a process's hot call
/// paths in a few words (at most `n`).
pub fn brief(hot: &[HotFunction], process: &str, n: usize) -> Option<String> {
    let parts: Vec<String> = hot
        .iter()
        .filter(|h| h.process == process)
        .take(n)
        .map(|h| match &h.source {
            Some(s) => format!("{} ({s}) {:.1}%", h.call_path, h.share),
            None => format!("{} {:.1}%", h.call_path, h.share),
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join(", "))
}
