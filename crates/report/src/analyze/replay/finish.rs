//! The end of the pass: per-rank, per-stream and per-GPU times, load
//! imbalance, the findings listed with their sentences, stragglers and
//! the critical path.

use otf2::{CommRef, RegionRef};

use super::critical;
use super::{Agg, Analysis, Finding, GpuTime, Imbalance, Pass, Pattern, Place, RankTime, What, Window, Worst};
use crate::analyze::describe::Describe;
use crate::analyze::{render, totals};
use crate::model::LocationKind;

impl Pass<'_> {
    pub(super) fn finish(mut self, archive: String) -> Analysis {
        let model = self.model;
        let mut notes = self.notes();
        let (mut ranks, has_host) = self.rank_times();
        let streams = self.stream_times();
        let gpus = self.gpu_times();
        let (imbalance, pooled) = imbalance(&ranks, &has_host);
        let mut findings = self.findings_list();
        if let Some(im) = &imbalance
            && im.ratio >= self.options.imbalance_min_ratio
        {
            findings.push(self.imbalance_finding(im, pooled));
        }
        findings.sort_by(|a, b| b.time_lost_ns.cmp(&a.time_lost_ns).then(a.pattern.cmp(&b.pattern)));
        ranks.retain(|r| r.span_ns > 0 || r.gpu_compute_ns > 0 || r.communication_ns > 0);
        let trace_ns = model.ns(model.length);
        let run_ns = totals::run_ns(&ranks, trace_ns);
        self.nccl_flush();
        let ops = self.stragglers.ops.take().unwrap_or_default();
        let stragglers = std::mem::take(&mut self.stragglers).finish(&self);
        let marks = self.marks.take();
        if let (None, Some(name)) = (&marks, &self.options.iterations) {
            notes.push(format!("iterations: no region named {name} (or {name}#N) in the archive"));
        }
        let (spans, count) = marks.as_ref().map(|m| m.spans()).unwrap_or_default();
        let timelines = std::mem::take(&mut self.timelines);
        if timelines.overflow {
            notes.push(format!(
                "no critical path: the run has more than {} region changes and GPU activities to keep",
                critical::MAX_CHANGES
            ));
        }
        let (critical_path, what_if_gpu, paths) = match timelines.path(&self, &spans) {
            Some(found) => (Some(found.path), found.gpu_what_if, found.iterations),
            None => (None, Vec::new(), Vec::new()),
        };
        let iterations = marks
            .filter(|_| !paths.is_empty())
            .map(|m| crate::analyze::iterations::report(m.name, count, &spans, paths, ops, &self));
        if count > crate::analyze::iterations::MAX_ITERATIONS {
            notes.push(format!(
                "iterations: {count} marked, the first {} analysed",
                crate::analyze::iterations::MAX_ITERATIONS
            ));
        }
        let (in_flight, stuck) = self.stuck();
        // Of a stopped job only: a finished one's kernels all ended.
        let unfinished_kernels = if in_flight.is_empty() { Vec::new() } else { self.unfinished_kernels() };
        let what_if = critical_path.as_ref().map(|p| critical::what_if(p, &ranks)).unwrap_or_default();
        let hot_functions = self.sampled.report(self.defs, &self, &ranks);
        if let Some(f) = findings.iter_mut().find(|f| f.pattern == Pattern::LoadImbalance)
            && let Some(where_) = crate::analyze::sampled::brief(&hot_functions, &f.process, 3)
        {
            f.detail.push_str(&format!("; its computation's samples: {where_}"));
        }
        Analysis {
            archive,
            options: self.options.clone(),
            events: self.events,
            trace_ns,
            run_ns,
            totals: totals::totals(&findings, run_ns),
            findings,
            streams,
            gpus,
            ranks,
            imbalance,
            stragglers,
            critical_path,
            what_if,
            what_if_gpu,
            iterations,
            hot_functions,
            in_flight,
            stuck,
            unfinished_kernels,
            messages: self.pairs,
            notes,
            program: None,
        }
    }

    /// The calls in flight at the end, and per communicator the
    /// collective some ranks wait in that others never entered.
    fn stuck(&self) -> (Vec<crate::analyze::stuck::InFlight>, Vec<crate::analyze::stuck::Stuck>) {
        use crate::analyze::stuck::Member;
        let in_flight = self.noted.in_flight(self);
        if in_flight.is_empty() {
            return (in_flight, Vec::new());
        }
        let mut comms: Vec<_> = self.model.comms.iter().filter(|(_, c)| !c.is_self).collect();
        comms.sort_by_key(|(r, _)| r.id());
        let mut stuck = Vec::new();
        for (&comm, info) in comms {
            let mut members: Vec<Member> = Vec::new();
            for p in info.processes.iter().flatten() {
                if members.iter().any(|m| m.process == *p) {
                    // One process holding several ranks (NCCL driving
                    // several GPUs): not compared.
                    members.clear();
                    break;
                }
                let ended = self.coll_seq.get(&(*p, comm)).copied().unwrap_or(0);
                members.push(Member { process: *p, ended, last: self.last_nccl_call(*p, comm) });
            }
            if members.len() < 2 {
                continue;
            }
            if let Some(c) = self.communicator(comm)
                && let Some(s) = self.noted.stuck(c, &members, self)
            {
                stuck.push(s);
            }
        }
        (in_flight, stuck)
    }

    /// What the pass could not analyse, said in the report.
    fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        let unmatched = self.msgs.iter().flatten().filter(|m| m.analysed).count();
        if unmatched > 0 {
            notes.push(format!("{unmatched} point-to-point messages had no matching send or receive (not analysed)"));
        }
        if self.pairs.received_before_sent > 0 {
            notes.push(format!(
                "{} of {} messages were received before they were sent: the clocks of their hosts disagree",
                self.pairs.received_before_sent, self.pairs.matched
            ));
        }
        if !self.colls.is_empty() {
            notes.push(format!(
                "{} collective operations were not ended by every rank of their communicator (not analysed)",
                self.colls.len()
            ));
        }
        notes
    }

    /// Per process: the busiest host thread's computation, and whether the
    /// process has a host thread at all.
    fn rank_times(&self) -> (Vec<RankTime>, Vec<bool>) {
        let model = self.model;
        let mut ranks: Vec<RankTime> = model
            .processes
            .iter()
            .enumerate()
            .map(|(p, info)| RankTime { process: model.process_label(p), rank: info.rank, ..RankTime::default() })
            .collect();
        let mut has_host = vec![false; ranks.len()];
        for loc in &self.locs {
            if loc.kind != LocationKind::HostThread {
                continue;
            }
            let Some(first) = loc.host.first else { continue };
            let span = model.ns(loc.host.last.saturating_sub(first));
            let r = &mut ranks[loc.process];
            if !has_host[loc.process] || span > r.span_ns {
                has_host[loc.process] = true;
                r.span_ns = span;
                r.computation_ns = span.saturating_sub(model.ns(loc.host.excluded_ns));
                r.mpi_ns = model.ns(loc.host.mpi_ns);
            }
        }
        for (p, acc) in self.procs.iter().enumerate() {
            let r = &mut ranks[p];
            r.gpu_compute_ns = model.ns(acc.compute_ns);
            r.communication_ns = model.ns(acc.comm_ns);
            r.overlap_ns = model.ns(acc.overlap_ns);
        }
        (ranks, has_host)
    }

    fn stream_times(&self) -> Vec<GpuTime> {
        let model = self.model;
        let mut streams = Vec::new();
        for loc in &self.locs {
            if loc.kind != LocationKind::GpuStream {
                continue;
            }
            let s = &loc.stream;
            let (Some(first), Some(last)) = (s.first, s.last_end) else { continue };
            let mut time = s.time.clone();
            time.process = model.process_label(loc.process);
            time.rank = model.processes[loc.process].rank;
            time.location = loc.name.clone();
            time.gpu = loc.gpu.map(|g| model.gpus[g].label.clone());
            time.span_ns = model.ns(last.saturating_sub(first));
            time.busy_ns = time.kernels_ns + time.communication_ns + time.copies_ns + time.memsets_ns;
            time.idle_host_ns = model.ns(time.idle_host_ns);
            time.idle_dependency_ns = model.ns(time.idle_dependency_ns);
            time.idle_unattributed_ns = model.ns(time.idle_unattributed_ns);
            time.busy_ns = time.busy_ns.min(time.span_ns);
            time.idle_ns = time.span_ns - time.busy_ns;
            streams.push(time);
        }
        streams
    }

    fn gpu_times(&self) -> Vec<GpuTime> {
        let model = self.model;
        let mut gpus = Vec::new();
        for (g, gpu) in self.gpus.iter().enumerate() {
            let (Some(first), Some(last)) = (gpu.first, gpu.idle_since) else { continue };
            let mut time = gpu.time.clone();
            if let Some(p) = gpu.process {
                time.process = model.process_label(p);
                time.rank = model.processes[p].rank;
            }
            time.location = model.gpus[g].label.clone();
            time.gpu = Some(model.gpus[g].label.clone());
            time.span_ns = model.ns(last.saturating_sub(first));
            time.busy_ns = time.busy_ns.min(time.span_ns);
            time.idle_ns = time.span_ns - time.busy_ns;
            time.idle_host_ns = model.ns(time.idle_host_ns);
            time.idle_dependency_ns = model.ns(time.idle_dependency_ns);
            time.idle_unattributed_ns = model.ns(time.idle_unattributed_ns);
            gpus.push(time);
        }
        gpus
    }

    /// The load imbalance finding of `im`, over `pooled` ranks.
    fn imbalance_finding(&self, im: &Imbalance, pooled: usize) -> Finding {
        let model = self.model;
        let lost = im.max_ns - im.mean_ns;
        Finding {
            pattern: Pattern::LoadImbalance,
            title: Pattern::LoadImbalance.title(),
            category: Pattern::LoadImbalance.category(),
            rank: im.slowest_rank,
            process: im.slowest.clone(),
            location: String::new(),
            call_path: Vec::new(),
            kernel: None,
            communicator: None,
            communicator_size: None,
            communicator_ranks: None,
            time_lost_ns: lost,
            instances: 1,
            window: Window { start_ns: 0, end_ns: model.ns(model.length) },
            worst: Worst {
                window: Window { start_ns: 0, end_ns: model.ns(model.length) },
                time_lost_ns: lost,
                partner_rank: None,
            },
            bytes: None,
            detail: format!(
                "{} computes {} outside MPI, NCCL and CUDA synchronization, {:.2}x the mean of {} over {} \
                 ranks (min {}); the others wait for it",
                im.slowest,
                crate::numbers::human_ns(im.max_ns),
                im.ratio,
                crate::numbers::human_ns(im.mean_ns),
                pooled,
                crate::numbers::human_ns(im.min_ns)
            ),
        }
    }

    fn findings_list(&mut self) -> Vec<Finding> {
        let model = self.model;
        let mut out = Vec::new();
        let findings = std::mem::take(&mut self.findings);
        for (key, agg) in findings {
            match key.pattern {
                Pattern::SyncApi if agg.instances < self.options.sync_min_calls => continue,
                Pattern::ShortKernels if agg.instances < self.options.short_kernel_min => continue,
                _ if agg.instances == 0 => continue,
                _ => {}
            }
            let (process, location) = match key.place {
                Place::Loc(l) => (Some(self.locs[l].process), self.locs[l].name.clone()),
                Place::Gpu(g) => (self.gpus[g].process, model.gpus[g].label.clone()),
            };
            let (call_path, kernel) = match key.what {
                What::Path(n) => {
                    (self.paths.regions(n).iter().map(|r| self.region_name(*r).to_owned()).collect(), None)
                }
                What::Region(r, n) => (
                    self.paths.regions(n).iter().map(|r| self.region_name(*r).to_owned()).collect(),
                    Some(self.region_name(r).to_owned()),
                ),
            };
            let communicator =
                key.comm.and_then(|c| self.defs.comms.get(&c)).map(|c| self.defs.string(c.name).to_owned());
            let members = key.comm.and_then(|c| model.comms.get(&c)).map(|c| {
                let ranks: Vec<Option<u32>> =
                    c.processes.iter().map(|p| p.and_then(|p| model.processes[p].rank)).collect();
                (ranks.len() as u64, totals::rank_list(&ranks, 8))
            });
            let (ws, we, wl, partner) = agg.worst;
            let worst = Worst { window: Window { start_ns: ws, end_ns: we }, time_lost_ns: wl, partner_rank: partner };
            let mut f = Finding {
                pattern: key.pattern,
                title: key.pattern.title(),
                category: key.pattern.category(),
                rank: process.and_then(|p| model.processes[p].rank),
                process: process.map_or_else(String::new, |p| model.process_label(p)),
                location,
                call_path,
                kernel,
                communicator,
                communicator_size: members.as_ref().map(|m| m.0),
                communicator_ranks: members.map(|m| m.1),
                time_lost_ns: agg.lost,
                instances: agg.instances,
                window: Window { start_ns: agg.first, end_ns: agg.last },
                worst,
                bytes: agg.bytes,
                detail: String::new(),
            };
            f.detail = render::detail(&f, &agg_extra(&agg));
            out.push(f);
        }
        out
    }
}

/// Load imbalance over the processes with host threads (the MPI ranks,
/// when there are any), and how many processes it compares.
fn imbalance(ranks: &[RankTime], has_host: &[bool]) -> (Option<Imbalance>, usize) {
    let mpi = ranks.iter().any(|r| r.rank.is_some());
    let pool: Vec<&RankTime> =
        ranks.iter().enumerate().filter(|(p, r)| has_host[*p] && (!mpi || r.rank.is_some())).map(|(_, r)| r).collect();
    let mut imbalance = None;
    if pool.len() >= 2 {
        let sum: u64 = pool.iter().map(|r| r.computation_ns).sum();
        let mean = sum / pool.len() as u64;
        let slowest = pool.iter().max_by_key(|r| r.computation_ns).expect("two or more");
        let min = pool.iter().map(|r| r.computation_ns).min().unwrap_or(0);
        let ratio = if mean > 0 { slowest.computation_ns as f64 / mean as f64 } else { 1.0 };
        imbalance = Some(Imbalance {
            max_ns: slowest.computation_ns,
            mean_ns: mean,
            min_ns: min,
            ratio,
            slowest: slowest.process.clone(),
            slowest_rank: slowest.rank,
        });
    }
    (imbalance, pool.len())
}

impl Describe for Pass<'_> {
    fn communicator(&self, comm: CommRef) -> Option<(&'static str, String, u64, String)> {
        let info = self.model.comms.get(&comm)?;
        let name = self.defs.comms.get(&comm).map(|c| self.defs.string(c.name).to_owned())?;
        let ranks: Vec<Option<u32>> =
            info.processes.iter().map(|p| p.and_then(|p| self.model.processes[p].rank)).collect();
        let paradigm = if info.is_nccl { "NCCL" } else { "MPI" };
        Some((paradigm, name, ranks.len() as u64, totals::rank_list(&ranks, 8)))
    }

    fn rank(&self, process: usize) -> Option<u32> {
        self.model.processes.get(process).and_then(|p| p.rank)
    }

    fn process(&self, process: usize) -> String {
        self.model.process_label(process)
    }

    fn process_of(&self, loc: usize) -> usize {
        self.locs[loc].process
    }

    fn location(&self, loc: usize) -> String {
        self.locs[loc].name.clone()
    }

    fn region(&self, region: RegionRef) -> String {
        self.region_name(region).to_owned()
    }

    fn activity(&self, node: u32) -> String {
        let outside = || crate::analyze::critical::OUTSIDE.to_string();
        if node == critical::NONE {
            return outside();
        }
        self.paths.regions(node).last().map_or_else(outside, |r| self.region_name(*r).to_owned())
    }

    fn ns(&self, ticks: u64) -> u64 {
        self.model.ns(ticks)
    }

    fn since_start(&self, ticks: u64) -> u64 {
        self.model.ns_since_start(ticks)
    }
}

/// The short-kernel rule's totals, for its sentence.
pub(crate) struct Extra {
    pub all: u64,
    pub kernel_ns: u64,
    pub launch_ns: u64,
}

fn agg_extra(agg: &Agg) -> Extra {
    Extra { all: agg.all, kernel_ns: agg.kernel_ns, launch_ns: agg.launch_ns }
}
