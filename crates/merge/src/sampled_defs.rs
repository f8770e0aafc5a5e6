//! The raw definitions of the sampled stacks (modules, native and Python
//! frames, the period) as a stream's definitions keep them.

use raw::Definition;

use crate::inputs::StreamDefs;

/// What a node of the sampled stacks' tree is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameAt {
    /// A native frame: the address to look up.
    Native(u64),
    /// A Python frame: its code object (a [`PyCode`]) and line.
    Python { code: u32, line: u32 },
}

/// A Python code object of the sampled stacks: qualified name, file, first
/// line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PyCode {
    pub name: String,
    pub file: String,
    pub line: u32,
}

/// A definition of the sampled stacks.
pub(crate) fn sampling_def(d: &mut StreamDefs, def: &Definition) {
    match def {
        Definition::Module(m) => d.modules.push(m.clone()),
        &Definition::Frame { id, parent, address } => {
            d.frames.insert(id, (parent, FrameAt::Native(address)));
        }
        &Definition::PyFrame { id, parent, code, line } => {
            d.frames.insert(id, (parent, FrameAt::Python { code, line }));
        }
        Definition::PyCode { id, name, file, line } => {
            d.py_codes.insert(*id, PyCode { name: name.clone(), file: file.clone(), line: *line });
        }
        &Definition::SamplingPeriod { ns } => d.sampling_period = ns,
        _ => {}
    }
}
