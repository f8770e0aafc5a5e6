//! The GPU's work (kernels, graph executions, copies, memsets) as
//! intervals on their streams' locations.

use std::collections::HashMap;

use raw::{Event, MemCopy, MemoryKind, PeerEnds, RegionRole};
use recorder::Recorder;

use super::{Converter, DESTINATION_ADDRESS, Interval, Names, Pre, SOURCE_ADDRESS, push_with};
use crate::names;
use crate::records::{GraphNode, Record, Span};

impl Converter {
    /// The GPU's work: kernels, graph executions, copies and memsets, each
    /// an interval on its stream's location.
    pub(super) fn work(
        &mut self,
        r: &Record,
        names: &dyn Names,
        rec: &Recorder,
        out: &mut HashMap<u32, Vec<Interval>>,
    ) {
        let e = self.enabled;
        match *r {
            Record::Kernel { span, correlation, name, config, graph } => {
                if !e.kernel {
                    return;
                }
                let Some(region) = self.kernel_region(name, names, rec) else {
                    return;
                };
                let loc = self.stream_location(&span, rec);
                let pre = self.graphs.attributes(graph, rec);
                let begin = Event::KernelBegin { region, correlation, config };
                push_with(out, loc, span.start, span.end, begin, Event::Leave { region }, Pre::of(pre));
            }
            Record::GraphTrace { span, correlation, graph } => {
                let Some(region) = self.graphs.region(graph, rec) else {
                    return;
                };
                let loc = self.stream_location(&span, rec);
                let (name, value) = self.graphs.execution_attribute(graph, rec);
                let mut pre = Pre::NONE;
                pre.push(name, value);
                let begin = Event::EnterCorrelated { region, correlation };
                push_with(out, loc, span.start, span.end, begin, Event::Leave { region }, pre);
            }
            Record::Memcpy { span, correlation, bytes, kind, src, dst, graph } => {
                let kind = names::copy_kind(kind);
                // Copies between GPUs come with both ends from the peer
                // records (MEMCPY2); their plain records would count twice.
                if !e.memcpy || kind == raw::CopyKind::PeerToPeer {
                    return;
                }
                let ends = names.copy_ends(correlation);
                self.copy(out, rec, &span, correlation, kind, bytes, (src, dst), None, graph, ends);
            }
            Record::PeerCopy { span, correlation, bytes, src, dst, ends, graph } => {
                if !e.peer {
                    return;
                }
                let peer = PeerEnds {
                    src_device: ends[0].0,
                    src_context: ends[0].1,
                    dst_device: ends[1].0,
                    dst_context: ends[1].1,
                };
                let kind = raw::CopyKind::PeerToPeer;
                let ends = names.copy_ends(correlation);
                self.copy(out, rec, &span, correlation, kind, bytes, (src, dst), Some(peer), graph, ends);
            }
            Record::Memset { span, correlation, bytes, memory, graph } => {
                if !e.memset {
                    return;
                }
                let Some(region) = self.named_region(names::MEMSET_REGION, RegionRole::DataTransfer, rec) else {
                    return;
                };
                let loc = self.stream_location(&span, rec);
                let memory = MemoryKind::from_u8(memory.min(255) as u8);
                let begin = Event::MemsetBegin { region, correlation, bytes, memory };
                let pre = self.graphs.attributes(graph, rec);
                push_with(out, loc, span.start, span.end, begin, Event::Leave { region }, Pre::of(pre));
            }
            _ => {}
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn copy(
        &mut self,
        out: &mut HashMap<u32, Vec<Interval>>,
        rec: &Recorder,
        span: &Span,
        correlation: u32,
        kind: raw::CopyKind,
        bytes: u64,
        (src, dst): (u8, u8),
        peer: Option<PeerEnds>,
        graph: GraphNode,
        ends: Option<crate::copies::Ends>,
    ) {
        let Some(region) = self.named_region(names::copy_region(kind), RegionRole::DataTransfer, rec) else {
            return;
        };
        let loc = self.stream_location(span, rec);
        let id = self.next_copy;
        self.next_copy += 1;
        let copy = MemCopy {
            region,
            correlation,
            kind,
            src: MemoryKind::from_u8(src),
            dst: MemoryKind::from_u8(dst),
            bytes,
            peer,
            id,
        };
        let mut pre = Pre::of(self.graphs.attributes(graph, rec));
        if let Some((src, dst)) = ends {
            let (src_name, dst_name) = *self
                .address_names
                .get_or_insert_with(|| (rec.intern(SOURCE_ADDRESS), rec.intern(DESTINATION_ADDRESS)));
            pre.push(src_name, src);
            pre.push(dst_name, dst);
        }
        push_with(out, loc, span.start, span.end, Event::CopyBegin(copy), Event::CopyEnd { region, id }, pre);
    }
}
