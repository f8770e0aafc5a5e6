//! The sampler of a process: the threads sampled (each by its perf event
//! or its timer), and the thread that drains their samples every few
//! milliseconds, unwinds them, keeps the process's tree of call stacks
//! and records each sample on its thread's location.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use raw::{Definition, Event, LocationKind, Producer};
use recorder::Recorder;

use crate::python::{Node, Python};
use crate::unwind::Unwinder;
use crate::{Sample, perf, timer};

/// How often the sampler's thread drains the threads' samples.
pub const DRAIN_EVERY: Duration = Duration::from_millis(5);

/// What samples a thread.
enum Source {
    Perf(perf::Ring),
    Timer(Box<timer::TimerRing>),
}

struct Thread {
    tid: u32,
    /// Its `pthread_self()`, by which its Python thread state is found.
    pthread: u64,
    source: Source,
    /// The thread has exited: drained once more, then dropped.
    ended: bool,
}

/// The sampler's time in the Python frames since it last said it (a
/// `GPUTRACE_VERBOSE` line a second): their reading per thread and drain,
/// and their interleaving per sample.
struct PythonCost {
    since: Instant,
    reads: u64,
    frames: u64,
    samples: u64,
    read_ns: u64,
    interleave_ns: u64,
}

impl PythonCost {
    fn new() -> PythonCost {
        PythonCost { since: Instant::now(), reads: 0, frames: 0, samples: 0, read_ns: 0, interleave_ns: 0 }
    }

    fn say_each_second(&mut self) {
        if self.samples == 0 || self.since.elapsed() < Duration::from_secs(1) {
            return;
        }
        tracing::debug!(
            "Python frames in the last {:.1} s: {} reads of a thread's frames ({} frames) in {} us, {} samples \
             interleaved in {} us",
            self.since.elapsed().as_secs_f64(),
            self.reads,
            self.frames,
            self.read_ns / 1000,
            self.samples,
            self.interleave_ns / 1000
        );
        *self = PythonCost::new();
    }
}

/// What the sampler's thread keeps between drains.
struct Writer {
    config: config::Config,
    /// Made at the first sample, so that a process that runs too briefly
    /// to be sampled leaves no stream.
    recorder: Option<Recorder>,
    failed: bool,
    unwinder: Unwinder,
    /// (parent, node) → node of the stack tree; ids from 1.
    frames: HashMap<(u32, Node), u32>,
    /// The process's Python interpreter, once found.
    python: Option<Python>,
    /// The interpreter is not looked for (the benchmark's test hook).
    no_python: bool,
    /// (drain, thread) whose Python frames were read last.
    python_read: (u64, u32),
    python_cost: PythonCost,
    drains: u64,
    nodes: Vec<Node>,
    locations: HashMap<u32, u32>,
    pending: HashMap<u32, Vec<(u64, Event)>>,
    addresses: Vec<u64>,
}

/// The process's sampler.
pub struct Sampler {
    period_ns: u64,
    stack: u32,
    /// Perf events are not tried any more (refused once, or the test hook).
    timer_only: AtomicBool,
    handler_installed: AtomicBool,
    threads: Mutex<Vec<Thread>>,
    writer: Mutex<Writer>,
    stopped: AtomicBool,
    /// The process runs Python: drained every period (1 to 5 ms), since
    /// its frames are read at the drain.
    python: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Sampler {
    pub fn new(config: config::Config) -> Sampler {
        let period_ns = config.sampling.as_nanos().min(u128::from(u64::MAX)) as u64;
        // perf takes a multiple of 8 below 64 KiB.
        let stack = (config.sampling_stack.min(60 << 10) as u32) & !7;
        let timer_only = std::env::var_os(config::hooks::SAMPLING_TIMER.name).is_some();
        let writer = Writer {
            config,
            recorder: None,
            failed: false,
            unwinder: Unwinder::default(),
            frames: HashMap::new(),
            python: None,
            no_python: std::env::var_os(config::hooks::SAMPLING_NO_PYTHON.name).is_some(),
            python_read: (0, 0),
            python_cost: PythonCost::new(),
            drains: 0,
            nodes: Vec::new(),
            locations: HashMap::new(),
            pending: HashMap::new(),
            addresses: Vec::with_capacity(crate::unwind::MAX_DEPTH),
        };
        Sampler {
            period_ns,
            stack,
            timer_only: AtomicBool::new(timer_only),
            handler_installed: AtomicBool::new(false),
            threads: Mutex::new(Vec::new()),
            writer: Mutex::new(writer),
            stopped: AtomicBool::new(false),
            python: AtomicBool::new(false),
        }
    }

    /// Starts sampling the calling thread: its perf event, or else its
    /// timer.
    pub fn register_current(&self) {
        if self.stopped.load(Ordering::Relaxed) {
            return;
        }
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        let source = match self.timer_only.load(Ordering::Relaxed) {
            false => match perf::Ring::open(tid, self.period_ns, self.stack) {
                Ok(ring) => Some(Source::Perf(ring)),
                Err(e) => {
                    tracing::debug!("perf event refused ({e}); sampling by a timer signal");
                    self.timer_only.store(true, Ordering::Relaxed);
                    None
                }
            },
            true => None,
        };
        let source = match source {
            Some(s) => s,
            None => match self.timer_source() {
                Ok(s) => s,
                Err(e) => {
                    recorder::diag::warn_once(&format!("call stacks are not sampled: {e}"));
                    return;
                }
            },
        };
        let how = if matches!(source, Source::Perf(_)) { "a perf event" } else { "a timer signal" };
        tracing::debug!("sampling thread {tid} by {how}");
        // SAFETY: pthread_self has no preconditions.
        let pthread = unsafe { libc::pthread_self() } as u64;
        lock(&self.threads).push(Thread { tid: tid as u32, pthread, source, ended: false });
    }

    fn timer_source(&self) -> std::io::Result<Source> {
        if !self.handler_installed.swap(true, Ordering::AcqRel) {
            timer::install_handler()?;
        }
        let ring = timer::TimerRing::new(self.stack as usize)?;
        ring.arm(self.period_ns)?;
        Ok(Source::Timer(ring))
    }

    /// The calling thread exits: its timer stops; its samples are drained
    /// once more.
    pub fn unregister_current(&self) {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() } as u32;
        for t in lock(&self.threads).iter_mut().filter(|t| t.tid == tid) {
            if let Source::Timer(r) = &t.source {
                r.disarm();
            }
            t.ended = true;
        }
    }

    /// The sampler's thread: drains until the process exits.
    pub fn run(&self) {
        let python = Duration::from_nanos(self.period_ns).clamp(Duration::from_millis(1), DRAIN_EVERY);
        while !self.stopped.load(Ordering::Relaxed) {
            std::thread::sleep(if self.python.load(Ordering::Relaxed) { python } else { DRAIN_EVERY });
            self.drain();
        }
    }

    fn drain(&self) {
        let mut w = lock(&self.writer);
        w.drains += 1;
        {
            let mut threads = lock(&self.threads);
            for t in threads.iter_mut() {
                let pthread = t.pthread;
                match &mut t.source {
                    Source::Perf(r) => r.drain(&mut |s| w.take(s, pthread)),
                    Source::Timer(r) => r.drain(t.tid, &mut |s| w.take(s, pthread)),
                }
            }
            threads.retain(|t| !t.ended);
        }
        if w.python.is_some() {
            self.python.store(true, Ordering::Relaxed);
            // Not at exit (`finish`): a log line's thread-locals may be gone.
            if w.config.verbose && !self.stopped.load(Ordering::Relaxed) {
                w.python_cost.say_each_second();
            }
        }
        w.write();
    }

    /// At the process's exit: stops every timer, drains the rest and
    /// closes the stream.
    pub fn finish(&self) {
        self.stopped.store(true, Ordering::Relaxed);
        for t in lock(&self.threads).iter() {
            if let Source::Timer(r) = &t.source {
                r.disarm();
            }
        }
        self.drain();
        let w = lock(&self.writer);
        let lost = perf::LOST.load(Ordering::Relaxed) + timer::LOST.load(Ordering::Relaxed);
        if let Some(rec) = &w.recorder {
            // Counted in the stream, not logged: at exit the thread-locals
            // a log line needs may be gone already.
            if lost > 0 {
                rec.note_lost(raw::SourceLoss::SamplesLost, lost);
            }
            rec.finish();
        }
    }
}

impl Writer {
    fn recorder(&mut self) -> Option<&Recorder> {
        if self.recorder.is_none() && !self.failed {
            self.recorder = recorder::start_with(Producer::Sampling, &self.config);
            self.failed = self.recorder.is_none();
            if let Some(rec) = &self.recorder {
                tracing::debug!(path = %rec.path().display(), "sampling call stacks");
                let ns = self.config.sampling.as_nanos().min(u128::from(u64::MAX)) as u64;
                rec.define(&Definition::SamplingPeriod { ns });
                for m in self.unwinder.scan() {
                    rec.define(&Definition::Module(m));
                }
                self.python = self.find_python();
            }
        }
        self.recorder.as_ref()
    }

    /// The process's interpreter, unless the benchmark's hook leaves the
    /// Python frames out.
    fn find_python(&self) -> Option<Python> {
        if self.no_python {
            return None;
        }
        Python::find()
    }

    /// One sample of the thread `pthread`: unwound, its Python frames put
    /// in (read once per drain and thread), its stack put in the tree, its
    /// event kept for the next write.
    fn take(&mut self, s: &Sample<'_>, pthread: u64) {
        if self.recorder().is_none() {
            return;
        }
        self.unwinder.unwind(s, &mut self.addresses);
        if self.addresses.iter().any(|&a| !self.unwinder.knows(a)) {
            // A library loaded since the last look: look again, unwind again.
            let added = self.unwinder.scan();
            if !added.is_empty() {
                let rec = self.recorder.as_ref().expect("made above");
                for m in added {
                    rec.define(&Definition::Module(m));
                }
                self.unwinder.unwind(s, &mut self.addresses);
                if self.python.is_none() {
                    self.python = self.find_python();
                }
            }
        }
        self.python_frames(s, pthread);
        let mut parent = 0;
        for &node in self.nodes.iter().rev() {
            let next = self.frames.len() as u32 + 1;
            parent = *self.frames.entry((parent, node)).or_insert_with(|| {
                let rec = self.recorder.as_ref().expect("made above");
                rec.define(&match node {
                    Node::Native(address) => Definition::Frame { id: next, parent, address },
                    Node::Python { code, line } => Definition::PyFrame { id: next, parent, code, line },
                });
                next
            });
        }
        if parent != 0 {
            self.pending.entry(s.tid).or_default().push((s.time, Event::Sample { frame: parent }));
        }
    }

    /// The sample's nodes: its native addresses, with the thread's Python
    /// frames (read at the first of its samples in this drain) in the
    /// places of the interpreter's eval loops.
    fn python_frames(&mut self, s: &Sample<'_>, pthread: u64) {
        let tid = s.tid;
        let Some(python) = self.python.as_mut() else {
            self.nodes.clear();
            self.nodes.extend(self.addresses.iter().map(|&a| Node::Native(a)));
            return;
        };
        let cost = &mut self.python_cost;
        // Timed only when the verbose line will say it.
        let verbose = self.config.verbose;
        let ns = |start: Option<Instant>| start.map_or(0, |t| t.elapsed().as_nanos() as u64);
        if self.python_read != (self.drains, tid) {
            self.python_read = (self.drains, tid);
            let rec = self.recorder.as_ref().expect("made by take");
            let start = verbose.then(Instant::now);
            python.read_thread(pthread, &mut |d| rec.define(&d));
            cost.read_ns += ns(start);
            cost.reads += 1;
            cost.frames += python.frames_read() as u64;
        }
        let start = verbose.then(Instant::now);
        python.interleave(&self.addresses, s.stack, &mut self.nodes);
        cost.interleave_ns += ns(start);
        cost.samples += 1;
    }

    /// Writes the samples kept, each thread's on its location.
    fn write(&mut self) {
        let Some(rec) = self.recorder.as_ref() else { return };
        rec.flush_definitions();
        let pid = std::process::id();
        for (tid, events) in self.pending.iter_mut().filter(|(_, e)| !e.is_empty()) {
            let location = *self.locations.entry(*tid).or_insert_with(|| {
                let kind = LocationKind::HostThread { tid: *tid, is_main: *tid == pid };
                rec.define_location(kind, "")
            });
            rec.flush_definitions();
            events.sort_by_key(|e| e.0);
            rec.write_batch(location, events);
            events.clear();
        }
    }
}
