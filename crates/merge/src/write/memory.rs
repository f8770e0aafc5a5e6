//! Allocations, frees and memory pools: zero-length regions on the
//! memory location with their attributes.

use otf2::{AttributeRef, AttributeValue};

use super::{Pass, Step};
use crate::sink::{Sink, Work};

impl<S: Sink> Pass<'_, S> {
    /// An allocation or free: a zero-length region on the memory location
    /// with the allocation's address, bytes, memory kind and stream.
    pub(super) fn memory_op(&mut self, t: u64, stream: usize, m: &raw::MemoryOp) -> Step {
        let mut attrs = Vec::with_capacity(6);
        if let Some(a) = self.cuda() {
            attrs.push((a.correlation, m.correlation.into()));
            attrs.push((a.bytes, m.bytes.into()));
            let kind = self.string(m.memory.name());
            attrs.push((a.memory, kind));
        }
        if let Some(a) = self.named_attribute("address", "address of the allocation", otf2::Type::U64) {
            attrs.push((a, AttributeValue::U64(m.address)));
        }
        if let Some(a) =
            self.named_attribute("CUDA stream", "CUPTI stream id of a stream-ordered allocation", otf2::Type::U32)
        {
            attrs.push((a, AttributeValue::U32(m.stream)));
        }
        if m.flags != 0
            && let Some(a) = self.named_attribute(
                "allocation flags",
                "1 stream-ordered, 2 from a memory pool, 4 from an imported pool",
                otf2::Type::U32,
            )
        {
            attrs.push((a, AttributeValue::U32(u32::from(m.flags))));
        }
        self.zero_length(t, stream, m.region, &attrs)
    }

    /// A memory pool created, destroyed or trimmed.
    pub(super) fn memory_pool(&mut self, t: u64, stream: usize, p: &raw::PoolOp) -> Step {
        let mut attrs = Vec::with_capacity(5);
        if let Some(a) = self.cuda() {
            attrs.push((a.correlation, p.correlation.into()));
        }
        let fields = [
            ("address", "address of the allocation", p.address),
            ("pool size", "bytes the memory pool holds", p.size),
            ("pool release threshold", "bytes the pool keeps when it is trimmed", p.release_threshold),
            ("pool bytes in use", "bytes of the pool allocated", p.utilized),
        ];
        for (name, description, value) in fields {
            if let Some(a) = self.named_attribute(name, description, otf2::Type::U64) {
                attrs.push((a, AttributeValue::U64(value)));
            }
        }
        self.zero_length(t, stream, p.region, &attrs)
    }

    fn zero_length(&mut self, t: u64, stream: usize, region: u32, attrs: &[(AttributeRef, AttributeValue)]) -> Step {
        let Some((r, index)) = self.region(stream, region) else {
            return Ok(());
        };
        self.enter_region(t, attrs, r, index, Work::Call)?;
        self.stack.pop();
        self.leave_region(t, r, index, 0)
    }
}
