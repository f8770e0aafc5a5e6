//! The NCCL traffic of CUDA graph launches ([`crate::graph_traffic`]),
//! written inside the launch call on the launching thread.

use super::{Pass, Step};
use crate::sink::{Record, Sink};

impl<S: Sink> Pass<'_, S> {
    /// A call of correlation id `launch` began: if it launched a graph
    /// that runs NCCL calls captured into it, what they send, and the
    /// collectives they begin ([`crate::graph_traffic`]).
    pub(super) fn graph_launch_begins(&mut self, t: u64, stream: usize, region: u32, launch: u32) -> Step {
        let plan = self.plan;
        let Some((region, _)) = self.region(stream, region) else { return Ok(()) };
        for ops in plan.graph_traffic.of_launch(launch) {
            self.graph_launch = Some((region, launch));
            for &(s, op) in ops {
                match op {
                    raw::CapturedOp::Send(m) => {
                        let m = self.message(s, &m, None);
                        self.sink.send(t, &[], &m)?;
                    }
                    raw::CapturedOp::Collective(_) => self.emit(t, &[], Record::CollectiveBegin)?,
                    raw::CapturedOp::Recv(_) => {}
                }
            }
        }
        Ok(())
    }

    /// The Leave of `region` while a graph launch call with NCCL traffic
    /// is open: at the call's end, what its captured calls receive and
    /// the ends of their collectives.
    pub(super) fn graph_launch_ends(&mut self, t: u64, stream: usize, region: u32) -> Step {
        let Some((open, launch)) = self.graph_launch else { return Ok(()) };
        if self.region(stream, region).map(|r| r.0) != Some(open) {
            return Ok(());
        }
        self.graph_launch = None;
        let plan = self.plan;
        for ops in plan.graph_traffic.of_launch(launch) {
            for &(s, op) in ops {
                match op {
                    raw::CapturedOp::Recv(m) => {
                        let m = self.message(s, &m, None);
                        if m.comm.is_some() {
                            self.sink.recv(t, &[], &m)?;
                        }
                    }
                    raw::CapturedOp::Collective(k) => self.collective_end(t, s, &k, None)?,
                    raw::CapturedOp::Send(_) => {}
                }
            }
        }
        Ok(())
    }
}
