//! Replaying captured CUPTI buffers into a raw stream, exactly as the live
//! agent would have written it: how the decoding and conversion are tested
//! on a machine without a GPU, from buffers captured on one.

use std::io;
use std::path::Path;

use cupti_sys::CuptiVersion;
use raw::StreamHeader;
use recorder::Recorder;
use recorder::RecorderOptions;

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
        let records = decode(c)?;
        // What the live agent counts as undecodable, this stream counts.
        rec.note_lost(raw::SourceLoss::CuptiUndecodable, (c.records.len() - records.len()) as u64);
        // And what CUPTI said it dropped.
        rec.note_lost(raw::SourceLoss::CuptiDropped, c.dropped);
        converter.convert(&records, c, &rec);
    }
    then(&rec);
    converter.finish(&rec);
    rec.finish();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use raw::{Definition, RawFile, SourceLoss};

    fn header(pid: u32) -> StreamHeader {
        StreamHeader {
            producer: raw::Producer::Cuda,
            host: "gpu-node".into(),
            pid,
            process_start: 1,
            clock_domain: 7,
            monotonic_ns: 1,
            realtime_ns: 1,
            rank_hint: None,
            command: vec!["replayed".into()],
        }
    }

    fn losses(path: &Path) -> Vec<(SourceLoss, u64)> {
        let raw = RawFile::open(path).unwrap();
        let mut last = std::collections::BTreeMap::new();
        for d in &raw.definitions {
            if let Definition::SourceLost { what, count } = d {
                last.insert(*what, *count);
            }
        }
        last.into_iter().collect()
    }

    fn stream(dir: &Path, pid: u32) -> std::path::PathBuf {
        dir.join("raw").join(raw::stream_file_name("gpu-node", pid, raw::Producer::Cuda))
    }

    /// A synchronization whose API call never came, and a record of a kind
    /// whose struct the agent does not know, are counted in the stream.
    #[test]
    fn what_the_converter_cannot_place_is_counted() {
        let dir = tempfile::tempdir().unwrap();
        let rec = Recorder::create_with_header(dir.path(), header(11), RecorderOptions::default()).unwrap();
        let pairs = [("GPUTRACE_CUDA_ENABLE".to_string(), "default,sync".to_string())];
        let enabled = Enabled::from_set(&config::Config::from_pairs(&pairs).unwrap().cuda_enable);
        let mut converter = Converter::new(enabled, 11, |tid| format!("thread {tid}"));
        let capture = Capture::default();
        let lone = |correlation| Record::Sync { start: 10, end: 20, kind: 1, context: 1, stream: 7, correlation };
        converter.convert(&[lone(99), Record::Other(4242), lone(100)], &capture, &rec);
        converter.finish(&rec);
        rec.finish();
        assert_eq!(
            losses(&stream(dir.path(), 11)),
            [(SourceLoss::CuptiUndecodable, 1), (SourceLoss::CudaSyncWithoutCall, 2)]
        );
    }

    /// A captured record too short for its struct is counted as the live
    /// agent counts it; a fixture's records all decode.
    #[test]
    fn a_replay_counts_records_it_cannot_decode() {
        let fixture =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../tests/fixtures/cupti/cuda_basic/468-0000.cupti");
        let mut capture = Capture::load(&fixture).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let enabled = Enabled::from_set(&config::Config::from_pairs(&[]).unwrap().cuda_enable);
        replay(std::slice::from_ref(&capture), dir.path(), header(12), enabled).unwrap();
        assert_eq!(losses(&stream(dir.path(), 12)), []);
        // A kernel record's first bytes only: its kind, then nothing.
        let kernel = capture.records.iter().find(|r| r[..4] == 10u32.to_le_bytes()).unwrap().clone();
        capture.records.push(kernel[..8].to_vec());
        replay(std::slice::from_ref(&capture), dir.path(), header(13), enabled).unwrap();
        assert_eq!(losses(&stream(dir.path(), 13)), [(SourceLoss::CuptiUndecodable, 1)]);
    }
}
