//! Replaying captured CUPTI buffers into a raw stream, exactly as the live
//! agent would have written it: how the decoding and conversion are tested
//! on a machine without a GPU, from buffers captured on one.

use std::io;
use std::path::Path;

use cupti_sys::CuptiVersion;
use raw::StreamHeader;
use runtime::Recorder;
use runtime::RecorderOptions;

use crate::capture::Capture;
use crate::convert::{Converter, Enabled, Names};
use crate::records::{self, ApiDomain, Record};

impl Names for Capture {
    fn api(&self, domain: ApiDomain, cbid: u32) -> Option<String> {
        self.api_names.get(&(domain, cbid)).cloned()
    }

    fn copy_ends(&self, correlation: u32) -> Option<crate::copies::Ends> {
        self.copy_ends.get(&correlation).copied()
    }
}

/// Decodes the records of a capture.
pub fn decode(capture: &Capture) -> io::Result<Vec<Record>> {
    let major = (capture.library_major != 0).then_some(capture.library_major);
    let version = CuptiVersion::from_api(capture.api_version, major)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
    Ok(capture.records.iter().filter_map(|r| records::decode(version, r)).collect())
}

/// Writes the CUDA stream that `captures` (one process's buffers, in
/// order) make, under `dir/raw/`, with the identity in `header`.
pub fn replay(captures: &[Capture], dir: &Path, header: StreamHeader, enabled: Enabled) -> io::Result<()> {
    replay_then(captures, dir, header, enabled, |_| {})
}

/// [`replay`], with `then` writing more into the stream before it is
/// finished (what the agent's other threads would have: GPU metrics).
pub fn replay_then(
    captures: &[Capture],
    dir: &Path,
    header: StreamHeader,
    enabled: Enabled,
    then: impl FnOnce(&Recorder),
) -> io::Result<()> {
    let pid = header.pid;
    let rec = Recorder::create_with_header(dir, header, RecorderOptions::default())?;
    let mut converter = Converter::new(enabled, pid, |tid| format!("thread {tid}"));
    for c in captures {
        converter.convert(&decode(c)?, c, &rec);
    }
    then(&rec);
    converter.finish(&rec);
    rec.finish();
    Ok(())
}
