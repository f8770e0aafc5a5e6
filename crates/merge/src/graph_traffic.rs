//! What NCCL moves at each launch of a CUDA graph.
//!
//! A call captured into a graph moves nothing when it is made, and
//! between GPUs of one node NCCL reports nothing to its profiler when the
//! graph is launched. The launch runs the NCCL kernel the call put into
//! the graph, though, and the CUDA agent records that kernel with CUPTI's
//! graph node id. The streams say enough to join the two:
//!
//! - the NCCL plugin defines each captured call's send, receive or
//!   collective, with its thread and the span from the call to the end of
//!   its group, during which NCCL adds its kernel to the graph;
//! - the CUDA agent defines each kernel node made (by the capture, on the
//!   capturing thread) and each copy of one (instantiating a graph copies
//!   its nodes: the kernel records carry the copy's id).
//!
//! The calls of one group are a unit; NCCL adds its kernel to the graph
//! while the group ends, with other nodes (event records and waits, a
//! host callback) whose types CUPTI's callback does not tell apart. Every
//! node the capturing thread made from the unit's first call to its
//! group's end stands for the unit, and so does every node copied from
//! one. A graph launch whose kernels ran as such nodes (their records
//! carry the launch's correlation id) moves the unit's traffic: the event
//! pass writes it on the thread that launched the graph, inside the
//! launch call (`cudaGraphLaunch`), as it writes an NCCL call's traffic
//! inside the call — sends and collective begins where the call begins,
//! receives and collective ends where it ends: one message or collective
//! per captured call and launch, named as the call named it. Where NCCL
//! reported a captured call's launches itself (proxy operations, across
//! nodes) they were recorded as they came, and nothing is added.

use std::collections::{HashMap, HashSet};

use raw::{CapturedOp, Event, RawFile};

use crate::inputs::{Process, StreamDefs};

/// Chains of copies longer than this are not followed (a loop in damaged
/// definitions).
const MAX_COPIES: usize = 64;

/// What each launch of a process's graphs moves.
#[derive(Debug, Default)]
pub struct GraphTraffic {
    /// Per unit: its operations, with the stream whose communicators
    /// they name.
    units: Vec<Vec<(usize, CapturedOp)>>,
    /// Graph node id (as kernel records carry it) → unit.
    nodes: HashMap<u64, usize>,
    /// Graph launches (their correlation ids) → the units they ran.
    launches: HashMap<u32, Vec<usize>>,
}

impl GraphTraffic {
    pub fn is_empty(&self) -> bool {
        self.launches.is_empty()
    }

    /// What the graph launch of correlation id `launch` moved: per unit it
    /// ran, the operations and the stream whose communicators they name.
    pub fn of_launch(&self, launch: u32) -> impl Iterator<Item = &[(usize, CapturedOp)]> {
        self.launches.get(&launch).into_iter().flatten().map(|&u| self.units[u].as_slice())
    }

    /// The unit that a kernel run as graph node `node` stands for.
    fn unit_of(&self, node: u64) -> Option<usize> {
        self.nodes.get(&node).copied()
    }
}

/// The graph traffic of process `p`: its units and nodes from its
/// streams' definitions, its launches from its kernels' records (read
/// only where it captured NCCL calls). Problems reading a chunk leave
/// that chunk's launches out; the event pass reports them.
pub fn of(p: &Process) -> GraphTraffic {
    let mut traffic = units_and_nodes(&p.defs);
    if traffic.nodes.is_empty() {
        return traffic;
    }
    let mut payload = Vec::new();
    for (s, file) in p.streams.iter().enumerate().filter(|(_, f)| f.header.producer == raw::Producer::Cuda) {
        let Some(name) = p.defs[s].strings.iter().find(|(_, v)| *v == raw::GRAPH_NODE_ATTRIBUTE).map(|(k, _)| *k)
        else {
            continue;
        };
        for chunk in &file.chunks {
            if file.read_payload(chunk, &mut payload).is_err() {
                continue;
            }
            let mut node = None;
            for (_, ev) in RawFile::events(chunk, &payload) {
                match ev {
                    Event::Attribute { name: n, value } if n == name => node = Some(value),
                    Event::Attribute { .. } | Event::AttributeString { .. } => {}
                    Event::KernelBegin { correlation, .. } => {
                        if let Some(unit) = node.take().and_then(|n| traffic.unit_of(n)) {
                            let units = traffic.launches.entry(correlation).or_default();
                            if !units.contains(&unit) {
                                units.push(unit);
                            }
                        }
                    }
                    _ => node = None,
                }
            }
        }
    }
    traffic
}

/// The units and their nodes, from a process's streams' definitions;
/// empty unless it captured NCCL calls.
fn units_and_nodes(defs: &[StreamDefs]) -> GraphTraffic {
    let mut traffic = GraphTraffic::default();
    if defs.iter().all(|d| d.graph_captured.is_empty()) {
        return traffic;
    }
    let nodes = defs.iter().flat_map(|d| d.graph_nodes.iter());
    let original: HashMap<u64, u64> = nodes.clone().filter(|n| n.original != 0).map(|n| (n.node, n.original)).collect();
    // Nodes made by capture or the graph API (not copies, which CUPTI
    // also reports as made), per thread in time order.
    let mut made: HashMap<u32, Vec<(u64, u64)>> = HashMap::new();
    for n in nodes.filter(|n| n.original == 0 && !original.contains_key(&n.node)) {
        made.entry(n.thread).or_default().push((n.time, n.node));
    }
    for list in made.values_mut() {
        list.sort_unstable();
    }
    // Units: the captured calls of one group, by (thread, group end).
    let mut windows: HashMap<(u32, u64), usize> = HashMap::new();
    let mut starts: Vec<u64> = Vec::new();
    for (stream, d) in defs.iter().enumerate() {
        for c in d.graph_captured.iter().filter(|c| !d.graph_reported.contains(&c.call)) {
            let unit = *windows.entry((c.thread, c.end)).or_insert_with(|| {
                traffic.units.push(Vec::new());
                starts.push(c.start);
                starts.len() - 1
            });
            traffic.units[unit].push((stream, c.op));
            starts[unit] = starts[unit].min(c.start);
        }
    }
    for (&(thread, end), &unit) in &windows {
        let Some(list) = made.get(&thread) else { continue };
        let from = list.partition_point(|&(t, _)| t < starts[unit]);
        let upto = list.partition_point(|&(t, _)| t <= end);
        for &(_, node) in &list[from..upto.max(from)] {
            traffic.nodes.insert(node, unit);
        }
    }
    let mut seen = HashSet::new();
    for &copy in original.keys() {
        let mut at = copy;
        seen.clear();
        while let Some(&o) = original.get(&at) {
            if seen.len() >= MAX_COPIES || !seen.insert(at) {
                break;
            }
            at = o;
        }
        if let Some(&unit) = traffic.nodes.get(&at).filter(|_| at != copy) {
            traffic.nodes.insert(copy, unit);
        }
    }
    traffic
}

#[cfg(test)]
mod tests {
    use raw::{CapturedOp, Message};

    use super::*;
    use crate::inputs::{Captured, GraphNode};

    fn msg(peer: u32) -> Message {
        Message { peer, comm: 1, tag: 0, bytes: 64 }
    }

    fn node(node: u64, original: u64, thread: u32, time: u64) -> GraphNode {
        GraphNode { node, original, thread, time }
    }

    fn captured(call: u64, thread: u32, start: u64, end: u64, op: CapturedOp) -> Captured {
        Captured { call, thread, start, end, op }
    }

    fn process(cuda: StreamDefs, nccl: StreamDefs) -> Vec<StreamDefs> {
        vec![cuda, nccl]
    }

    #[test]
    fn a_captured_group_runs_with_every_copy_of_the_nodes_it_made() {
        let cuda = StreamDefs {
            graph_nodes: vec![
                // The program's own kernel, captured before the NCCL group.
                node(10, 0, 7, 100),
                // NCCL's kernel and host callback, made inside the
                // group's ncclGroupEnd.
                node(11, 0, 7, 250),
                node(13, 0, 7, 255),
                // The copies CUPTI reports as made too.
                node(21, 0, 7, 400),
                node(23, 0, 7, 400),
                node(23, 13, 7, 400),
                // Another thread's capture at the same time.
                node(12, 0, 8, 240),
                // Instantiated twice; the second instance cloned again.
                node(21, 11, 7, 400),
                node(31, 11, 9, 500),
                node(41, 31, 9, 600),
                node(20, 10, 7, 400),
            ],
            ..StreamDefs::default()
        };
        let nccl = StreamDefs {
            graph_captured: vec![
                captured(1, 7, 200, 260, CapturedOp::Send(msg(1))),
                captured(2, 7, 210, 260, CapturedOp::Recv(msg(3))),
            ],
            ..StreamDefs::default()
        };
        let traffic = units_and_nodes(&process(cuda, nccl));
        assert_eq!(traffic.units, [[(1, CapturedOp::Send(msg(1))), (1, CapturedOp::Recv(msg(3)))]]);
        for n in [11, 13, 21, 23, 31, 41] {
            assert_eq!(traffic.unit_of(n), Some(0), "node {n}");
        }
        for n in [10, 12, 20] {
            assert_eq!(traffic.unit_of(n), None, "node {n}");
        }
    }

    #[test]
    fn nothing_is_added_where_nccl_reported_the_launches_or_no_node_was_made() {
        let cuda = StreamDefs { graph_nodes: vec![node(11, 0, 7, 250), node(21, 11, 7, 400)], ..StreamDefs::default() };
        let mut nccl = StreamDefs {
            graph_captured: vec![
                captured(1, 7, 200, 260, CapturedOp::Send(msg(1))),
                // No node made on its thread within its span.
                captured(2, 7, 300, 350, CapturedOp::Send(msg(2))),
                captured(3, 5, 200, 260, CapturedOp::Send(msg(2))),
            ],
            ..StreamDefs::default()
        };
        nccl.graph_reported.insert(1);
        assert!(units_and_nodes(&process(cuda, nccl)).nodes.is_empty());
    }

    #[test]
    fn a_loop_of_copies_in_damaged_definitions_ends() {
        let cuda = StreamDefs { graph_nodes: vec![node(1, 2, 7, 1), node(2, 1, 7, 2)], ..StreamDefs::default() };
        let nccl = StreamDefs {
            graph_captured: vec![captured(1, 7, 0, 10, CapturedOp::Send(msg(1)))],
            ..StreamDefs::default()
        };
        assert!(units_and_nodes(&process(cuda, nccl)).nodes.is_empty());
    }
}
