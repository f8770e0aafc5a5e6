//! What NVTX annotations become in the raw stream, decided once for every
//! entry point (the C ABI in [`crate::exports`], the tests here).
//!
//! - A push/pop range is a region (paradigm NVTX, role FUNCTION) entered
//!   and left on the calling thread; NVTX keeps one stack per thread and
//!   domain, and so does this module: a pop leaves the innermost range
//!   that thread pushed in that domain.
//! - A start/end range need not nest and may end on another thread: it
//!   goes on a lane of its own (a location `NVTX ranges`, role CODE),
//!   which holds one range at a time; a range starting while every lane
//!   is busy opens another lane (`NVTX ranges 2`, ...), so each lane's
//!   Enter/Leave pairs are balanced and in time order, and the lanes
//!   needed are as many as ranges were open at once.
//! - A mark is a region of length zero (role ARTIFICIAL) on the calling
//!   thread: an Enter and a Leave at the same time.
//! - A region's name is the message; its group is `NVTX` for the default
//!   domain, `NVTX domain <name>` for the others. Category (its name when
//!   the program named it, else its number), color (ARGB) and payload are
//!   attributes of the Enter.
//! - nvtxNameOsThread (and a resource of type GENERIC_THREAD_NATIVE) names
//!   the thread's location: a ThreadName definition.
//!
//! Messages are resolved to region ids through a per-thread cache, so a
//! repeated annotation costs a hash of its message; registered strings
//! keep their region ids with them. Lanes are written in batches (at
//! [`LANE_BATCH`] events and at the end), so a start/end range that a
//! SIGKILL cuts short is lost with its batch; ranges on threads are in
//! the thread's mapped slot like every other event.

use std::collections::HashMap;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

use raw::{Definition, Event, LocationKind, Paradigm};
use recorder::Recorder;

use crate::handles::Handles;
use crate::nccl::{Binary, NcclPlugin};

mod attributes;
mod capture;
mod thread;

pub use attributes::{Attributes, Message, Payload, Style};
use capture::Capture;
use thread::{Batch, THREAD, ThreadState};

/// A lane writes its events when it holds this many.
pub const LANE_BATCH: usize = 4096;

struct Domain {
    /// The region group of its annotations.
    group: String,
    /// NCCL's domain while gputrace's NCCL plugin records: its ranges go
    /// to the plugin (see [`crate::nccl`]).
    nccl: Option<NcclPlugin>,
    /// Category number → string id of its name.
    categories: Mutex<HashMap<u32, u32>>,
}

impl Domain {
    fn new(group: String) -> Self {
        Domain { group, nccl: None, categories: Mutex::new(HashMap::new()) }
    }
}

struct Registered {
    domain: u32,
    text: String,
    /// Its region per style, defined on first use.
    regions: [OnceLock<Option<u32>>; 3],
}

/// A start/end lane.
struct Lane {
    location: u32,
    /// The region of the range it holds, if any.
    open: Option<u32>,
    last: u64,
    events: Vec<(u64, Event)>,
}

#[derive(Default)]
struct Lanes {
    lanes: Vec<Lane>,
    /// Open range id → its lane.
    open: HashMap<u64, usize>,
}

/// String ids of the attribute names.
struct AttributeNames {
    category: u32,
    color: u32,
    payload: u32,
}

/// A (domain, style)'s regions by message.
type RegionsByName = HashMap<String, Option<u32>>;

static NEXT_INSTANCE: AtomicUsize = AtomicUsize::new(1);

/// The NVTX recording of a process.
pub struct Annotations {
    instance: usize,
    rec: Recorder,
    default_domain: Domain,
    domains: Handles<Domain>,
    domain_names: Mutex<HashMap<String, usize>>,
    strings: Handles<Registered>,
    /// (domain, style) → name → region, over all threads.
    regions: Mutex<HashMap<(u32, Style), RegionsByName>>,
    lanes: Mutex<Lanes>,
    next_range: AtomicU64,
    next_resource: AtomicUsize,
    names: AttributeNames,
    /// gputrace's NCCL plugin, looked for when NCCL's domain is created.
    nccl_plugin: OnceLock<Option<NcclPlugin>>,
    /// `--capture-range nvtx:NAME@N-M`: the range that opens the
    /// recording window (docs/window.md).
    capture: Option<Capture>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Annotations {
    pub fn new(rec: Recorder) -> Self {
        let names = AttributeNames {
            category: rec.intern("NVTX category"),
            color: rec.intern("NVTX color"),
            payload: rec.intern("NVTX payload"),
        };
        Annotations {
            instance: NEXT_INSTANCE.fetch_add(1, Ordering::Relaxed),
            rec,
            default_domain: Domain::new("NVTX".into()),
            domains: Handles::default(),
            domain_names: Mutex::new(HashMap::new()),
            strings: Handles::default(),
            regions: Mutex::new(HashMap::new()),
            lanes: Mutex::new(Lanes::default()),
            next_range: AtomicU64::new(0),
            next_resource: AtomicUsize::new(0),
            names,
            nccl_plugin: OnceLock::new(),
            capture: None,
        }
    }

    pub fn recorder(&self) -> &Recorder {
        &self.rec
    }

    /// nvtxDomainCreate: a domain's handle (never 0); the same name gives
    /// the same handle.
    pub fn domain_create(&self, name: &str) -> usize {
        // Looked for before the lock: opening a library takes the
        // loader's lock.
        let nccl = (name == "NCCL")
            .then(|| *self.nccl_plugin.get_or_init(|| NcclPlugin::find(&config::Config::from_env_lenient().0)))
            .flatten();
        let mut names = lock(&self.domain_names);
        if let Some(&h) = names.get(name) {
            return h;
        }
        let domain = Domain { nccl, ..Domain::new(format!("NVTX domain {name}")) };
        match self.domains.add(domain) {
            Some(h) => {
                names.insert(name.to_string(), h);
                h
            }
            None => 0,
        }
    }

    /// The id and state of the domain `handle` names: 0 (null) and
    /// handles that are not ours are the default domain.
    fn domain(&self, handle: usize) -> (u32, &Domain) {
        match self.domains.get(handle) {
            Some(d) => (handle as u32, d),
            None => (0, &self.default_domain),
        }
    }

    fn domain_by_id(&self, id: u32) -> &Domain {
        self.domain(id as usize).1
    }

    /// nvtxDomainRegisterString: a handle (never 0; 0 when the table is
    /// full, which NVTX reads as "no string").
    pub fn register_string(&self, domain: usize, text: &str) -> usize {
        let (domain, _) = self.domain(domain);
        let entry = Registered { domain, text: text.to_string(), regions: [const { OnceLock::new() }; 3] };
        self.strings.add(entry).unwrap_or(0)
    }

    /// nvtxNameCategory / nvtxDomainNameCategory.
    pub fn name_category(&self, domain: usize, category: u32, name: &str) {
        let id = self.rec.intern(name);
        lock(&self.domain(domain).1.categories).insert(category, id);
    }

    /// nvtxNameCuDevice/Context/Stream, nvtxNameCudaDevice/Stream: the
    /// name of a CUDA object (a device ordinal, or a context or stream
    /// handle, which the CUDA agent ties to CUPTI's ids).
    pub fn name_cuda(&self, kind: raw::CudaObject, handle: u64, name: &str) {
        self.rec.define(&Definition::CudaName { kind, handle, name: name.to_string() });
    }

    /// nvtxNameOsThread: names the location of thread `tid`.
    pub fn name_thread(&self, tid: u32, name: &str) {
        self.rec.define(&Definition::ThreadName { tid, name: name.to_string() });
    }

    /// nvtxDomainResourceCreate: a handle (never 0). An OS thread's
    /// resource names that thread.
    pub fn resource_create(&self, domain: usize, kind: i32, identifier: u64, message: Message<'_>) -> usize {
        let _ = domain;
        if kind == crate::abi::RESOURCE_THREAD_NATIVE
            && let Ok(tid) = u32::try_from(identifier)
        {
            let name = self.message_text(message);
            if !name.is_empty() {
                self.name_thread(tid, &name);
            }
        }
        self.next_resource.fetch_add(1, Ordering::Relaxed) + 1
    }

    fn message_text(&self, message: Message<'_>) -> String {
        match message {
            Message::None => String::new(),
            Message::Text(t) => String::from_utf8_lossy(t).into_owned(),
            Message::Registered(h) => self.strings.get(h).map_or_else(String::new, |r| r.text.clone()),
        }
    }

    fn with_thread<R>(&self, f: impl FnOnce(&mut ThreadState) -> R) -> Option<R> {
        THREAD
            .try_with(|t| {
                let mut t = t.try_borrow_mut().ok()?;
                if t.instance != self.instance {
                    *t = ThreadState::of(self.instance);
                }
                Some(f(&mut t))
            })
            .ok()
            .flatten()
    }

    /// One visit of the calling thread's state for an annotation: readies
    /// the thread at its first annotation (so that the tracer's set-up is
    /// not inside what it times), resolves the annotation's region (`None`:
    /// the filter leaves it out), and runs `f` with both. Without the
    /// state (a thread being torn down) the region is resolved all the
    /// same and `f` is not run.
    fn visit<R>(
        &self,
        domain: u32,
        style: Style,
        message: Message<'_>,
        f: impl FnOnce(&mut ThreadState, Option<u32>) -> R,
    ) -> (Option<u32>, Option<R>) {
        let registered = |h: usize| {
            self.strings
                .get(h)
                .map(|r| *r.regions[style as usize].get_or_init(|| self.define_region(r.domain, style, &r.text)))
        };
        let visited = self.with_thread(|th| {
            if !th.prepared {
                th.prepared = true;
                self.rec.prepare_thread();
            }
            let region = match message {
                Message::Registered(h) => match registered(h) {
                    Some(r) => r,
                    None => th.text_region(self, domain, style, b""),
                },
                Message::Text(t) => th.text_region(self, domain, style, t),
                Message::None => th.text_region(self, domain, style, b""),
            };
            (region, f(th, region))
        });
        match visited {
            Some((region, r)) => (region, Some(r)),
            None => {
                let region = match message {
                    Message::Registered(h) => registered(h).unwrap_or_else(|| self.define_region(domain, style, "")),
                    Message::Text(t) => self.define_region(domain, style, &String::from_utf8_lossy(t)),
                    Message::None => self.define_region(domain, style, ""),
                };
                (region, None)
            }
        }
    }

    fn define_region(&self, domain: u32, style: Style, name: &str) -> Option<u32> {
        let mut regions = lock(&self.regions);
        let by_name = regions.entry((domain, style)).or_default();
        if let Some(&r) = by_name.get(name) {
            return r;
        }
        let group = &self.domain_by_id(domain).group;
        let r = self.rec.region(name, None, Paradigm::Nvtx, style.role(), group);
        by_name.insert(name.to_string(), r);
        drop(regions);
        // Written now, not by the append that uses it (inside the range).
        self.rec.flush_definitions();
        r
    }

    /// The attribute events of an annotation, with any strings they
    /// define written.
    fn attributes(&self, batch: &mut Batch, domain: &Domain, a: &Attributes<'_>) {
        let mut defined = false;
        let mut intern = |s: String| {
            defined = true;
            self.rec.intern(&s)
        };
        if a.category != 0 {
            let known = lock(&domain.categories).get(&a.category).copied();
            let value = known.unwrap_or_else(|| intern(a.category.to_string()));
            batch.push(Event::AttributeString { name: self.names.category, value });
        }
        if let Some(color) = a.color {
            batch.push(Event::Attribute { name: self.names.color, value: u64::from(color) });
        }
        let name = self.names.payload;
        match a.payload {
            Payload::None => {}
            Payload::Unsigned(v) => batch.push(Event::Attribute { name, value: v }),
            Payload::Signed(v) if v >= 0 => batch.push(Event::Attribute { name, value: v as u64 }),
            Payload::Signed(v) => batch.push(Event::AttributeString { name, value: intern(v.to_string()) }),
            Payload::Float(v) => batch.push(Event::AttributeString { name, value: intern(v.to_string()) }),
        }
        if defined {
            self.rec.flush_definitions();
        }
    }

    /// nvtxRangePush: the level of the pushed range in its domain on this
    /// thread (0 for the outermost).
    pub fn push(&self, domain: usize, a: &Attributes<'_>) -> i32 {
        let (id, d) = self.domain(domain);
        if let Some(plugin) = d.nccl {
            return self.push_to_plugin(id, plugin, a);
        }
        // With a recording window, a range pushed while it is closed is
        // left out, and its pop with it (docs/window.md).
        let windowed = recorder::window::windowed();
        let opens = windowed && self.capture_opens(a.message);
        let recording = !windowed || recorder::window::on();
        let (region, level) = self.visit(id, Style::PushPop, a.message, |th, region| {
            let stack = th.stack(id);
            stack.push(region.filter(|_| recording));
            let depth = stack.len();
            if opens {
                th.captures.push((id, depth));
            }
            depth as i32 - 1
        });
        let region = region.filter(|_| recording);
        let mut batch = Batch::new();
        if let Some(region) = region {
            self.attributes(&mut batch, d, a);
            batch.push(Event::Enter { region });
        }
        let t = gputrace_clock::now();
        let level = level.unwrap_or(0);
        if region.is_some() {
            self.rec.record_many(batch.at(t));
        }
        level
    }

    /// nvtxRangePop: the level of the range ended, or -1 when the thread
    /// has none open in that domain.
    pub fn pop(&self, domain: usize) -> i32 {
        self.pop_with(domain, None)
    }

    /// nvtxRangePopPayload: a pop that carries a payload (NCCL's, for
    /// the functions that know their communicator only at the end).
    pub fn pop_with(&self, domain: usize, binary: Binary<'_>) -> i32 {
        let t = gputrace_clock::now();
        let (id, d) = self.domain(domain);
        if let Some(plugin) = d.nccl {
            let level = self.with_thread(|th| {
                let stack = th.stack(id);
                stack.pop().map(|_| stack.len() as i32)
            });
            plugin.pop(binary);
            return level.flatten().unwrap_or(-1);
        }
        let popped = self
            .with_thread(|th| {
                let stack = th.stack(id);
                let depth = stack.len();
                let region = stack.pop()?;
                let level = stack.len() as i32;
                let closes = th.captures.last() == Some(&(id, depth));
                if closes {
                    th.captures.pop();
                }
                Some((region, level, closes))
            })
            .flatten();
        match popped {
            Some((region, level, closes)) => {
                if let Some(region) = region {
                    self.rec.record(t, &Event::Leave { region });
                }
                if closes {
                    self.capture_closes();
                }
                level
            }
            None => -1,
        }
    }

    /// A push in NCCL's domain: handed to the plugin, nothing recorded
    /// here; the thread's stack of the domain keeps the level.
    fn push_to_plugin(&self, id: u32, plugin: NcclPlugin, a: &Attributes<'_>) -> i32 {
        let level = self.with_thread(|th| {
            let stack = th.stack(id);
            stack.push(None);
            stack.len() as i32 - 1
        });
        match a.message {
            Message::Text(t) => plugin.push(t, a.binary),
            Message::Registered(h) => {
                plugin.push(self.strings.get(h).map_or(&b""[..], |r| r.text.as_bytes()), a.binary)
            }
            Message::None => plugin.push(b"", a.binary),
        }
        level.unwrap_or(0)
    }

    /// nvtxMark.
    pub fn mark(&self, domain: usize, a: &Attributes<'_>) {
        if !recorder::window::on() {
            return;
        }
        let (id, d) = self.domain(domain);
        let Some(region) = self.visit(id, Style::Mark, a.message, |_, _| ()).0 else { return };
        let mut batch = Batch::new();
        self.attributes(&mut batch, d, a);
        batch.push(Event::Enter { region });
        batch.push(Event::Leave { region });
        let t = gputrace_clock::now();
        self.rec.record_many(batch.at(t));
    }

    /// nvtxRangeStart: the range's id (never 0).
    pub fn range_start(&self, domain: usize, a: &Attributes<'_>) -> u64 {
        let (id, d) = self.domain(domain);
        let range = self.next_range.fetch_add(1, Ordering::Relaxed) + 1;
        // Outside the recording window: not recorded, and its end (an id
        // that is not open) ignored.
        if !recorder::window::on() {
            return range;
        }
        let Some(region) = self.visit(id, Style::StartEnd, a.message, |_, _| ()).0 else { return range };
        let mut batch = Batch::new();
        self.attributes(&mut batch, d, a);
        batch.push(Event::Enter { region });
        let mut lanes = lock(&self.lanes);
        let t = gputrace_clock::now();
        let index = match lanes.lanes.iter().position(|l| l.open.is_none()) {
            Some(i) => i,
            None => {
                let n = lanes.lanes.len();
                let name = if n == 0 { "NVTX ranges".to_string() } else { format!("NVTX ranges {}", n + 1) };
                let location = self.rec.define_location(LocationKind::Lane { id: n as u32, gpu: false }, &name);
                lanes.lanes.push(Lane { location, open: None, last: 0, events: Vec::new() });
                n
            }
        };
        lanes.open.insert(range, index);
        let lane = &mut lanes.lanes[index];
        // A range ended on another thread may have taken its time just
        // after this one: a lane's events stay in order.
        let t0 = t.max(lane.last);
        lane.events.extend_from_slice(batch.at(t0));
        lane.open = Some(region);
        lane.last = t0;
        self.flush_if_full(lane);
        range
    }

    /// nvtxRangeEnd: ends the range `id` (from any thread); an id that is
    /// not open is ignored.
    pub fn range_end(&self, range: u64) {
        let t = gputrace_clock::now();
        let mut lanes = lock(&self.lanes);
        let Some(index) = lanes.open.remove(&range) else { return };
        let lane = &mut lanes.lanes[index];
        let Some(region) = lane.open.take() else { return };
        let t1 = t.max(lane.last);
        lane.events.push((t1, Event::Leave { region }));
        lane.last = t1;
        self.flush_if_full(lane);
    }

    fn flush_if_full(&self, lane: &mut Lane) {
        if lane.events.len() >= LANE_BATCH {
            self.rec.write_batch(lane.location, &lane.events);
            lane.events.clear();
        }
    }

    /// Writes the lanes' events (ranges still open stay open: the merge
    /// closes them at the lane's last event).
    pub fn flush_lanes(&self) {
        let mut lanes = lock(&self.lanes);
        for lane in &mut lanes.lanes {
            if !lane.events.is_empty() {
                self.rec.write_batch(lane.location, &lane.events);
                lane.events.clear();
            }
        }
    }

    /// The end of the process: the lanes, then the stream.
    pub fn finish(&self, exit_started: u64) {
        self.flush_lanes();
        self.rec.finish_from(exit_started);
    }
}

#[cfg(test)]
mod tests;
