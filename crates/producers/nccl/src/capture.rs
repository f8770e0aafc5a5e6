//! Captures: the callbacks the plugin received, as text, so that the
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
//! ```text
//! gputrace-nccl-capture 1
//! levels group,coll,p2p
//! process pid=4711 host=node1 start=123 domain=0x.. monotonic=.. realtime=.. rank=0 command=./app,-n,4
//! thread tid=4711 name=app
//! init t=100 tid=4711 ctx=0x55d0 version=5 comm=0x1f2e name=- nnodes=1 nranks=2 rank=0
//! start t=120 tid=4711 ctx=0x55d0 h=0x7f01 parent=0x0 rank=0 GroupApi depth=1 graph=0
//! start t=121 tid=4711 ctx=0x55d0 h=0x7f02 parent=0x7f01 rank=0 CollApi func=AllReduce count=1024 datatype=ncclFloat32 root=0 graph=0
//! stop t=125 tid=4711 h=0x7f02
//! state t=126 tid=4711 h=0x7f01 code=24
//! start t=130 tid=4711 ctx=0x55d0 h=0x0 parent=0x7f02 rank=0 Coll seq=0 func=AllReduce count=1024 root=0 datatype=ncclFloat32 channels=2 warps=16 algo=RING proto=LL
//! stop t=140 tid=4711 h=0x7f01
//! finalize t=900 tid=4711 ctx=0x55d0
//! ```
//!
//! `h` is the handle the plugin returned (0: none), `parent` the
//! descriptor's `parentObj`, `ctx` the context NCCL passed; all three are
//! addresses in the captured process, used only to match lines. Optional
//! fields of a descriptor (what its version lacks) are left out. Text
//! values are percent-encoded. Lines starting with `#` are comments.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{self, BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use raw::{Producer, StreamHeader};

use crate::levels::Levels;
use crate::model::{ApiCall, CollLaunch, CommTag, Descr, Func, InitArgs, P2pLaunch, ProxyOp, Start, StateChange, Sym};

const MAGIC: &str = "gputrace-nccl-capture 1";

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
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    Thread { tid: u32, name: String },
    Init { t: u64, tid: u32, ctx: u64, args: InitArgs },
    Start { t: u64, tid: u32, ctx: u64, handle: u64, start: Start },
    State { t: u64, tid: u32, handle: u64, state: StateChange },
    Stop { t: u64, tid: u32, handle: u64 },
    Finalize { t: u64, tid: u32, ctx: u64 },
}

/// A whole capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capture {
    pub levels: Levels,
    /// The captured process's stream identity (its NCCL stream header).
    pub header: StreamHeader,
    pub records: Vec<Record>,
}

// ---- text encoding ----

fn escape(s: &str) -> String {
    match s {
        "" => return "%".into(),
        // A lone "-" stands for "none".
        "-" => return "%2D".into(),
        _ => {}
    }
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"._:/@+-".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

fn unescape(s: &str) -> Result<String, String> {
    if s == "%" {
        return Ok(String::new());
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3).ok_or_else(|| format!("bad escape in '{s}'"))?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| format!("bad escape in '{s}'"))?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("not UTF-8: '{s}'"))
}

fn opt_name(s: Option<&str>) -> String {
    s.map_or_else(|| "-".into(), escape)
}

/// The text of a descriptor: its kind, then its fields.
fn descr_text(d: &Descr) -> String {
    let mut s = String::new();
    let comm = |s: &mut String, c: &Option<CommTag>| {
        if let Some(c) = c {
            let _ = write!(s, " commhash={:#x} commname={}", c.hash, opt_name(c.name.map(Sym::as_str)));
        }
    };
    match d {
        Descr::Group => s.push_str("Group"),
        Descr::GroupApi { depth, graph_captured } => {
            let _ = write!(s, "GroupApi depth={depth} graph={}", u8::from(*graph_captured));
        }
        Descr::CollApi(c) | Descr::P2pApi(c) => {
            let kind = if matches!(d, Descr::CollApi(_)) { "CollApi" } else { "P2pApi" };
            let _ = write!(
                s,
                "{kind} func={} count={} datatype={} root={} graph={}",
                escape(c.func.name()),
                c.count,
                escape(c.datatype.as_str()),
                c.root,
                u8::from(c.graph_captured)
            );
        }
        Descr::KernelLaunch => s.push_str("KernelLaunch"),
        Descr::Coll(c) => {
            let _ = write!(
                s,
                "Coll seq={} func={} count={} root={} datatype={} channels={} warps={} algo={} proto={}",
                c.seq,
                escape(c.func.name()),
                c.count,
                c.root,
                escape(c.datatype.as_str()),
                c.channels,
                c.warps,
                escape(c.algo.as_str()),
                escape(c.proto.as_str())
            );
            if let Some(r) = c.reduction {
                let _ = write!(s, " op={}", escape(r.as_str()));
            }
            comm(&mut s, &c.comm);
        }
        Descr::P2p(p) => {
            let _ = write!(
                s,
                "P2p func={} count={} datatype={} peer={} channels={}",
                escape(p.func.name()),
                p.count,
                escape(p.datatype.as_str()),
                p.peer,
                p.channels
            );
            comm(&mut s, &p.comm);
        }
        Descr::ProxyOp(o) => {
            let _ = write!(
                s,
                "ProxyOp pid={} channel={} peer={} steps={} chunk={} send={}",
                o.pid,
                o.channel,
                o.peer,
                o.steps,
                o.chunk_size,
                u8::from(o.is_send)
            );
        }
        Descr::ProxyStep { step } => {
            let _ = write!(s, "ProxyStep step={step}");
        }
        Descr::ProxyCtrl => s.push_str("ProxyCtrl"),
        Descr::KernelCh { channel, gpu_start } => {
            let _ = write!(s, "KernelCh channel={channel}");
            if let Some(t) = gpu_start {
                let _ = write!(s, " timer={t}");
            }
        }
        Descr::Unsupported { type_bits } => {
            let _ = write!(s, "Unsupported type={type_bits:#x}");
        }
    }
    s
}

impl Record {
    /// The record as one line, without the newline.
    pub fn to_line(&self) -> String {
        match self {
            Record::Thread { tid, name } => format!("thread tid={tid} name={}", escape(name)),
            Record::Init { t, tid, ctx, args } => {
                let opt = |v: Option<i32>| v.map_or_else(|| "-".into(), |v| v.to_string());
                format!(
                    "init t={t} tid={tid} ctx={ctx:#x} version={} comm={} name={} nnodes={} nranks={} rank={}",
                    args.version,
                    args.comm_id.map_or_else(|| "-".into(), |c| format!("{c:#x}")),
                    opt_name(args.name.as_deref()),
                    opt(args.n_nodes),
                    opt(args.nranks),
                    opt(args.rank)
                )
            }
            Record::Start { t, tid, ctx, handle, start } => format!(
                "start t={t} tid={tid} ctx={ctx:#x} h={handle:#x} parent={:#x} rank={} {}",
                start.parent,
                start.rank,
                descr_text(&start.descr)
            ),
            Record::State { t, tid, handle, state } => {
                let mut s = format!("state t={t} tid={tid} h={handle:#x} code={}", state.code);
                if let Some(v) = state.trans_size {
                    let _ = write!(s, " trans={v}");
                }
                if let Some(v) = state.steps {
                    let _ = write!(s, " steps={v}");
                }
                if let Some(v) = state.appended {
                    let _ = write!(s, " appended={v}");
                }
                if let Some(v) = state.gpu_timer {
                    let _ = write!(s, " timer={v}");
                }
                s
            }
            Record::Stop { t, tid, handle } => format!("stop t={t} tid={tid} h={handle:#x}"),
            Record::Finalize { t, tid, ctx } => format!("finalize t={t} tid={tid} ctx={ctx:#x}"),
        }
    }
}

fn header_line(h: &StreamHeader) -> String {
    let command: Vec<String> = h.command.iter().map(|a| escape(a).replace(',', "%2C")).collect();
    format!(
        "process pid={} host={} start={} domain={:#x} monotonic={} realtime={} rank={} command={}",
        h.pid,
        escape(&h.host),
        h.process_start,
        h.clock_domain,
        h.monotonic_ns,
        h.realtime_ns,
        h.rank_hint.map_or_else(|| "-".into(), |r| r.to_string()),
        if command.is_empty() { "-".into() } else { command.join(",") }
    )
}

impl Capture {
    pub fn write(&self, out: &mut impl Write) -> io::Result<()> {
        writeln!(out, "{MAGIC}")?;
        writeln!(out, "levels {}", self.levels.names())?;
        writeln!(out, "{}", header_line(&self.header))?;
        for r in &self.records {
            writeln!(out, "{}", r.to_line())?;
        }
        Ok(())
    }

    pub fn load(path: &Path) -> Result<Capture, CaptureError> {
        Capture::read(io::BufReader::new(std::fs::File::open(path)?))
    }

    /// Reads a capture; any line that does not parse is an error naming it.
    pub fn read(input: impl BufRead) -> Result<Capture, CaptureError> {
        let mut levels = None;
        let mut header = None;
        let mut records = Vec::new();
        let mut seen_magic = false;
        for (i, line) in input.lines().enumerate() {
            let line = line?;
            let n = i + 1;
            let text = line.trim();
            if text.is_empty() || text.starts_with('#') {
                continue;
            }
            let err = |problem: String| CaptureError::Parse { line: n, problem };
            if !seen_magic {
                if text != MAGIC {
                    return Err(err(format!("expected '{MAGIC}'")));
                }
                seen_magic = true;
                continue;
            }
            if let Some(rest) = text.strip_prefix("levels ") {
                levels = Some(Levels::parse(rest).map_err(err)?);
                continue;
            }
            let fields = Fields::parse(text).map_err(err)?;
            if fields.word == "process" {
                header = Some(fields.header().map_err(err)?);
                continue;
            }
            records.push(fields.record().map_err(err)?);
        }
        if !seen_magic {
            return Err(CaptureError::Parse { line: 1, problem: "empty capture".into() });
        }
        let levels = levels.ok_or(CaptureError::Parse { line: 0, problem: "no 'levels' line".into() })?;
        let header = header.ok_or(CaptureError::Parse { line: 0, problem: "no 'process' line".into() })?;
        Ok(Capture { levels, header, records })
    }
}

/// One line split into its leading word, `key=value` fields and the bare
/// word naming a descriptor's kind.
struct Fields<'a> {
    word: &'a str,
    kind: Option<&'a str>,
    values: HashMap<&'a str, &'a str>,
}

impl<'a> Fields<'a> {
    fn parse(text: &'a str) -> Result<Fields<'a>, String> {
        let mut tokens = text.split_whitespace();
        let word = tokens.next().ok_or("empty line")?;
        let mut kind = None;
        let mut values = HashMap::new();
        for t in tokens {
            match t.split_once('=') {
                Some((k, v)) => {
                    if values.insert(k, v).is_some() {
                        return Err(format!("'{k}' given twice"));
                    }
                }
                None if kind.is_none() => kind = Some(t),
                None => return Err(format!("unexpected '{t}'")),
            }
        }
        Ok(Fields { word, kind, values })
    }

    fn raw(&self, key: &str) -> Result<&'a str, String> {
        self.values.get(key).copied().ok_or_else(|| format!("'{}' lacks '{key}'", self.word))
    }

    fn num<T: TryFrom<i128>>(&self, key: &str) -> Result<T, String> {
        let v = self.raw(key)?;
        let n = match v.strip_prefix("0x") {
            Some(hex) => i128::from_str_radix(hex, 16),
            None => v.parse::<i128>(),
        }
        .map_err(|_| format!("'{key}={v}' is not a number"))?;
        T::try_from(n).map_err(|_| format!("'{key}={v}' is out of range"))
    }

    fn opt_num<T: TryFrom<i128>>(&self, key: &str) -> Result<Option<T>, String> {
        match self.values.get(key) {
            None | Some(&"-") => Ok(None),
            Some(_) => self.num(key).map(Some),
        }
    }

    fn text(&self, key: &str) -> Result<String, String> {
        unescape(self.raw(key)?)
    }

    fn opt_text(&self, key: &str) -> Result<Option<String>, String> {
        match self.values.get(key) {
            None | Some(&"-") => Ok(None),
            Some(v) => unescape(v).map(Some),
        }
    }

    fn sym(&self, key: &str) -> Result<Sym, String> {
        Ok(Sym::intern(&self.text(key)?))
    }

    fn func(&self) -> Result<Func, String> {
        Ok(Func::from_name(&self.text("func")?))
    }

    fn flag(&self, key: &str) -> Result<bool, String> {
        match self.raw(key)? {
            "0" => Ok(false),
            "1" => Ok(true),
            v => Err(format!("'{key}={v}' is not 0 or 1")),
        }
    }

    fn comm(&self) -> Result<Option<CommTag>, String> {
        match self.opt_num::<u64>("commhash")? {
            None => Ok(None),
            Some(hash) => Ok(Some(CommTag { hash, name: self.opt_text("commname")?.map(|n| Sym::intern(&n)) })),
        }
    }

    fn header(&self) -> Result<StreamHeader, String> {
        let command = match self.raw("command")? {
            "-" => Vec::new(),
            v => v.split(',').map(unescape).collect::<Result<_, _>>()?,
        };
        Ok(StreamHeader {
            producer: Producer::Nccl,
            host: self.text("host")?,
            pid: self.num("pid")?,
            process_start: self.num("start")?,
            clock_domain: self.num("domain")?,
            monotonic_ns: self.num("monotonic")?,
            realtime_ns: self.num("realtime")?,
            rank_hint: self.opt_num("rank")?,
            command,
        })
    }

    fn descr(&self) -> Result<Descr, String> {
        let kind = self.kind.ok_or("'start' names no event kind")?;
        Ok(match kind {
            "Group" => Descr::Group,
            "GroupApi" => Descr::GroupApi { depth: self.num("depth")?, graph_captured: self.flag("graph")? },
            "CollApi" | "P2pApi" => {
                let call = ApiCall {
                    func: self.func()?,
                    count: self.num("count")?,
                    datatype: self.sym("datatype")?,
                    root: if kind == "CollApi" { self.num("root")? } else { 0 },
                    graph_captured: self.flag("graph")?,
                };
                if kind == "CollApi" { Descr::CollApi(call) } else { Descr::P2pApi(call) }
            }
            "KernelLaunch" => Descr::KernelLaunch,
            "Coll" => Descr::Coll(CollLaunch {
                seq: self.num("seq")?,
                func: self.func()?,
                count: self.num("count")?,
                root: self.num("root")?,
                datatype: self.sym("datatype")?,
                reduction: self.opt_text("op")?.map(|r| Sym::intern(&r)),
                channels: self.num("channels")?,
                warps: self.num("warps")?,
                algo: self.sym("algo")?,
                proto: self.sym("proto")?,
                comm: self.comm()?,
            }),
            "P2p" => Descr::P2p(P2pLaunch {
                func: self.func()?,
                count: self.num("count")?,
                datatype: self.sym("datatype")?,
                peer: self.num("peer")?,
                channels: self.num("channels")?,
                comm: self.comm()?,
            }),
            "ProxyOp" => Descr::ProxyOp(ProxyOp {
                pid: self.num("pid")?,
                channel: self.num("channel")?,
                peer: self.num("peer")?,
                steps: self.num("steps")?,
                chunk_size: self.num("chunk")?,
                is_send: self.flag("send")?,
            }),
            "ProxyStep" => Descr::ProxyStep { step: self.num("step")? },
            "ProxyCtrl" => Descr::ProxyCtrl,
            "KernelCh" => Descr::KernelCh { channel: self.num("channel")?, gpu_start: self.opt_num("timer")? },
            "Unsupported" => Descr::Unsupported { type_bits: self.num("type")? },
            other => return Err(format!("unknown event kind '{other}'")),
        })
    }

    fn record(&self) -> Result<Record, String> {
        Ok(match self.word {
            "thread" => Record::Thread { tid: self.num("tid")?, name: self.text("name")? },
            "init" => Record::Init {
                t: self.num("t")?,
                tid: self.num("tid")?,
                ctx: self.num("ctx")?,
                args: InitArgs {
                    version: self.num("version")?,
                    comm_id: self.opt_num("comm")?,
                    name: self.opt_text("name")?,
                    n_nodes: self.opt_num("nnodes")?,
                    nranks: self.opt_num("nranks")?,
                    rank: self.opt_num("rank")?,
                },
            },
            "start" => Record::Start {
                t: self.num("t")?,
                tid: self.num("tid")?,
                ctx: self.num("ctx")?,
                handle: self.num("h")?,
                start: Start { descr: self.descr()?, parent: self.num("parent")?, rank: self.num("rank")? },
            },
            "state" => Record::State {
                t: self.num("t")?,
                tid: self.num("tid")?,
                handle: self.num("h")?,
                state: StateChange {
                    code: self.num("code")?,
                    trans_size: self.opt_num("trans")?,
                    steps: self.opt_num("steps")?,
                    appended: self.opt_num("appended")?,
                    gpu_timer: self.opt_num("timer")?,
                },
            },
            "stop" => Record::Stop { t: self.num("t")?, tid: self.num("tid")?, handle: self.num("h")? },
            "finalize" => Record::Finalize { t: self.num("t")?, tid: self.num("tid")?, ctx: self.num("ctx")? },
            other => return Err(format!("unknown record '{other}'")),
        })
    }
}

/// The live plugin's capture file.
#[derive(Debug)]
pub struct CaptureWriter {
    path: PathBuf,
    out: Mutex<(io::BufWriter<std::fs::File>, std::collections::HashSet<u32>)>,
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
        writeln!(out, "{MAGIC}")?;
        writeln!(out, "levels {}", levels.names())?;
        writeln!(out, "{}", header_line(header))?;
        Ok(CaptureWriter { path, out: Mutex::new((out, Default::default())) })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `record`, preceded by a `thread` line the first time its
    /// thread appears.
    pub fn write(&self, record: &Record, thread_name: impl FnOnce() -> String) {
        let tid = match record {
            Record::Init { tid, .. }
            | Record::Start { tid, .. }
            | Record::State { tid, .. }
            | Record::Stop { tid, .. }
            | Record::Finalize { tid, .. } => Some(*tid),
            Record::Thread { .. } => None,
        };
        let mut guard = self.out.lock().unwrap_or_else(|e| e.into_inner());
        let (out, seen) = &mut *guard;
        if let Some(tid) = tid
            && seen.insert(tid)
        {
            let _ = writeln!(out, "{}", Record::Thread { tid, name: thread_name() }.to_line());
        }
        let _ = writeln!(out, "{}", record.to_line());
    }

    pub fn flush(&self) {
        let _ = self.out.lock().unwrap_or_else(|e| e.into_inner()).0.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            command: vec!["./app".into(), "a,b c".into()],
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
            Record::Init {
                t: 1,
                tid: 4711,
                ctx: 0x55,
                args: InitArgs {
                    version: 5,
                    comm_id: Some(0x1f2e),
                    name: None,
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
                ctx: 0x55,
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
    }

    #[test]
    fn bad_lines_are_errors_naming_the_line() {
        let head = format!("{MAGIC}\nlevels coll\n{}\n", header_line(&header()));
        for (bad, line) in [
            ("start t=1 tid=1 ctx=0x1 h=0x2 parent=0x0 rank=0 Coll seq=0", 4),
            ("stop t=x tid=1 h=0x1", 4),
            ("frobnicate t=1", 4),
            ("state t=1 tid=1 h=0x1", 4),
            ("start t=1 tid=1 ctx=0x1 h=0x2 parent=0x0 rank=0 Bogus", 4),
            ("init t=1 tid=1 ctx=0x1 version=5 name=%G1", 4),
            ("stop t=1 tid=1 h=0x1 h=0x2", 4),
            (
                "start t=1 tid=1 ctx=0x1 h=0x2 parent=0x0 rank=0 ProxyOp pid=1 channel=300 peer=0 steps=1 chunk=1 send=1",
                4,
            ),
        ] {
            let text = format!("{head}{bad}\n");
            match Capture::read(text.as_bytes()) {
                Err(CaptureError::Parse { line: l, .. }) => assert_eq!(l, line, "{bad}"),
                other => panic!("{bad}: {other:?}"),
            }
        }
        assert!(Capture::read("not a capture\n".as_bytes()).is_err());
        assert!(Capture::read("".as_bytes()).is_err());
        assert!(Capture::read(format!("{MAGIC}\nlevels coll\n").as_bytes()).is_err());
    }

    #[test]
    fn escaping_round_trips() {
        for s in ["", "a b", "100%", "x=y,z", "ünï", "-"] {
            assert_eq!(unescape(&escape(s)).unwrap(), s);
        }
    }
}
