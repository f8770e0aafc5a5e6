//! The in-process recorder that every producer (MPI hooks, CUDA agent, NCCL
//! plugin, NVTX library) uses to write its raw stream.
//!
//! A [`Recorder`] owns one stream file. Threads record events into their own
//! [`buffer`]s without locking — slots of the file itself, mapped, so that
//! what is recorded survives the process; definitions (strings, regions,
//! locations, communicators) go through one mutex, are batched, and are
//! always written before any event that could refer to them is committed.
//! When writing fails (a full disk), the recorder stops, counts what it
//! drops and says so once; the count and the closing record go into a slot
//! reserved for them when the stream was created.
//!
//! Every producer also starts and runs in the shell kept here: it reads
//! its configuration through [`prelude`] and runs its work under a
//! [`guard::Guard`], so that a panic switches it off with one warning
//! (the MPI wrappers under the guard's [`guard::shield`] only: see
//! `gputrace_mpi_core::call::shielded`).
//!
//! Depends on `raw` and `config` only; never on OTF2 (it runs inside the
//! traced process) nor on the merge or the command.

mod buffer;
pub mod callpath;
mod definitions;
mod deftable;
pub mod diag;
pub mod guard;
pub mod identity;
pub mod lost;
pub mod rescue;
mod ring;
mod session;
mod slots;
pub mod window;

pub use session::{prelude, record_untraced, start, start_with};

use std::cell::{Cell, RefCell};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use buffer::{Pending, Pushed, Store, ThreadBuffer};
use deftable::DefTable;

use config::filter::Filter;
use raw::{Definition, Event, Producer, Slot, StreamFile};

/// The largest buffer one thread gets.
pub const MAX_THREAD_BUFFER: usize = 4 << 20;
/// The smallest, for threads beyond the memory budget.
pub const MIN_THREAD_BUFFER: usize = 16 << 10;

const ACTIVE: u8 = 0;
const FAILED: u8 = 1;

/// Settings of a recorder, from the configuration.
#[derive(Debug, Clone)]
pub struct RecorderOptions {
    pub total_memory: u64,
    pub filter: Option<Filter>,
    /// Keep only this last window of events (ns; `GPUTRACE_FLIGHT_RECORDER`),
    /// 0: everything.
    pub flight_recorder_ns: u64,
}

impl Default for RecorderOptions {
    fn default() -> Self {
        RecorderOptions { total_memory: 16 << 20, filter: None, flight_recorder_ns: 0 }
    }
}

/// One producer's raw stream in this process. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Recorder(Arc<Shared>);

#[derive(Debug)]
struct Shared {
    id: usize,
    stream: StreamFile,
    defs: Mutex<DefTable>,
    /// Definitions are waiting in `defs.pending`: set under the lock by
    /// whoever adds one, cleared by whoever writes them. Checked before
    /// every append, so no event is committed before its definitions.
    defs_pending: AtomicBool,
    buffers: Mutex<Vec<Arc<ThreadBuffer>>>,
    state: AtomicU8,
    budget: AtomicU64,
    per_thread: usize,
    dropped: AtomicU64,
    /// A full-size slot prepared by the flusher thread, for the next
    /// thread whose slot fills up; asked for once a thread's slots reach
    /// full size, so processes that record little never get one.
    spare: Mutex<Option<Slot>>,
    wants_spare: AtomicBool,
    /// The stream is closed: no more spares.
    closed: AtomicBool,
    flusher: std::sync::OnceLock<std::thread::Thread>,
    next_comm: AtomicU32,
    filter: Option<Filter>,
    producer: Producer,
    /// What the source lost, noted on this recorder ([`Recorder::note_lost`]).
    lost: lost::Counts,
    /// The totals last written (under the definitions' lock).
    lost_written: lost::Counts,
    /// The process's stream of its producer ([`start`]): it also writes
    /// the process-wide counts of [`lost::note`].
    process_losses: AtomicBool,
    /// The process's stream of its producer: it writes the recording
    /// windows ([`window::write`]) at its end.
    windows: AtomicBool,
    /// The flight recorder's ring, with `GPUTRACE_FLIGHT_RECORDER`.
    ring: Option<Mutex<ring::Ring>>,
}

static NEXT_RECORDER: AtomicUsize = AtomicUsize::new(1);

/// The calling thread's buffer of one recorder ([`Recorder::this_thread`]):
/// a pointer that stays on the thread.
#[derive(Debug)]
pub struct ThisThread {
    recorder: usize,
    buf: NonNull<ThreadBuffer>,
    _here: PhantomData<*const ()>,
}

thread_local! {
    static LOCAL: RefCell<LocalBuffers> = const { RefCell::new(LocalBuffers(Vec::new())) };
    /// The buffer [`Recorder::this_thread`] found last, with its recorder's
    /// id: a thread that records for one recorder finds its buffer here
    /// without LOCAL's borrow and search (a fifth of an MPI call's cost).
    /// Without a destructor, so always reachable; `LocalBuffers::drop`
    /// clears it before LOCAL lets go of the buffers, so it never points at
    /// a freed one.
    static LAST: Cell<(usize, *const ThreadBuffer)> = const { Cell::new((0, std::ptr::null())) };
}

/// This thread's buffers, one per recorder; written out when the thread
/// exits.
struct LocalBuffers(Vec<(Recorder, Arc<ThreadBuffer>)>);

impl Drop for LocalBuffers {
    fn drop(&mut self) {
        let _ = LAST.try_with(|last| last.set((0, std::ptr::null())));
        for (rec, buf) in self.0.drain(..) {
            rec.flush_buffer(&buf, Duration::from_millis(100));
            rec.release_buffer(&buf);
        }
    }
}

impl Recorder {
    /// Creates the stream `<dir>/raw/<host>.<pid>.<producer>.gtr`.
    pub fn create(dir: &Path, producer: Producer, options: RecorderOptions) -> std::io::Result<Recorder> {
        let rec = Self::create_with_header(dir, identity::stream_header(producer), options)?;
        rec.define(&Definition::Timer(gputrace_clock::timer()));
        if let Some(problem) = gputrace_clock::problem() {
            // The host's shared TSC map could not be read or published:
            // said once per process, by its first stream.
            diag::warn_once(problem);
        }
        Ok(rec)
    }

    /// Creates a stream with the given identity: for tools that replay
    /// what another process recorded (captured CUPTI buffers, say).
    pub fn create_with_header(
        dir: &Path,
        header: raw::StreamHeader,
        options: RecorderOptions,
    ) -> std::io::Result<Recorder> {
        let producer = header.producer;
        let raw_dir = dir.join("raw");
        std::fs::create_dir_all(&raw_dir)?;
        let path: PathBuf = raw_dir.join(raw::stream_file_name(&header.host, header.pid, producer));
        let stream = StreamFile::create(&path, &header)?;
        let total = options.total_memory.max(config::MIN_TOTAL_MEMORY);
        let per_thread = ((total / 4) as usize).clamp(MIN_THREAD_BUFFER, MAX_THREAD_BUFFER);
        let rec = Recorder(Arc::new(Shared {
            id: NEXT_RECORDER.fetch_add(1, Ordering::Relaxed),
            stream,
            defs: Mutex::new(DefTable { next_region: 1, ..DefTable::default() }),
            defs_pending: AtomicBool::new(false),
            buffers: Mutex::new(Vec::new()),
            state: AtomicU8::new(ACTIVE),
            budget: AtomicU64::new(total),
            per_thread,
            dropped: AtomicU64::new(0),
            spare: Mutex::new(None),
            wants_spare: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            flusher: std::sync::OnceLock::new(),
            next_comm: AtomicU32::new(0),
            filter: options.filter,
            producer,
            lost: Default::default(),
            lost_written: Default::default(),
            process_losses: AtomicBool::new(false),
            windows: AtomicBool::new(false),
            ring: (options.flight_recorder_ns > 0).then(|| Mutex::new(ring::Ring::new(options.flight_recorder_ns))),
        }));
        rec.start_flusher();
        Ok(rec)
    }

    /// Starts the thread that writes out buffers holding events older than
    /// [`buffer::MAX_CHUNK_AGE_NS`], so that a thread that stops recording
    /// (idle, waiting, about to be killed) does not keep its last events
    /// in memory. It only writes files (never calls MPI or CUDA) and ends
    /// with the recorder.
    fn start_flusher(&self) {
        let weak = Arc::downgrade(&self.0);
        let spawned = std::thread::Builder::new().name("gputrace-flush".into()).spawn(move || {
            rescue::block_in_this_thread();
            loop {
                std::thread::park_timeout(Duration::from_millis(100));
                let Some(shared) = weak.upgrade() else { return };
                let rec = Recorder(shared);
                if !rec.is_active() {
                    return;
                }
                rec.prepare_spare();
                if lost::changed(&rec.lost_totals(), &rec.0.lost_written) {
                    rec.flush_definitions();
                }
                let now = gputrace_clock::now();
                let buffers: Vec<Arc<ThreadBuffer>> = rec.0.buffers.lock().unwrap_or_else(|e| e.into_inner()).clone();
                for b in buffers {
                    // Old events, or a thread that went quiet: a rank
                    // waiting to be killed by its launcher records nothing
                    // more, and its last events should not die with it.
                    let old = |p: &Pending| {
                        now.saturating_sub(p.events.min) > buffer::MAX_CHUNK_AGE_NS
                            || now.saturating_sub(p.events.max) > buffer::QUIET_NS
                    };
                    if let Some(mut p) = b.take(Duration::ZERO, old) {
                        rec.write_events(b.location, &mut p);
                    }
                }
            }
        });
        match spawned {
            Ok(handle) => {
                let _ = self.0.flusher.set(handle.thread().clone());
            }
            Err(e) => tracing::debug!(error = %e, "no flusher thread; slots are prepared by the recording threads"),
        }
    }

    pub fn path(&self) -> &Path {
        self.0.stream.path()
    }

    /// Whether events are still being written: not after a write failed,
    /// and never in a child forked from the traced process (its events
    /// would land in the parent's stream).
    #[inline]
    pub fn is_active(&self) -> bool {
        self.0.state.load(Ordering::Relaxed) == ACTIVE && !session::in_forked_child()
    }

    /// Events lost so far.
    pub fn dropped(&self) -> u64 {
        self.0.dropped.load(Ordering::Relaxed)
    }

    /// Adds `count` records of kind `what` that the source lost before
    /// they became events (see [`lost`]): written into the stream with the
    /// next definitions, within the flusher's period, and at the close.
    pub fn note_lost(&self, what: raw::SourceLoss, count: u64) {
        lost::add(&self.0.lost, what, count);
    }

    /// Makes this the process's stream of its producer, which writes the
    /// process-wide counts of [`lost::note`] too, and the recording
    /// windows at its end.
    pub(crate) fn take_process_losses(&self) {
        self.0.process_losses.store(true, Ordering::Relaxed);
        self.0.windows.store(true, Ordering::Relaxed);
    }

    /// The stream's loss totals now.
    fn lost_totals(&self) -> [u64; lost::KINDS] {
        let producer = self.0.process_losses.load(Ordering::Relaxed).then_some(self.0.producer);
        lost::totals(&self.0.lost, producer)
    }

    /// Writes `events` of `location` (a location from
    /// [`define_location`](Self::define_location)) as events chunks. The
    /// caller orders them; chunks hold at most a thread buffer's worth.
    pub fn write_batch(&self, location: u32, events: &[(u64, Event)]) {
        let mut p = Pending::new(self.0.per_thread);
        for (t, ev) in events {
            if p.needs_flush(*t) {
                self.write_events(location, &mut p);
            }
            p.push(*t, ev);
        }
        if p.events.count > 0 {
            self.write_events(location, &mut p);
        }
    }

    /// Records `event` at `time` on the calling thread's location.
    #[inline]
    pub fn record(&self, time: u64, event: &Event) {
        self.record_many(std::slice::from_ref(&(time, *event)));
    }

    /// Records several events of the calling thread at once: cheaper than
    /// one [`record`](Self::record) each (one buffer access).
    /// This recorder's buffer among the calling thread's (made on first
    /// use), with pending definitions written first; its index.
    #[inline]
    fn thread_buffer(&self, local: &mut LocalBuffers) -> usize {
        let index = match local.0.iter().position(|(r, _)| r.0.id == self.0.id) {
            Some(i) => i,
            None => {
                let b = self.new_thread_buffer();
                local.0.push((self.clone(), b));
                local.0.len() - 1
            }
        };
        if self.0.defs_pending.load(Ordering::Acquire) {
            self.flush_definitions();
        }
        index
    }

    #[inline]
    pub fn record_many(&self, events: &[(u64, Event)]) {
        if !self.is_active() {
            self.0.dropped.fetch_add(events.len() as u64, Ordering::Relaxed);
            return;
        }
        let done = LOCAL.try_with(|local| {
            let Ok(mut local) = local.try_borrow_mut() else {
                return false;
            };
            let index = self.thread_buffer(&mut local);
            // The borrow is held while pushing: opening a slot or writing
            // a full buffer never comes back to this thread's buffers.
            let buf = &local.0[index].1;
            let pushed =
                buf.push_many(events, |inner| self.roll(buf.location, inner), |p| self.write_events(buf.location, p));
            matches!(pushed, Pushed::Done)
        });
        if done != Ok(true) {
            self.0.dropped.fetch_add(events.len() as u64, Ordering::Relaxed);
        }
    }

    /// The calling thread's buffer of this recorder (made on first use),
    /// looked up once for several accesses: an MPI call records before
    /// and after the library call, and looks its buffer up once.
    #[inline]
    pub fn this_thread(&self) -> Option<ThisThread> {
        if !self.is_active() {
            return None;
        }
        let (id, buf) = LAST.try_with(Cell::get).ok()?;
        if id == self.0.id
            && let Some(buf) = NonNull::new(buf.cast_mut())
        {
            return Some(ThisThread { recorder: id, buf, _here: PhantomData });
        }
        self.this_thread_slow()
    }

    #[cold]
    fn this_thread_slow(&self) -> Option<ThisThread> {
        LOCAL
            .try_with(|local| {
                let mut local = local.try_borrow_mut().ok()?;
                let index = self.thread_buffer(&mut local);
                let buf = NonNull::from(&*local.0[index].1);
                let _ = LAST.try_with(|last| last.set((self.0.id, buf.as_ptr().cast_const())));
                Some(ThisThread { recorder: self.0.id, buf, _here: PhantomData })
            })
            .ok()
            .flatten()
    }

    /// [`record_many`](Self::record_many) into the buffer `this` found.
    #[inline]
    pub fn record_many_on(&self, this: &ThisThread, events: &[(u64, Event)]) {
        if !self.is_active() || this.recorder != self.0.id {
            self.0.dropped.fetch_add(events.len() as u64, Ordering::Relaxed);
            return;
        }
        if self.0.defs_pending.load(Ordering::Acquire) {
            self.flush_definitions();
        }
        // SAFETY: the buffer is held by this thread's LOCAL list (an Arc)
        // until the thread's thread-locals are destroyed, after anything
        // that runs on the thread could hold `this` (which is neither
        // Send nor Sync, so it never leaves the thread).
        let buf = unsafe { this.buf.as_ref() };
        let pushed =
            buf.push_many(events, |inner| self.roll(buf.location, inner), |p| self.write_events(buf.location, p));
        if !matches!(pushed, Pushed::Done) {
            self.0.dropped.fetch_add(events.len() as u64, Ordering::Relaxed);
        }
    }

    /// Gets the calling thread ready to record, so that its next event
    /// costs an append only: its buffer and the buffer's first slot are
    /// made now, and pending definitions written. A producer whose events
    /// time the program (an annotation's Enter) calls this before reading
    /// the clock, so that opening the first slot (a fraction of a
    /// millisecond) or writing a new region's definition is not counted
    /// in what it times.
    pub fn prepare_thread(&self) {
        if !self.is_active() {
            return;
        }
        let _ = LOCAL.try_with(|local| {
            let Ok(mut local) = local.try_borrow_mut() else { return };
            let index = self.thread_buffer(&mut local);
            let buf = &local.0[index].1;
            buf.with_inner(|inner| {
                if matches!(inner.store, Store::Empty) {
                    self.roll(buf.location, inner);
                }
            });
        });
    }

    /// Writes every thread's pending events and the definitions. Buffers
    /// of threads busy appending are waited for briefly.
    pub fn flush_all(&self) {
        let buffers: Vec<Arc<ThreadBuffer>> = self.0.buffers.lock().unwrap_or_else(|e| e.into_inner()).clone();
        for b in &buffers {
            self.flush_buffer(b, Duration::from_millis(50));
        }
        self.flush_definitions();
    }

    /// Flushes everything and marks the stream complete.
    pub fn finish(&self) {
        self.finish_from(gputrace_clock::now());
    }

    /// [`finish`](Self::finish), for a producer whose program ended its
    /// work at `exit_started` (before the producer's last flush): the
    /// merge reports the time from then to the archive.
    pub fn finish_from(&self, exit_started: u64) {
        if self.0.windows.load(Ordering::Relaxed) && self.is_active() {
            window::write(self);
        }
        self.close_with(|| Definition::StreamEnd { time: gputrace_clock::now(), exit_started });
    }

    /// Writes every buffer, what was lost, and `last` (made once the
    /// buffers are written), the stream's closing record. When the stream
    /// can no longer grow (a full disk), the closing records go into the
    /// slot reserved for them.
    fn close_with(&self, last: impl FnOnce() -> Definition) {
        if session::in_forked_child() {
            return;
        }
        self.flush_all();
        self.retire_spare();
        let mut closing = Vec::new();
        for d in self.ring_final() {
            d.encode(&mut closing);
        }
        let dropped = self.dropped();
        if dropped > 0 {
            Definition::Dropped { location: u32::MAX, count: dropped }.encode(&mut closing);
        }
        let mut defs = self.defs();
        // What the source lost since the last definitions; all of it when
        // the stream stopped (what was taken as written may not have been).
        if !self.is_active() {
            self.0.lost_written.iter().for_each(|w| w.store(0, Ordering::Relaxed));
        }
        lost::encode_changed(&self.lost_totals(), &self.0.lost_written, &mut closing);
        last().encode(&mut closing);
        if self.is_active() {
            defs.pending.extend_from_slice(&closing);
            self.write_definitions(&mut defs);
            if self.is_active() {
                return;
            }
            // The disk filled up: the closing slot takes what fits. The
            // events lost since count as dropped too.
            let pending = std::mem::take(&mut defs.pending);
            if self.0.stream.write_closing(&pending).is_ok() {
                return;
            }
        }
        if let Err(e) = self.0.stream.write_closing(&closing) {
            tracing::debug!(error = %e, "closing records not written");
        }
    }

    /// The last flush of a process that `signal` is about to kill (see
    /// [`rescue`]): every buffer whose thread is not stuck in an append,
    /// what was lost, and which signal it was. The stream stays without
    /// StreamEnd: the process did not finish.
    fn rescue(&self, signal: u32) {
        if self.is_active() {
            self.close_with(|| Definition::Signal { signal, time: gputrace_clock::now() });
        }
    }

    fn fail(&self, e: &std::io::Error) {
        if self.0.state.swap(FAILED, Ordering::Relaxed) == ACTIVE {
            diag::warn(&format!(
                "cannot write {}: {e}; recording stops for this process, what was written is kept",
                self.path().display()
            ));
        }
    }
}

#[cfg(test)]
mod tests;
