//! The profile as a [`Sink`] of the merge's pass: visits, durations and
//! bytes added to the current call path, on the hot path of every event.

use merge::sink::{InContext, Message, SinkError};
use merge::{Record, Sink, Work};
use otf2::{AttributeRef, AttributeValue, RegionRef};

use crate::Profile;
use crate::call_tree::{Kind, ROOT};

impl Sink for Profile {
    #[inline(always)]
    fn enter(
        &mut self,
        t: u64,
        _: &[(AttributeRef, AttributeValue)],
        _: RegionRef,
        index: usize,
        work: Work,
    ) -> Result<(), SinkError> {
        self.event(t);
        let parent = match self.launched.take() {
            None => self.current,
            Some(cx) => self.launch_node(cx).unwrap_or(self.current),
        };
        self.visit(parent, index, work);
        Ok(())
    }

    /// A call in its calling context: under its caller's functions.
    fn enter_in(
        &mut self,
        t: u64,
        _: &[(AttributeRef, AttributeValue)],
        _: RegionRef,
        index: usize,
        work: Work,
        cx: InContext,
    ) -> Result<(), SinkError> {
        self.event(t);
        let parent = self.caller_node(cx).unwrap_or(self.current);
        self.visit(parent, index, work);
        Ok(())
    }

    fn launched_from(&mut self, cx: InContext) {
        self.launched = Some(cx);
    }

    #[inline(always)]
    fn leave(
        &mut self,
        t: u64,
        _: &[(AttributeRef, AttributeValue)],
        _: RegionRef,
        _: usize,
        duration: u64,
    ) -> Result<(), SinkError> {
        self.event(t);
        let n = self.current;
        if n == ROOT {
            return Ok(());
        }
        let node = &mut self.nodes[n as usize];
        node.acc.time += duration;
        match node.kind {
            Kind::Call => {}
            Kind::Kernel => node.acc.kernel += duration,
            Kind::Copy => node.acc.copy += duration,
            Kind::Memset => node.acc.memset += duration,
        }
        let parent = node.parent;
        self.ascend(n, parent);
        Ok(())
    }

    #[inline(always)]
    fn send(&mut self, t: u64, _: &[(AttributeRef, AttributeValue)], msg: &Message) -> Result<(), SinkError> {
        self.event(t);
        self.acc(self.current).sent += msg.bytes;
        Ok(())
    }

    #[inline(always)]
    fn recv(&mut self, t: u64, _: &[(AttributeRef, AttributeValue)], msg: &Message) -> Result<(), SinkError> {
        self.event(t);
        self.acc(self.current).received += msg.bytes;
        Ok(())
    }

    #[inline(always)]
    fn record(&mut self, t: u64, _: &[(AttributeRef, AttributeValue)], r: &Record) -> Result<(), SinkError> {
        match *r {
            // Samples of a metric location are not work of the program.
            Record::Metric { .. } => {}
            Record::Sample { context, generator, .. } => {
                let period = self.sampled.periods.get(&generator.id()).copied().unwrap_or(0);
                if let Some(n) = self.context_node(ROOT, context.id()) {
                    let a = self.acc(n);
                    a.hits += 1;
                    a.sampled += period;
                }
            }
            Record::CollectiveEnd { sent, received, .. } => {
                self.event(t);
                let a = self.acc(self.current);
                a.sent += sent;
                a.received += received;
            }
            _ => self.event(t),
        }
        Ok(())
    }
}

impl Profile {
    /// A visit of region `index` under `parent`, entered.
    #[inline(always)]
    fn visit(&mut self, parent: u32, index: usize, work: Work) {
        let n = self.child(parent, index, work);
        let a = self.acc(n);
        a.visits += 1;
        match work {
            Work::Copy { bytes, .. } => a.copy_bytes += bytes,
            Work::Memset { bytes } => a.memset_bytes += bytes,
            Work::Call | Work::Kernel => {}
        }
        self.descend(parent, n);
    }
}
