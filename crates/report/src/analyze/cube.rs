//! The MPI wait states as a Cube profile, `scout.cubex`, as Scalasca's
//! trace analyzer (Scout) writes its findings next to the archive: one
//! metric per pattern, in seconds, under `wait_states`, at the call path
//! and on the location where the time was lost.
//!
//! The metrics are named as Scalasca's: `mpi_latesender`,
//! `mpi_latereceiver`, `mpi_wait_nxn`, `mpi_barrier_wait`,
//! `mpi_latebroadcast`, `mpi_earlyreduce` (exclusive along the call tree,
//! DOUBLE, `sec`), children of `wait_states`. Along the metric tree Cube
//! reads what is stored as inclusive, as Scalasca writes it (its `time`
//! holds `execution`, which holds `mpi`...): a parent's value at a call
//! path and location is its children's and its own, and Cube shows a
//! parent's own (exclusive) value as the stored one less its children's.
//! So `wait_states` stores the sum of the patterns at each call path and
//! location (its own share is zero). Stored as 0, Cube showed it as 0 and
//! each pattern's own value as minus the other patterns'. The call tree is the findings' call paths (each region by
//! its name) under one root named after the program (the archive's
//! program region, as Score-P's profiles have it), the system tree one
//! machine with one group per process and a location per thread that
//! waited.

use std::collections::HashMap;
use std::path::Path;

use cube::{CnodeId, Cube, DataType, GroupType, LocationId, LocationType, Metric, MetricId, MetricKind, Region};

use super::{Analysis, Pattern};
use crate::{Error, Result};

/// Scalasca's unique name and display name of a wait-state pattern.
pub fn metric_names(p: Pattern) -> Option<(&'static str, &'static str)> {
    Some(match p {
        Pattern::LateSender => ("mpi_latesender", "Late Sender"),
        Pattern::LateReceiver => ("mpi_latereceiver", "Late Receiver"),
        Pattern::WaitAtNxN => ("mpi_wait_nxn", "Wait at N x N"),
        Pattern::WaitAtBarrier => ("mpi_barrier_wait", "Wait at Barrier"),
        Pattern::LateBroadcast => ("mpi_latebroadcast", "Late Broadcast"),
        Pattern::EarlyReduce => ("mpi_earlyreduce", "Early Reduce"),
        _ => return None,
    })
}

/// The wait states of `analysis` as a cube, its call paths under the
/// program's name (`program` when the archive has none).
pub fn wait_state_cube(analysis: &Analysis) -> std::result::Result<Cube, cube::Error> {
    let root = analysis.program.as_deref().unwrap_or("program");
    let mut c = Cube::new();
    c.attribute("Creator", concat!("gputrace ", env!("CARGO_PKG_VERSION"), " analyze"));
    let sec = |unique, display| Metric::new(unique, display, DataType::Double, MetricKind::Exclusive, "sec");
    let all = c.metric(
        sec("wait_states", "MPI wait states").description("time lost waiting in MPI, by pattern (Scalasca's)"),
        None,
    )?;
    let mut metrics: HashMap<Pattern, MetricId> = HashMap::new();
    for p in Pattern::ALL {
        if let Some((unique, display)) = metric_names(p) {
            metrics.insert(p, c.metric(sec(unique, display), Some(all))?);
        }
    }
    let machine = c.system_tree_node("machine", "machine", None)?;
    // Processes in rank order, then the others, each with its threads.
    let mut processes: Vec<(Option<u32>, String)> =
        analysis.ranks.iter().map(|r| (r.rank, r.process.clone())).collect();
    for f in &analysis.findings {
        if !processes.iter().any(|(_, p)| *p == f.process) {
            processes.push((f.rank, f.process.clone()));
        }
    }
    processes.sort_by_key(|(rank, name)| (rank.is_none(), *rank, name.clone()));
    let mut groups = HashMap::new();
    for (i, (rank, name)) in processes.iter().enumerate() {
        let rank = rank.map_or(i as i64, i64::from);
        groups.insert(name.clone(), c.location_group(name, rank, GroupType::Process, machine)?);
    }
    let mut regions: HashMap<String, cube::RegionId> = HashMap::new();
    let mut cnodes: HashMap<Vec<String>, CnodeId> = HashMap::new();
    let root_region = c.region(Region::new(root, "measurement", "artificial"));
    let root_node = c.cnode(root_region, None)?;
    let mut threads = Threads { groups, made: HashMap::new(), per_group: HashMap::new() };
    for f in analysis.findings.iter().filter(|f| metrics.contains_key(&f.pattern)) {
        let mut parent = Some(root_node);
        for depth in 1..=f.call_path.len() {
            let path = f.call_path[..depth].to_vec();
            let node = match cnodes.get(&path) {
                Some(&n) => n,
                None => {
                    let name = &path[depth - 1];
                    let region = *regions.entry(name.clone()).or_insert_with(|| {
                        let paradigm = if name.starts_with("MPI_") { "mpi" } else { "user" };
                        c.region(Region::new(name, paradigm, "function"))
                    });
                    let n = c.cnode(region, parent)?;
                    cnodes.insert(path, n);
                    n
                }
            };
            parent = Some(node);
        }
        let Some(cnode) = parent.filter(|_| !f.call_path.is_empty()) else { continue };
        let Some(location) = threads.get(&mut c, &f.process, &f.location)? else { continue };
        let lost = f.time_lost_ns as f64 / 1e9;
        c.add(metrics[&f.pattern], cnode, location, lost)?;
        c.add(all, cnode, location, lost)?;
    }
    // The critical path as Scalasca's critical-path profile: each step's
    // time at its activity (computation nothing annotated at the root)
    // and thread or GPU stream (a location of its process, as a thread).
    if let Some(path) = &analysis.critical_path {
        let critical = c.metric(
            sec("critical_path", "Critical path")
                .description("time on the critical path: the activities that decided the run's length"),
            None,
        )?;
        for step in &path.steps {
            let cnode = if step.activity == super::critical::OUTSIDE {
                root_node
            } else {
                let key = vec![step.activity.clone()];
                match cnodes.get(&key) {
                    Some(&n) => n,
                    None => {
                        let paradigm = match () {
                            _ if step.on_gpu => "cuda",
                            _ if step.activity.starts_with("MPI_") => "mpi",
                            _ => "user",
                        };
                        let region = *regions
                            .entry(step.activity.clone())
                            .or_insert_with(|| c.region(Region::new(&step.activity, paradigm, "function")));
                        let n = c.cnode(region, Some(root_node))?;
                        cnodes.insert(key, n);
                        n
                    }
                }
            };
            let Some(location) = threads.get(&mut c, &step.process, &step.location)? else { continue };
            c.add(critical, cnode, location, step.time_ns as f64 / 1e9)?;
        }
    }
    Ok(c)
}

/// The cube's threads by (process, thread name), made on first use in
/// their process's group.
struct Threads {
    groups: HashMap<String, cube::GroupId>,
    made: HashMap<(String, String), LocationId>,
    per_group: HashMap<String, i64>,
}

impl Threads {
    /// The thread `name` of `process`; `None` for a process the cube has
    /// no group for.
    fn get(&mut self, c: &mut Cube, process: &str, name: &str) -> std::result::Result<Option<LocationId>, cube::Error> {
        let key = (process.to_string(), name.to_string());
        if let Some(&l) = self.made.get(&key) {
            return Ok(Some(l));
        }
        let Some(&group) = self.groups.get(process) else { return Ok(None) };
        let n = self.per_group.entry(process.to_string()).or_default();
        let l = c.location(name, *n, LocationType::Thread, group)?;
        *n += 1;
        self.made.insert(key, l);
        Ok(Some(l))
    }
}

/// Writes the wait states of `analysis` to `path` (`scout.cubex`), the
/// file complete or not there; its size.
pub fn write_wait_states(analysis: &Analysis, path: &Path) -> Result<u64> {
    let fail = |source| Error::Cube { path: path.to_path_buf(), source };
    let c = wait_state_cube(analysis).map_err(fail)?;
    if c.location_count() == 0 || c.cnode_count() < 2 {
        // No wait state: no file (a cube needs a location and a call path).
        let _ = std::fs::remove_file(path);
        return Ok(0);
    }
    c.write_to(path).map_err(fail)
}
