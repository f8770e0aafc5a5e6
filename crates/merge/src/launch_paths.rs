//! The call path of the runtime call that launched each piece of GPU
//! work (`GPUTRACE_UNWINDING`): a kernel, copy or memset carries its
//! launch's correlation id; the launch's Enter in the CUDA stream carries
//! the same id, just after the CallPath event of its call path. Read
//! before the event pass, and only from CUDA streams that recorded call
//! paths, so that GPU work written on its stream's location, in any order
//! and on any merge thread, finds the path of its launch (the profile
//! puts it there: [`crate::Sink::launched_from`]).

use std::collections::HashMap;

use raw::{Event, RawFile};

use crate::inputs::Process;

/// Correlation id of a launch → (its stream, its call path's node).
pub type LaunchPaths = HashMap<u32, (usize, u32)>;

/// The launches with a call path of process `p`. A chunk that cannot be
/// read leaves its launches out (the event pass reports it).
pub fn of(p: &Process) -> LaunchPaths {
    let mut paths = LaunchPaths::new();
    let mut payload = Vec::new();
    for (s, file) in p.streams.iter().enumerate() {
        if file.header.producer != raw::Producer::Cuda || p.defs.get(s).is_none_or(|d| d.frames.is_empty()) {
            continue;
        }
        for chunk in &file.chunks {
            if file.read_payload(chunk, &mut payload).is_err() {
                continue;
            }
            paths.extend(in_chunk(RawFile::events(chunk, &payload).map(|(_, e)| e)).map(|(c, f)| (c, (s, f))));
        }
    }
    paths
}

/// (correlation, call path) of each Enter that a CallPath event came just
/// before (attributes between them, as a launch's kernel name, allowed).
fn in_chunk(events: impl Iterator<Item = Event>) -> impl Iterator<Item = (u32, u32)> {
    let mut path = None;
    events.filter_map(move |e| match e {
        Event::CallPath { frame } => {
            path = Some(frame);
            None
        }
        Event::Attribute { .. } | Event::AttributeString { .. } => None,
        Event::EnterCorrelated { correlation, .. } => path.take().map(|f| (correlation, f)),
        _ => {
            path = None;
            None
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_launch_has_the_call_path_recorded_just_before_its_enter() {
        let events = vec![
            Event::CallPath { frame: 7 },
            Event::Attribute { name: 1, value: 2 },
            Event::EnterCorrelated { region: 3, correlation: 40 },
            Event::Leave { region: 3 },
            // A launch without a path, then a path whose Enter never came.
            Event::EnterCorrelated { region: 3, correlation: 41 },
            Event::Leave { region: 3 },
            Event::CallPath { frame: 8 },
            Event::Leave { region: 3 },
            Event::EnterCorrelated { region: 3, correlation: 42 },
            Event::CallPath { frame: 9 },
            Event::EnterCorrelated { region: 5, correlation: 43 },
        ];
        let got: Vec<_> = in_chunk(events.into_iter()).collect();
        assert_eq!(got, [(40, 7), (43, 9)]);
    }
}
