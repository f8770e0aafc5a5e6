//! Calling contexts: the call paths of a program as a tree, each node a
//! region (a function), where in it (a source code location) and its
//! caller's node; and the interrupt generators that take samples of them.
//! A `CallingContextSample` event names a node and a generator.

use super::{Definitions, next_id};
use crate::error::Result;
use crate::ffi::global_defs::GlobalDefWriter;
use crate::refs::{CallingContextRef, InterruptGeneratorRef, RegionRef, SourceCodeLocationRef, StringRef};

struct ContextRecord {
    region: RegionRef,
    location: Option<SourceCodeLocationRef>,
    parent: Option<CallingContextRef>,
}

#[derive(Default)]
pub(super) struct CallingDefs {
    locations: Vec<(StringRef, u32)>,
    contexts: Vec<ContextRecord>,
    generators: Vec<(StringRef, u64)>,
}

impl Definitions {
    /// A file and line; not deduplicated (keep the handle).
    pub fn source_code_location(&mut self, file: &str, line: u32) -> SourceCodeLocationRef {
        let id = SourceCodeLocationRef(next_id(self.calling.locations.len(), "source code location"));
        let file = self.string(file);
        self.calling.locations.push((file, line));
        id
    }

    /// A node of the call-path tree: `region` at `location`, called from
    /// `parent` (`None` at the root). Define a parent before its children.
    pub fn calling_context(
        &mut self,
        region: RegionRef,
        location: Option<SourceCodeLocationRef>,
        parent: Option<CallingContextRef>,
    ) -> CallingContextRef {
        let id = CallingContextRef(next_id(self.calling.contexts.len(), "calling context"));
        self.calling.contexts.push(ContextRecord { region, location, parent });
        id
    }

    /// A timer that interrupts the program every `period_ns` ns of CPU
    /// time to take samples.
    pub fn interrupt_generator(&mut self, name: &str, period_ns: u64) -> InterruptGeneratorRef {
        let id = InterruptGeneratorRef(next_id(self.calling.generators.len(), "interrupt generator"));
        let name = self.string(name);
        self.calling.generators.push((name, period_ns));
        id
    }
}

impl CallingDefs {
    /// After the regions they name.
    pub(super) fn write(&self, out: &mut GlobalDefWriter<'_>) -> Result<()> {
        for (id, &(file, line)) in self.locations.iter().enumerate() {
            out.source_code_location(SourceCodeLocationRef(id as u32), file, line)?;
        }
        for (id, c) in self.contexts.iter().enumerate() {
            out.calling_context(CallingContextRef(id as u32), c.region, c.location, c.parent)?;
        }
        for (id, &(name, period)) in self.generators.iter().enumerate() {
            out.interrupt_generator(InterruptGeneratorRef(id as u32), name, period)?;
        }
        Ok(())
    }
}
