//! GPU work under the call path of its launch (`GPUTRACE_UNWINDING`).

use super::Pass;
use crate::sink::{InContext, Sink};

impl<S: Sink> Pass<'_, S> {
    /// Tells the sink the call path of the launch with correlation id
    /// `correlation`, when it had one, before its GPU work's Enter.
    #[inline]
    pub(super) fn launched(&mut self, correlation: u32) {
        if self.plan.launch_paths.is_empty() {
            return;
        }
        let Some(&(stream, frame)) = self.plan.launch_paths.get(&correlation) else { return };
        if let Some(&(context, depth)) = self.plan.samples.get(stream).and_then(|c| c.get(&frame)) {
            self.sink.launched_from(InContext { context, depth });
        }
    }
}
