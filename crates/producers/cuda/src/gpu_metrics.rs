//! GPU metrics over time: what NVML says of a GPU's state (utilization,
//! memory in use, SM clock, power, temperature), sampled on the thread of
//! [`crate::nvlink::Sampler`] at `GPUTRACE_GPU_METRICS_INTERVAL` and
//! recorded as instantaneous metrics on the GPU's `GPU metrics d`
//! location.
//!
//! This module turns one round of NVML answers into metric events; it
//! calls nothing itself. A metric is defined at its first value, so one
//! the GPU does not support (`NVML_ERROR_NOT_SUPPORTED`) is never
//! defined and never asked again; another failure skips that sample.

use nvml_sys::{Memory, NvmlError, Utilization};
use raw::{Definition, Event, LocationKind, MetricDef};
use recorder::Recorder;

/// The metrics: (name, unit, description). The order is that of
/// [`Readings::from_nvml`]'s values.
pub const METRICS: [(&str, &str, &str); 6] = [
    (
        "GPU utilization",
        "%",
        "percent of the last sample period (1/6 s to 1 s, by product) during which a kernel ran on the GPU (NVML)",
    ),
    (
        "GPU memory utilization",
        "%",
        "percent of the last sample period during which device memory was read or written (NVML)",
    ),
    ("GPU memory used", "bytes", "device memory in use on the GPU, by every process and the driver (NVML)"),
    ("SM clock", "MHz", "current clock of the streaming multiprocessors (NVML)"),
    ("GPU power", "mW", "power drawn by the board, averaged by the driver over about a second on recent GPUs (NVML)"),
    ("GPU temperature", "°C", "temperature of the GPU die (NVML)"),
];

/// What one query gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    Value(u64),
    /// The GPU does not offer this metric: never ask again.
    Unsupported,
    /// Failed this time (the GPU lost, a transient error).
    Failed,
}

/// One round of queries of one GPU, in the order of [`METRICS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Readings(pub [Reading; 6]);

fn reading<T>(r: Result<T, NvmlError>, value: impl FnOnce(T) -> u64) -> Reading {
    match r {
        Ok(v) => Reading::Value(value(v)),
        Err(e) if e.not_supported() => Reading::Unsupported,
        Err(_) => Reading::Failed,
    }
}

impl Readings {
    /// The NVML answers as metric values: utilization in percent, memory
    /// in bytes, clock in MHz, power in mW, temperature in °C (NVML's
    /// units, unchanged).
    pub fn from_nvml(
        utilization: Result<Utilization, NvmlError>,
        memory: Result<Memory, NvmlError>,
        sm_clock: Result<u32, NvmlError>,
        power: Result<u32, NvmlError>,
        temperature: Result<u32, NvmlError>,
    ) -> Readings {
        let (gpu, mem) = match utilization {
            Ok(u) => (Reading::Value(u.gpu.into()), Reading::Value(u.memory.into())),
            Err(e) => {
                let r = reading::<()>(Err(e), |_| 0);
                (r, r)
            }
        };
        Readings([
            gpu,
            mem,
            reading(memory, |m| m.used),
            reading(sm_clock, u64::from),
            reading(power, u64::from),
            reading(temperature, u64::from),
        ])
    }
}

/// The metrics of one GPU: which are defined (with their ids) and which
/// the GPU does not support.
#[derive(Debug, Default)]
pub struct GpuMetrics {
    ids: [Option<u32>; 6],
    unsupported: [bool; 6],
}

impl GpuMetrics {
    /// Whether any metric may still give a value (if not, the GPU need not
    /// be asked any more).
    pub fn any_left(&self) -> bool {
        self.unsupported.iter().any(|u| !u)
    }

    /// Whether metric `i` is still asked for.
    pub fn wanted(&self, i: usize) -> bool {
        !self.unsupported[i]
    }

    /// The events of one round at time `now`; `define(i)` defines metric
    /// `i` (of [`METRICS`]) at its first value and returns its id.
    pub fn record(
        &mut self,
        readings: &Readings,
        now: u64,
        mut define: impl FnMut(usize) -> u32,
        out: &mut Vec<(u64, Event)>,
    ) {
        for (i, r) in readings.0.iter().enumerate() {
            match *r {
                Reading::Value(value) if !self.unsupported[i] => {
                    let metric = *self.ids[i].get_or_insert_with(|| define(i));
                    out.push((now, Event::Metric { metric, value }));
                }
                Reading::Unsupported if self.ids[i].is_none() => self.unsupported[i] = true,
                _ => {}
            }
        }
    }
}

/// The GPU metrics of one GPU in a process's stream: its `GPU metrics d`
/// location and metrics, defined at their first value, and the samples
/// not yet written.
#[derive(Debug)]
pub struct GpuTrack {
    ordinal: u32,
    location: Option<u32>,
    metrics: GpuMetrics,
    pending: Vec<(u64, Event)>,
}

impl GpuTrack {
    /// The GPU of CUDA ordinal `ordinal`.
    pub fn new(ordinal: u32) -> GpuTrack {
        GpuTrack { ordinal, location: None, metrics: GpuMetrics::default(), pending: Vec::new() }
    }

    /// Which metrics are defined or still asked for.
    pub fn state(&self) -> &GpuMetrics {
        &self.metrics
    }

    /// Records one round of readings at `now`, defining what is new.
    pub fn sample(&mut self, rec: &Recorder, readings: &Readings, now: u64) {
        let (ordinal, location) = (self.ordinal, &mut self.location);
        let define = |i: usize| {
            location.get_or_insert_with(|| {
                rec.define_location(LocationKind::DeviceMetrics { device: ordinal }, &format!("GPU metrics {ordinal}"))
            });
            let id = crate::nvlink::next_metric_ids(1);
            let (name, unit, description) = METRICS[i];
            rec.define(&Definition::Metric(MetricDef {
                id,
                name: name.into(),
                unit: unit.into(),
                description: description.into(),
                device: ordinal,
                cumulative: false,
            }));
            id
        };
        self.metrics.record(readings, now, define, &mut self.pending);
    }

    /// Writes the samples taken so far.
    pub fn write(&mut self, rec: &Recorder) {
        if let Some(location) = self.location {
            if recorder::window::windowed() {
                self.pending.retain(|(t, _)| recorder::window::contains(*t));
            }
            rec.write_batch(location, &self.pending);
        }
        self.pending.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nvml_sys::NvmlError;

    fn unsupported<T>() -> Result<T, NvmlError> {
        Err(NvmlError::Call("q", nvml_sys::NVML_ERROR_NOT_SUPPORTED))
    }

    #[test]
    fn nvml_answers_become_values_in_nvml_units() {
        let r = Readings::from_nvml(
            Ok(Utilization { gpu: 87, memory: 12 }),
            Ok(Memory { total: 80 << 30, free: (80 << 30) - 1234, used: 1234 }),
            Ok(1980),
            Ok(312_456),
            Ok(41),
        );
        assert_eq!(
            r.0,
            [87, 12, 1234, 1980, 312_456, 41].map(Reading::Value),
            "utilization %, used bytes, MHz, mW, °C"
        );
        let r = Readings::from_nvml(unsupported(), Err(NvmlError::Call("q", 15)), Ok(1), unsupported(), Ok(2));
        assert_eq!(
            r.0,
            [
                Reading::Unsupported,
                Reading::Unsupported,
                Reading::Failed,
                Reading::Value(1),
                Reading::Unsupported,
                Reading::Value(2)
            ]
        );
    }

    #[test]
    fn metrics_are_defined_once_at_their_first_value_and_unsupported_ones_never() {
        let mut m = GpuMetrics::default();
        let mut defined = Vec::new();
        let mut events = Vec::new();
        let mut next = 10;
        let mut define = |i: usize| {
            defined.push(i);
            next += 1;
            next
        };
        let first = Readings([
            Reading::Value(50),
            Reading::Value(5),
            Reading::Failed,
            Reading::Value(1500),
            Reading::Unsupported,
            Reading::Value(40),
        ]);
        m.record(&first, 100, &mut define, &mut events);
        let second = Readings([
            Reading::Value(60),
            Reading::Value(6),
            Reading::Value(4096),
            Reading::Value(1600),
            Reading::Unsupported,
            Reading::Failed,
        ]);
        m.record(&second, 200, &mut define, &mut events);
        // Memory used is defined at its first value (the second round);
        // power never.
        assert_eq!(defined, vec![0, 1, 3, 5, 2]);
        assert!(!m.wanted(4) && m.wanted(2) && m.any_left());
        let got: Vec<(u64, u32, u64)> = events
            .iter()
            .map(|(t, e)| match e {
                Event::Metric { metric, value } => (*t, *metric, *value),
                other => panic!("not a metric: {other:?}"),
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (100, 11, 50),
                (100, 12, 5),
                (100, 13, 1500),
                (100, 14, 40),
                (200, 11, 60),
                (200, 12, 6),
                (200, 15, 4096),
                (200, 13, 1600)
            ]
        );
    }

    #[test]
    fn a_gpu_supporting_nothing_is_not_asked_again() {
        let mut m = GpuMetrics::default();
        let mut events = Vec::new();
        m.record(&Readings([Reading::Unsupported; 6]), 1, |_| unreachable!("nothing to define"), &mut events);
        assert!(events.is_empty());
        assert!(!m.any_left());
    }

    #[test]
    fn every_metric_has_a_name_a_unit_and_a_description() {
        let mut names: Vec<&str> = METRICS.iter().map(|(n, _, _)| *n).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), METRICS.len());
        assert!(METRICS.iter().all(|(_, u, d)| !u.is_empty() && d.ends_with("(NVML)")));
    }
}
