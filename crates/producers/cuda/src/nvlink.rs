//! NVLink traffic over time: a thread samples NVML's cumulative NVLink
//! counters (KiB sent and received over all links) of every GPU the
//! process uses, at `GPUTRACE_NVLINK_INTERVAL`, and records the bytes
//! since the first sample as two metrics per GPU on its `NVLink GPU d`
//! location. NVML counts all NVLink traffic, including what no copy record
//! shows (NCCL kernels writing into a peer's memory), which is why it is
//! used rather than CUPTI: CUPTI's NVLink records give the topology only.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use nvml_sys::{ALL_LINKS, Device, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, Nvml};
use raw::{Definition, Event, LocationKind, MetricDef};
use runtime::Recorder;

/// Samples are written at least this often.
const WRITE_EVERY_NS: u64 = 1_000_000_000;

/// The running sampler; stopped (and its last samples written) on drop.
pub struct Sampler {
    add: Sender<(u32, [u8; 16])>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

struct Gpu {
    ordinal: u32,
    device: Device,
    /// Location and metric ids, defined at the first successful sample so
    /// that a GPU without NVLink gets no empty location.
    defined: Option<(u32, [u32; 2])>,
    base: Option<[u64; 2]>,
    pending: Vec<(u64, Event)>,
}

/// Metric ids are shared by the process's stream; the agent's sampler is
/// the only one defining metrics in it.
static NEXT_METRIC: Mutex<u32> = Mutex::new(1);

impl Sampler {
    /// Starts sampling; GPUs are added with [`Sampler::add`]. Fails when
    /// NVML is not available.
    pub fn start(rec: Recorder, interval: Duration) -> Result<Sampler, nvml_sys::NvmlError> {
        let nvml = Nvml::open()?;
        let (add, added) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("gputrace-nvlink".into())
            .spawn(move || run(nvml, rec, interval, added, flag))
            .ok();
        Ok(Sampler { add, stop, thread })
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
            let _ = t.join();
        }
    }
}

fn run(nvml: Nvml, rec: Recorder, interval: Duration, added: Receiver<(u32, [u8; 16])>, stop: Arc<AtomicBool>) {
    let mut gpus: Vec<Gpu> = Vec::new();
    let mut known: Vec<u32> = Vec::new();
    let mut last_write = raw::clock::now();
    let fields =
        [(NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, ALL_LINKS), (NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, ALL_LINKS)];
    loop {
        let stopping = stop.load(Ordering::Relaxed);
        while let Ok((ordinal, uuid)) = added.try_recv() {
            if known.contains(&ordinal) {
                continue;
            }
            known.push(ordinal);
            match nvml.device_by_uuid(&uuid_string(&uuid)) {
                Ok(device) => gpus.push(Gpu { ordinal, device, defined: None, base: None, pending: Vec::new() }),
                Err(e) => tracing::debug!(ordinal, error = %e, "no NVML device for this GPU"),
            }
        }
        let now = raw::clock::now();
        for g in &mut gpus {
            let Ok(values) = nvml.field_values(g.device, &fields) else {
                continue;
            };
            let (Some(tx), Some(rx)) = (values[0].as_u64(), values[1].as_u64()) else {
                continue;
            };
            let base = *g.base.get_or_insert([tx, rx]);
            let (_, metrics) = *g.defined.get_or_insert_with(|| define(&rec, g.ordinal));
            for (i, v) in [tx, rx].into_iter().enumerate() {
                let bytes = v.saturating_sub(base[i]).saturating_mul(1024);
                g.pending.push((now, Event::Metric { metric: metrics[i], value: bytes }));
            }
        }
        if stopping || now.saturating_sub(last_write) >= WRITE_EVERY_NS {
            for g in &mut gpus {
                if let Some((location, _)) = g.defined {
                    rec.write_batch(location, &g.pending);
                }
                g.pending.clear();
            }
            last_write = now;
        }
        if stopping {
            return;
        }
        std::thread::sleep(interval);
    }
}

/// Defines the metric location and the two metrics of GPU `ordinal`.
fn define(rec: &Recorder, ordinal: u32) -> (u32, [u32; 2]) {
    let location =
        rec.define_location(LocationKind::DeviceMetrics { device: ordinal }, &format!("NVLink GPU {ordinal}"));
    let mut next = NEXT_METRIC.lock().unwrap_or_else(|e| e.into_inner());
    let ids = [*next, *next + 1];
    *next += 2;
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
