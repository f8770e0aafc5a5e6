//! CUDA graphs in the raw stream.
//!
//! A kernel, copy or memset that ran as a node of a graph is written with
//! two attribute events before its begin event, `CUDA graph id` and `CUDA
//! graph node id` (CUPTI's ids), which the merge attaches to the region's
//! Enter in the archive; work outside graphs gets none, so tracing it
//! costs nothing more. Its correlation id is the graph launch's
//! (`cudaGraphLaunch`, `cuGraphLaunch`), which ties the launch call to
//! every node it ran.
//!
//! With `graph` in `GPUTRACE_CUDA_ENABLE` CUPTI reports one record per
//! graph execution instead of the nodes' records; each becomes a region
//! `CUDA graph <id>` on the stream it was launched into, entered with the
//! launch's correlation id and carrying the graph id too.
//!
//! With `kernel` the agent also notes each kernel node as it is made, by
//! stream capture or the graph API, and as instantiating (or cloning) a
//! graph copies it: CUPTI's node ids, the thread and the time
//! ([`raw::Definition::GraphNode`]). A graph's kernel records carry the
//! id of the copy; the chain of copies leads to the node made inside the
//! call that captured it, e.g. an NCCL call, whose traffic the merge then
//! adds at every run of that kernel.

use std::collections::HashMap;

use cupti_sys::{self as sys, Cupti};
use raw::{Paradigm, RegionRole};
use recorder::Recorder;

use crate::records::GraphNode;

/// The name of the attribute that holds a graph's id.
pub const GRAPH_ID: &str = "CUDA graph id";
/// The name of the attribute that holds a graph node's id.
pub const GRAPH_NODE_ID: &str = raw::GRAPH_NODE_ATTRIBUTE;
/// The region group of graph executions.
pub const GRAPH_GROUP: &str = "CUDA graph";

/// The name of the region of graph `id`'s executions.
pub fn region_name(id: u32) -> String {
    format!("CUDA graph {id}")
}

/// The resource callbacks of kernel nodes made and cloned, when kernels
/// are recorded (a cost per node made, none per launch).
pub fn node_callbacks(kernels: bool) -> impl Iterator<Item = u32> {
    let both = [sys::CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, sys::CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED];
    kernels.then_some(both).into_iter().flatten()
}

/// The definition of a kernel node made (`GRAPHNODE_CREATED`) or cloned
/// (`GRAPHNODE_CLONED`) on this thread now; `None` for other nodes, or
/// where CUPTI cannot name them.
///
/// # Safety
///
/// `resource` is the data CUPTI passed to the resource callback `cbid`.
pub unsafe fn node_made(cupti: &Cupti, cbid: u32, resource: &sys::CUpti_ResourceData) -> Option<raw::Definition> {
    cupti.get_graph_node_id?;
    let data = resource.resourceDescriptor as *const sys::CUpti_GraphData;
    if data.is_null() {
        return None;
    }
    // SAFETY: for the graph callbacks the descriptor is a CUpti_GraphData,
    // valid during the callback.
    let data = unsafe { *data };
    if data.nodeType != sys::CU_GRAPH_NODE_TYPE_KERNEL {
        return None;
    }
    // SAFETY: a node handle from CUPTI's data, alive during the callback.
    let id = |node: sys::CUgraphNode| unsafe { cupti.graph_node_id(node) }?.ok();
    let node = id(data.node)?;
    let original = if cbid == sys::CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED { id(data.originalNode)? } else { 0 };
    let (thread, time) = (recorder::identity::thread_id(), gputrace_clock::now());
    Some(raw::Definition::GraphNode { node, original, thread, time })
}

/// The graph-related definitions of one process, made on first use.
#[derive(Default)]
pub struct Graphs {
    /// String ids of [`GRAPH_ID`] and [`GRAPH_NODE_ID`].
    names: Option<(u32, u32)>,
    regions: HashMap<u32, Option<u32>>,
}

impl Graphs {
    /// The attributes, (name, value), of the begin event of work that ran
    /// as `node`; `None` for work outside graphs.
    pub fn attributes(&mut self, node: GraphNode, rec: &Recorder) -> Option<[(u32, u64); 2]> {
        if !node.is_graph() {
            return None;
        }
        let (graph, node_name) = self.names(rec);
        Some([(graph, u64::from(node.graph)), (node_name, node.node)])
    }

    /// The attribute, (name, value), of a graph execution's region.
    pub fn execution_attribute(&mut self, graph: u32, rec: &Recorder) -> (u32, u64) {
        let (name, _) = self.names(rec);
        (name, u64::from(graph))
    }

    /// The region of graph `graph`'s executions; `None` when filtered out.
    pub fn region(&mut self, graph: u32, rec: &Recorder) -> Option<u32> {
        *self
            .regions
            .entry(graph)
            .or_insert_with(|| rec.region(&region_name(graph), None, Paradigm::Cuda, RegionRole::Function, GRAPH_GROUP))
    }

    fn names(&mut self, rec: &Recorder) -> (u32, u32) {
        *self.names.get_or_insert_with(|| (rec.intern(GRAPH_ID), rec.intern(GRAPH_NODE_ID)))
    }
}

#[cfg(test)]
mod tests {
    use cupti_sys::{self as sys, CuptiVersion, v12_9, v13_0, v13_5};

    use crate::records::{GraphNode, Record, decode};
    use crate::synthetic::record;

    const GRAPH: GraphNode = GraphNode { graph: 7, node: 0x1_0000_0042 };

    fn version(api: u32) -> CuptiVersion {
        CuptiVersion::from_api(api, Some(if api > 99 { 13 } else { 12 })).unwrap()
    }

    macro_rules! work {
        ($ty:ty, $kind:expr) => {
            // SAFETY: a bindings record struct; fields are set one by one.
            unsafe {
                record::<$ty>(|r| {
                    r.kind = $kind;
                    r.start = 100;
                    r.end = 200;
                    r.correlationId = 55;
                    r.graphId = GRAPH.graph;
                    r.graphNodeId = GRAPH.node;
                })
            }
        };
    }

    fn graph_of(r: Record) -> (GraphNode, u32) {
        match r {
            Record::Kernel { graph, correlation, .. }
            | Record::Memcpy { graph, correlation, .. }
            | Record::Memset { graph, correlation, .. }
            | Record::PeerCopy { graph, correlation, .. } => (graph, correlation),
            other => panic!("not GPU work: {other:?}"),
        }
    }

    /// Kernels, copies and memsets of each release keep their graph and
    /// node ids and the launch's correlation id through decoding.
    #[test]
    fn graph_ids_decode_in_every_release() {
        let kernel = sys::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        let (memcpy, memset) = (sys::CUPTI_ACTIVITY_KIND_MEMCPY, sys::CUPTI_ACTIVITY_KIND_MEMSET);
        let peer = sys::CUPTI_ACTIVITY_KIND_MEMCPY2;
        let cases: Vec<(u32, Vec<u8>)> = vec![
            (24, work!(v12_9::CUpti_ActivityKernel9, kernel)),
            (24, work!(v12_9::CUpti_ActivityMemcpy5, memcpy)),
            (24, work!(v12_9::CUpti_ActivityMemset4, memset)),
            (28, work!(v12_9::CUpti_ActivityMemcpy6, memcpy)),
            (28, work!(v12_9::CUpti_ActivityMemcpyPtoP4, peer)),
            (130_001, work!(v13_0::CUpti_ActivityKernel10, kernel)),
            (130_001, work!(v13_0::CUpti_ActivityMemcpy6, memcpy)),
            (130_001, work!(v13_0::CUpti_ActivityMemset4, memset)),
            (130_101, work!(v13_5::CUpti_ActivityKernel11, kernel)),
            (130_301, work!(v13_5::CUpti_ActivityKernel12, kernel)),
            (130_500, work!(v13_5::CUpti_ActivityKernel13, kernel)),
            (130_500, work!(v13_5::CUpti_ActivityMemcpy7, memcpy)),
            (130_500, work!(v13_5::CUpti_ActivityMemset5, memset)),
        ];
        for (api, bytes) in cases {
            let r = decode(version(api), &bytes).unwrap();
            assert_eq!(graph_of(r), (GRAPH, 55), "API {api}: {r:?}");
        }
    }

    #[test]
    fn work_outside_graphs_has_no_graph() {
        // SAFETY: as in `work!`.
        let bytes = unsafe {
            record::<v13_0::CUpti_ActivityKernel10>(|r| {
                r.kind = sys::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
                r.correlationId = 3;
            })
        };
        let (graph, _) = graph_of(decode(version(130_001), &bytes).unwrap());
        assert_eq!(graph, GraphNode::default());
        assert!(!graph.is_graph());
    }

    /// GRAPH_TRACE records, `GraphTrace` (12.0 to 12.2) and `GraphTrace2`
    /// (12.3 on), decode to one graph execution on its stream.
    #[test]
    fn graph_trace_records_decode() {
        macro_rules! trace {
            ($ty:ty) => {
                // SAFETY: as in `work!`.
                unsafe {
                    record::<$ty>(|r| {
                        r.kind = sys::CUPTI_ACTIVITY_KIND_GRAPH_TRACE;
                        r.correlationId = 91;
                        r.start = 1_000;
                        r.end = 5_000;
                        r.deviceId = 1;
                        r.contextId = 2;
                        r.streamId = 13;
                        r.graphId = 7;
                    })
                }
            };
        }
        for (api, bytes) in [
            (20, trace!(v12_9::CUpti_ActivityGraphTrace)),
            (28, trace!(v12_9::CUpti_ActivityGraphTrace2)),
            (130_001, trace!(v13_0::CUpti_ActivityGraphTrace2)),
            (130_500, trace!(v13_5::CUpti_ActivityGraphTrace2)),
        ] {
            match decode(version(api), &bytes).unwrap() {
                Record::GraphTrace { span, correlation, graph } => {
                    assert_eq!(
                        (span.start, span.end, span.device, span.context, span.stream),
                        (1_000, 5_000, 1, 2, 13)
                    );
                    assert_eq!((correlation, graph), (91, 7));
                }
                other => panic!("API {api}: {other:?}"),
            }
        }
        // Too short for the struct of its release: refused, not misread.
        let short = trace!(v12_9::CUpti_ActivityGraphTrace2);
        assert_eq!(decode(version(28), &short[..40]), None);
    }
}
