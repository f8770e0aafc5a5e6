//! NVML sampled over time, on one thread per process: NVLink traffic and
//! GPU metrics ([`crate::gpu_metrics`]), each at its own period.
//!
//! NVLink traffic: the thread samples NVML's cumulative NVLink
//! counters (KiB sent and received over all links) of every GPU the
//! process uses, at `GPUTRACE_NVLINK_INTERVAL`, and records the bytes
//! since the first sample as two metrics per GPU on its `NVLink GPU d`
//! location. NVML counts all NVLink traffic, including what no copy record
//! shows (NCCL kernels writing into a peer's memory), which is why it is
//! used rather than CUPTI: CUPTI's NVLink records give the topology only.
//!
//! NVML itself runs in another process ([`crate::nvml_proxy`]): called
//! from this thread beside the program's own NVML calls (NCCL's), it made
//! NCCL see fewer NVLinks.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::nvml_proxy::{ProxyError, Remote};
use raw::{Definition, Event, LocationKind, MetricDef};
use recorder::Recorder;

use crate::gpu_metrics::GpuTrack;

/// Samples are written at least this often.
const WRITE_EVERY_NS: u64 = 1_000_000_000;

/// What is sampled how often; `None`: not sampled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Intervals {
    /// NVLink traffic (`GPUTRACE_NVLINK_INTERVAL`).
    pub nvlink: Option<Duration>,
    /// GPU metrics (`GPUTRACE_GPU_METRICS_INTERVAL`).
    pub gpu: Option<Duration>,
}

impl Intervals {
    /// Whether anything is sampled.
    pub fn any(&self) -> bool {
        self.nvlink.is_some() || self.gpu.is_some()
    }
}

/// The running sampler; stopped (and its last samples written) on drop.
pub struct Sampler {
    add: Sender<(u32, [u8; 16])>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

struct Gpu {
    ordinal: u32,
    /// The server's number for it.
    device: u32,
    /// Location and metric ids, defined at the first successful sample so
    /// that a GPU without NVLink gets no empty location.
    defined: Option<(u32, [u32; 2])>,
    base: Option<[u64; 2]>,
    pending: Vec<(u64, Event)>,
    metrics: GpuTrack,
}

/// Metric ids are shared by the process's stream; the agent's sampler is
/// the only one defining metrics in it.
static NEXT_METRIC: Mutex<u32> = Mutex::new(1);

pub(crate) fn next_metric_ids(n: u32) -> u32 {
    let mut next = NEXT_METRIC.lock().unwrap_or_else(|e| e.into_inner());
    let first = *next;
    *next += n;
    first
}

impl Sampler {
    /// Starts sampling; GPUs are added with [`Sampler::add`]. Fails when
    /// NVML is not available.
    pub fn start(rec: Recorder, intervals: Intervals) -> Result<Sampler, ProxyError> {
        let opened = match EARLY.lock() {
            Ok(mut early) => std::mem::replace(&mut *early, Early::Taken),
            Err(_) => Early::Idle,
        };
        let nvml = match opened {
            Early::Started(Ok(remote)) => remote,
            Early::Started(Err(e)) => return Err(e),
            Early::Idle | Early::Taken => Remote::start()?,
        };
        let (add, added) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("gputrace-nvml".into())
            .spawn(move || run(nvml, rec, intervals, added, flag))
            .ok();
        Ok(Sampler { add, stop, thread })
    }

    /// Starts the NVML server ahead of [`Sampler::start`] (opening NVML
    /// takes tens of milliseconds), on the caller's thread: the agent does
    /// it as a context is created, off the program's threads.
    pub fn open_early() {
        // Started under the lock: a sampler that starts meanwhile (from a
        // buffer's device records) waits for this server and takes it
        // instead of starting a second one; one that started before has
        // its own, and none is started here that nobody would take.
        if let Ok(mut early) = EARLY.lock()
            && matches!(*early, Early::Idle)
        {
            *early = Early::Started(Remote::start());
        }
    }

    /// Samples the GPU of CUDA ordinal `ordinal` (with this UUID) too.
    pub fn add(&self, ordinal: u32, uuid: [u8; 16]) {
        let _ = self.add.send((ordinal, uuid));
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            // The thread sleeps parked: it takes its last samples now
            // rather than after its period.
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

/// The server [`Sampler::open_early`] started (or why it could not), for
/// the sampler to take.
static EARLY: Mutex<Early> = Mutex::new(Early::Idle);

enum Early {
    /// Nothing started yet.
    Idle,
    /// Started early, not yet taken.
    Started(Result<Remote, ProxyError>),
    /// The sampler runs (with this server or one of its own).
    Taken,
}

fn run(mut nvml: Remote, rec: Recorder, intervals: Intervals, added: Receiver<(u32, [u8; 16])>, stop: Arc<AtomicBool>) {
    let mut gpus: Vec<Gpu> = Vec::new();
    let mut known: Vec<u32> = Vec::new();
    let mut last_write = gputrace_clock::now();
    let ns = |d: Option<Duration>| d.map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX).max(1));
    let (nvlink_every, gpu_every) = (ns(intervals.nvlink), ns(intervals.gpu));
    let (mut nvlink_due, mut gpu_due) = (0u64, 0u64);
    loop {
        let stopping = stop.load(Ordering::Relaxed);
        while let Ok((ordinal, uuid)) = added.try_recv() {
            if known.contains(&ordinal) {
                continue;
            }
            known.push(ordinal);
            match nvml.open(&uuid_string(&uuid)) {
                Ok(device) => gpus.push(Gpu {
                    ordinal,
                    device,
                    defined: None,
                    base: None,
                    pending: Vec::new(),
                    metrics: GpuTrack::new(ordinal),
                }),
                Err(e) => tracing::debug!(ordinal, error = %e, "no NVML device for this GPU"),
            }
        }
        let now = gputrace_clock::now();
        if let Some(every) = nvlink_every
            && (now >= nvlink_due || stopping)
        {
            nvlink_due = now.saturating_add(every);
            for g in &mut gpus {
                sample_nvlink(&mut nvml, &rec, g, now);
            }
        }
        if let Some(every) = gpu_every
            && (now >= gpu_due || stopping)
        {
            gpu_due = now.saturating_add(every);
            for g in &mut gpus {
                sample_gpu(&mut nvml, &rec, g, now);
            }
        }
        // A server that cannot be asked any more: what was sampled is
        // written now, and nothing is asked again.
        let gone = nvml.broken().filter(|_| !gpus.is_empty()).map(str::to_owned);
        if stopping || gone.is_some() || now.saturating_sub(last_write) >= WRITE_EVERY_NS {
            for g in &mut gpus {
                if let Some((location, _)) = g.defined {
                    if recorder::window::windowed() {
                        g.pending.retain(|(t, _)| recorder::window::contains(*t));
                    }
                    rec.write_batch(location, &g.pending);
                }
                g.pending.clear();
                g.metrics.write(&rec);
            }
            last_write = now;
        }
        if let Some(why) = gone {
            recorder::diag::warn_once(&format!("NVLink traffic and GPU metrics are no longer sampled: {why}"));
            gpus.clear();
        }
        if stopping {
            return;
        }
        let due = [nvlink_every.map(|_| nvlink_due), gpu_every.map(|_| gpu_due)].into_iter().flatten().min();
        let wait = due.unwrap_or(u64::MAX).saturating_sub(gputrace_clock::now()).min(WRITE_EVERY_NS);
        std::thread::park_timeout(Duration::from_nanos(wait));
    }
}

fn sample_nvlink(nvml: &mut Remote, rec: &Recorder, g: &mut Gpu, now: u64) {
    let Ok((tx, rx)) = nvml.nvlink(g.device) else {
        return;
    };
    let base = *g.base.get_or_insert([tx, rx]);
    let (_, metrics) = *g.defined.get_or_insert_with(|| define(rec, g.ordinal));
    for (i, v) in [tx, rx].into_iter().enumerate() {
        let bytes = v.saturating_sub(base[i]).saturating_mul(1024);
        g.pending.push((now, Event::Metric { metric: metrics[i], value: bytes }));
    }
}

/// One round of GPU metrics; queries the GPU does not support are not
/// made again.
fn sample_gpu(nvml: &mut Remote, rec: &Recorder, g: &mut Gpu, now: u64) {
    if !g.metrics.state().any_left() {
        return;
    }
    let m = g.metrics.state();
    let wanted = (0..6).filter(|&i| m.wanted(i)).fold(0u8, |mask, i| mask | 1 << i);
    let Ok(readings) = nvml.gpu(g.device, wanted) else {
        return;
    };
    g.metrics.sample(rec, &readings, now);
}

/// Defines the metric location and the two metrics of GPU `ordinal`.
fn define(rec: &Recorder, ordinal: u32) -> (u32, [u32; 2]) {
    let location =
        rec.define_location(LocationKind::DeviceMetrics { device: ordinal }, &format!("NVLink GPU {ordinal}"));
    let first = next_metric_ids(2);
    let ids = [first, first + 1];
    for (id, (name, what)) in ids.iter().zip([("NVLink sent", "sent"), ("NVLink received", "received")]) {
        rec.define(&Definition::Metric(MetricDef {
            id: *id,
            name: name.into(),
            unit: "bytes".into(),
            description: format!("bytes {what} over all NVLinks of the GPU since the process started (NVML)"),
            device: ordinal,
            cumulative: true,
        }));
    }
    (location, ids)
}

/// `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, as NVML names devices.
pub fn uuid_string(u: &[u8; 16]) -> String {
    let h: String = u.iter().map(|b| format!("{b:02x}")).collect();
    format!("GPU-{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32])
}

#[cfg(test)]
mod tests {
    #[test]
    fn uuids_print_as_nvml_expects() {
        let u = [0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 1, 2, 3, 4, 5, 6, 7, 8];
        assert_eq!(super::uuid_string(&u), "GPU-12345678-9abc-def0-0102-030405060708");
    }
}
