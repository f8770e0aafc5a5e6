//! Captures: the callbacks the plugin received, as JSON lines, so that the
//! recording logic can be tested where there is no GPU and no NCCL.
//!
//! With `GPUTRACE_NCCL_CAPTURE=<file>` (a developer setting) the live
//! plugin writes one line per callback, after converting the descriptor
//! into its own [`model`](crate::model) types, with the host time it
//! stamped and the thread it ran on; [`crate::replay`] feeds such a file
//! through the same recording logic. `%p` in the file name becomes the
//! process id, `%h` the host name; without `%p`, a file that exists
//! already makes the process write `<file>.<pid>` instead.
//!
//! The first line is the head: the format, the recording levels and the
//! process's stream identity. Every other line is a [`Record`], the serde
//! form of the types in [`model`](crate::model), tagged by `record`:
//!
//! ```text
//! {"format":"gputrace-nccl-capture","version":3,"levels":"group,coll,p2p","process":{"pid":4711,"host":"node1","process_start":123,"clock_domain":24301,"monotonic_ns":5,"realtime_ns":6,"rank_hint":0,"command":["./app","-n","4"]}}
//! {"record":"thread","tid":4711,"name":"app"}
//! {"record":"init","t":100,"tid":4711,"ctx":21968,"args":{"version":5,"comm_id":7982,"nnodes":1,"nranks":2,"rank":0}}
//! {"record":"start","t":120,"tid":4711,"ctx":21968,"handle":32513,"start":{"descr":{"type":"GroupApi","depth":1,"graph_captured":false},"parent":0,"rank":0}}
//! {"record":"state","t":126,"tid":4711,"handle":32513,"state":{"code":24}}
//! {"record":"stop","t":140,"tid":4711,"handle":32513}
//! {"record":"nvtx_push","t":950,"tid":4711,"range":{"name":"ncclAllGather","payload":{"comm":7982,"bytes":0}}}
//! {"record":"nvtx_pop","t":960,"tid":4711}
//! {"record":"finalize","t":900,"tid":4711,"ctx":21968}
//! ```
//!
//! `handle` is the handle the plugin returned (0: none), `parent` the
//! descriptor's `parentObj`, `ctx` the context NCCL passed; all three are
//! addresses in the captured process, used only to match lines. Optional
//! fields (what a descriptor's version lacks) are left out. A `comment`
//! record (`{"record":"comment","text":"..."}`) says something to a reader
//! of the file and nothing to the replay. Version 1 was a text format;
//! `tests/fixtures/nccl/convert-v1.py` converts such a file.

use std::io::{self, BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use raw::{Producer, StreamHeader};
use recorder::diag;
use serde::{Deserialize, Serialize};

use crate::levels::Levels;
use crate::model::{InitArgs, NvtxPayload, NvtxRange, Start, StateChange};

/// The head's `format`.
const FORMAT: &str = "gputrace-nccl-capture";
/// The head's `version`: 3 added the `nvtx_push` and `nvtx_pop` records;
/// version 2 files (without them) are read as well.
const VERSION: u32 = 3;
const OLDEST: u32 = 2;

/// A capture that cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CaptureError {
    #[error("cannot read the NCCL capture: {0}")]
    Io(#[from] io::Error),
    #[error("NCCL capture line {line}: {problem}")]
    Parse { line: usize, problem: String },
}

/// One callback, or a fact about the process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "snake_case", deny_unknown_fields)]
pub enum Record {
    Thread {
        tid: u32,
        name: String,
    },
    Init {
        t: u64,
        tid: u32,
        ctx: u64,
        args: InitArgs,
    },
    Start {
        t: u64,
        tid: u32,
        ctx: u64,
        handle: u64,
        start: Start,
    },
    State {
        t: u64,
        tid: u32,
        handle: u64,
        state: StateChange,
    },
    Stop {
        t: u64,
        tid: u32,
        handle: u64,
    },
    Finalize {
        t: u64,
        tid: u32,
        ctx: u64,
    },
    /// One of NCCL's NVTX ranges begins (handed over by gputrace's NVTX
    /// library).
    NvtxPush {
        t: u64,
        tid: u32,
        range: NvtxRange,
    },
    /// The innermost of NCCL's NVTX ranges on `tid` ends.
    NvtxPop {
        t: u64,
        tid: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        payload: Option<NvtxPayload>,
    },
    /// A note for a person reading the file (hand-written fixtures say
    /// so); the replay passes over it.
    Comment {
        text: String,
    },
}

/// A whole capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capture {
    pub levels: Levels,
    /// The captured process's stream identity (its NCCL stream header).
    pub header: StreamHeader,
    pub records: Vec<Record>,
}

/// The first line.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Head {
    format: String,
    version: u32,
    /// Comma-separated level names, as [`Levels::names`] writes them.
    levels: String,
    #[serde(with = "Process")]
    process: StreamHeader,
}

/// [`StreamHeader`]'s fields, but the producer (always NCCL here).
#[derive(Serialize, Deserialize)]
#[serde(remote = "StreamHeader", deny_unknown_fields)]
struct Process {
    #[serde(skip, default = "nccl")]
    producer: Producer,
    pid: u32,
    host: String,
    process_start: u64,
    clock_domain: u64,
    monotonic_ns: u64,
    realtime_ns: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rank_hint: Option<u32>,
    command: Vec<String>,
}

fn nccl() -> Producer {
    Producer::Nccl
}

fn head_line(levels: Levels, header: &StreamHeader) -> serde_json::Result<Vec<u8>> {
    let head = Head { format: FORMAT.into(), version: VERSION, levels: levels.names(), process: header.clone() };
    let mut line = serde_json::to_vec(&head)?;
    line.push(b'\n');
    Ok(line)
}

fn read_head(text: &str) -> Result<(Levels, StreamHeader), String> {
    if text.starts_with("gputrace-nccl-capture 1") {
        return Err("a capture in the text format of version 1; tests/fixtures/nccl/convert-v1.py converts it".into());
    }
    let head: Head = serde_json::from_str(text).map_err(|e| format!("not a capture's head line: {e}"))?;
    if head.format != FORMAT || !(OLDEST..=VERSION).contains(&head.version) {
        return Err(format!("'{}' version {}, expected '{FORMAT}' version {VERSION}", head.format, head.version));
    }
    Ok((Levels::parse(&head.levels)?, head.process))
}

impl Capture {
    pub fn write(&self, out: &mut impl Write) -> io::Result<()> {
        out.write_all(&head_line(self.levels, &self.header)?)?;
        for r in &self.records {
            serde_json::to_writer(&mut *out, r)?;
            out.write_all(b"\n")?;
        }
        Ok(())
    }

    pub fn load(path: &Path) -> Result<Capture, CaptureError> {
        Capture::read(io::BufReader::new(std::fs::File::open(path)?))
    }

    /// Reads a capture; any line that does not parse is an error naming it.
    /// Blank lines are passed over.
    pub fn read(input: impl BufRead) -> Result<Capture, CaptureError> {
        let mut head = None;
        let mut records = Vec::new();
        for (i, line) in input.lines().enumerate() {
            let line = line?;
            let text = line.trim();
            if text.is_empty() {
                continue;
            }
            let err = |problem: String| CaptureError::Parse { line: i + 1, problem };
            if head.is_none() {
                head = Some(read_head(text).map_err(err)?);
                continue;
            }
            records.push(serde_json::from_str(text).map_err(|e| err(e.to_string()))?);
        }
        let Some((levels, header)) = head else {
            return Err(CaptureError::Parse { line: 1, problem: "empty capture".into() });
        };
        Ok(Capture { levels, header, records })
    }
}

/// The live plugin's capture file. It runs inside the traced process: an
/// error writing it is reported once and ends the capture, nothing else.
#[derive(Debug)]
pub struct CaptureWriter {
    path: PathBuf,
    /// The file and the threads named in it so far; `None` once a write
    /// failed.
    out: Mutex<Option<(io::BufWriter<std::fs::File>, std::collections::HashSet<u32>)>>,
}

impl CaptureWriter {
    /// Creates the file `GPUTRACE_NCCL_CAPTURE` names and writes the head.
    pub fn create(template: &str, levels: Levels, header: &StreamHeader) -> io::Result<CaptureWriter> {
        let name = template.replace("%p", &header.pid.to_string()).replace("%h", &header.host);
        let open = |p: &Path| std::fs::OpenOptions::new().write(true).create_new(true).open(p);
        let mut path = PathBuf::from(&name);
        let file = match open(&path) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && !template.contains("%p") => {
                path = PathBuf::from(format!("{name}.{}", header.pid));
                open(&path)?
            }
            other => other?,
        };
        let mut out = io::BufWriter::new(file);
        out.write_all(&head_line(levels, header)?)?;
        Ok(CaptureWriter { path, out: Mutex::new(Some((out, Default::default()))) })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `record`, preceded by a `thread` record the first time its
    /// thread appears.
    pub fn write(&self, record: &Record, thread_name: impl FnOnce() -> String) {
        let tid = match record {
            Record::Init { tid, .. }
            | Record::Start { tid, .. }
            | Record::State { tid, .. }
            | Record::Stop { tid, .. }
            | Record::Finalize { tid, .. }
            | Record::NvtxPush { tid, .. }
            | Record::NvtxPop { tid, .. } => Some(*tid),
            Record::Thread { .. } | Record::Comment { .. } => None,
        };
        self.with_file(|out, seen| {
            if let Some(tid) = tid
                && seen.insert(tid)
            {
                line(out, &Record::Thread { tid, name: thread_name() })?;
            }
            line(out, record)
        });
    }

    pub fn flush(&self) {
        self.with_file(|out, _| out.flush());
    }

    /// Runs `f` on the file unless an earlier write failed; a failure is
    /// reported once and closes the capture.
    fn with_file(
        &self,
        f: impl FnOnce(&mut io::BufWriter<std::fs::File>, &mut std::collections::HashSet<u32>) -> io::Result<()>,
    ) {
        let mut guard = self.out.lock().unwrap_or_else(|e| e.into_inner());
        let Some((out, seen)) = guard.as_mut() else { return };
        if let Err(e) = f(out, seen) {
            *guard = None;
            diag::warn_once(&format!(
                "cannot write the NCCL capture {}: {e}; the capture stops there",
                self.path.display()
            ));
        }
    }
}

fn line(out: &mut impl Write, record: &Record) -> io::Result<()> {
    serde_json::to_writer(&mut *out, record)?;
    out.write_all(b"\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ApiCall, CollLaunch, CommTag, Descr, Func, P2pLaunch, ProxyOp, Sym};

    fn header() -> StreamHeader {
        StreamHeader {
            producer: Producer::Nccl,
            host: "node 1".into(),
            pid: 4711,
            process_start: 99,
            clock_domain: 0xabc,
            monotonic_ns: 1000,
            realtime_ns: 2000,
            rank_hint: Some(1),
            command: vec!["./app".into(), "a,b c\n\"d\"".into()],
        }
    }

    #[test]
    fn every_record_round_trips() {
        let coll = CollLaunch {
            seq: 3,
            func: Func::AllReduce,
            count: 1024,
            root: 0,
            datatype: Sym::intern("ncclFloat32"),
            reduction: Some(Sym::intern("Sum")),
            channels: 2,
            warps: 16,
            algo: Sym::intern("RING"),
            proto: Sym::intern("LL"),
            comm: Some(CommTag { hash: 0xfeed, name: Some(Sym::intern("my comm")) }),
        };
        let p2p = P2pLaunch {
            func: Func::Send,
            count: 8,
            datatype: Sym::intern("ncclInt8"),
            peer: 1,
            channels: 1,
            comm: None,
        };
        let call = ApiCall {
            func: Func::Broadcast,
            count: 5,
            datatype: Sym::intern("ncclBfloat16"),
            root: 1,
            graph_captured: true,
        };
        let descrs = [
            Descr::Group,
            Descr::GroupApi { depth: 2, graph_captured: false },
            Descr::CollApi(call),
            Descr::P2pApi(ApiCall { root: 0, ..call }),
            Descr::KernelLaunch,
            Descr::Coll(coll),
            Descr::Coll(CollLaunch { func: Func::Other(Sym::intern("NewColl")), ..coll }),
            Descr::P2p(p2p),
            Descr::ProxyOp(ProxyOp { pid: 7, channel: 3, peer: 1, steps: 8, chunk_size: 65536, is_send: true }),
            Descr::ProxyStep { step: 4 },
            Descr::ProxyCtrl,
            Descr::KernelCh { channel: 5, gpu_start: Some(1 << 60) },
            Descr::KernelCh { channel: 5, gpu_start: None },
            Descr::Unsupported { type_bits: 128 },
        ];
        let mut records = vec![
            Record::Thread { tid: 4711, name: "main thread".into() },
            Record::Comment { text: "a note: \"quoted\"\n".into() },
            Record::Init {
                t: 1,
                tid: 4711,
                ctx: 0x55,
                args: InitArgs {
                    version: 5,
                    comm_id: Some(0x1f2e),
                    name: Some("ünï, \"x\"".into()),
                    n_nodes: Some(1),
                    nranks: Some(2),
                    rank: Some(0),
                },
            },
            Record::Init { t: 1, tid: 4711, ctx: 0x56, args: InitArgs { version: 2, ..Default::default() } },
        ];
        for (i, d) in descrs.into_iter().enumerate() {
            records.push(Record::Start {
                t: 10 + i as u64,
                tid: 4712,
                ctx: u64::MAX,
                handle: 0x1000 + i as u64,
                start: Start { descr: d, parent: 0x7f00, rank: 1 },
            });
        }
        records.push(Record::State {
            t: 50,
            tid: 4712,
            handle: 0x1000,
            state: StateChange {
                code: 22,
                trans_size: Some(1),
                steps: Some(2),
                appended: Some(3),
                gpu_timer: Some(u64::MAX),
            },
        });
        records.push(Record::Stop { t: 60, tid: 4712, handle: 0x1000 });
        records.push(Record::Finalize { t: 70, tid: 4711, ctx: 0x55 });
        let c = Capture { levels: Levels::ALL, header: header(), records };
        let mut text = Vec::new();
        c.write(&mut text).unwrap();
        let back = Capture::read(&text[..]).unwrap();
        assert_eq!(back, c);
        // One line per record, each a JSON object.
        let text = String::from_utf8(text).unwrap();
        assert_eq!(text.lines().count(), c.records.len() + 1);
        for l in text.lines() {
            assert!(serde_json::from_str::<serde_json::Value>(l).unwrap().is_object(), "{l}");
        }
    }

    #[test]
    fn bad_lines_are_errors_naming_the_line() {
        let head = String::from_utf8(head_line(Levels::parse("coll").unwrap(), &header()).unwrap()).unwrap();
        for bad in [
            r#"{"record":"start","t":1,"tid":1,"ctx":1,"handle":2,"start":{"descr":{"type":"Coll","seq":0},"parent":0,"rank":0}}"#,
            r#"{"record":"stop","t":"x","tid":1,"handle":1}"#,
            r#"{"record":"frobnicate","t":1}"#,
            r#"{"record":"state","t":1,"tid":1,"handle":1}"#,
            r#"{"record":"start","t":1,"tid":1,"ctx":1,"handle":2,"start":{"descr":{"type":"Bogus"},"parent":0,"rank":0}}"#,
            r#"{"record":"stop","t":1,"tid":1,"handle":1,"extra":2}"#,
            r#"{"record":"stop","t":1,"tid":1,"handle":1"#,
            r#"{"record":"start","t":1,"tid":1,"ctx":1,"handle":2,"start":{"descr":{"type":"ProxyOp","pid":1,"channel":300,"peer":0,"steps":1,"chunk_size":1,"is_send":true},"parent":0,"rank":0}}"#,
            r#"{"record":"stop","t":-1,"tid":1,"handle":1}"#,
            "stop t=1 tid=1 h=0x1",
        ] {
            let text = format!("{head}\n{bad}\n");
            match Capture::read(text.as_bytes()) {
                Err(CaptureError::Parse { line: l, .. }) => assert_eq!(l, 3, "{bad}"),
                other => panic!("{bad}: {other:?}"),
            }
        }
        for bad_head in [
            "not a capture".to_owned(),
            "gputrace-nccl-capture 1".to_owned(),
            head.replace("\"version\":3", "\"version\":9"),
            head.replace("\"levels\":\"coll\"", "\"levels\":\"colll\""),
            head.replace("\"pid\":4711,", ""),
        ] {
            match Capture::read(bad_head.as_bytes()) {
                Err(CaptureError::Parse { line: 1, .. }) => {}
                other => panic!("{bad_head}: {other:?}"),
            }
        }
        assert!(Capture::read("".as_bytes()).is_err());
        assert!(Capture::read(head.as_bytes()).unwrap().records.is_empty());
    }

    #[test]
    fn a_failed_write_is_reported_once_and_ends_the_capture() {
        let dir = tempfile::tempdir().unwrap();
        let w = CaptureWriter::create(dir.path().join("c-%p").to_str().unwrap(), Levels::ALL, &header()).unwrap();
        assert_eq!(w.path(), dir.path().join("c-4711"));
        w.write(&Record::Stop { t: 1, tid: 9, handle: 2 }, || "worker".into());
        w.flush();
        let text = std::fs::read_to_string(w.path()).unwrap();
        let back = Capture::read(text.as_bytes()).unwrap();
        assert_eq!(
            back.records,
            [Record::Thread { tid: 9, name: "worker".into() }, Record::Stop { t: 1, tid: 9, handle: 2 }]
        );
        // A file that cannot take more: /dev/full fails every write.
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        *w.out.lock().unwrap() = Some((io::BufWriter::with_capacity(8, full), Default::default()));
        w.write(&Record::Stop { t: 2, tid: 9, handle: 3 }, || "worker".into());
        assert!(w.out.lock().unwrap().is_none(), "the capture stopped");
        w.write(&Record::Stop { t: 3, tid: 9, handle: 4 }, || "worker".into());
        w.flush();
    }
}
