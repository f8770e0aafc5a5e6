//! The profile's metrics, as Score-P names and stores them, and their
//! indices.

use cube::{DataType, MetricKind};

/// The profile's metrics: unique name, display name, type, kind, unit,
/// description.
pub const METRICS: &[(&str, &str, DataType, MetricKind, &str, &str)] = &[
    ("visits", "Visits", DataType::Uint64, MetricKind::Exclusive, "occ", "Number of visits"),
    ("time", "Time", DataType::Double, MetricKind::Inclusive, "sec", "Time in the call path (inclusive)"),
    (
        "bytes_sent",
        "bytes_sent",
        DataType::Uint64,
        MetricKind::Exclusive,
        "bytes",
        "Bytes sent: MPI and NCCL point-to-point messages and collectives",
    ),
    (
        "bytes_received",
        "bytes_received",
        DataType::Uint64,
        MetricKind::Exclusive,
        "bytes",
        "Bytes received: MPI and NCCL point-to-point messages and collectives",
    ),
    ("kernel_time", "GPU kernel time", DataType::Double, MetricKind::Inclusive, "sec", "Time of GPU kernels"),
    ("copy_time", "GPU copy time", DataType::Double, MetricKind::Inclusive, "sec", "Time of GPU memory copies"),
    ("copy_bytes", "Bytes copied", DataType::Uint64, MetricKind::Exclusive, "bytes", "Bytes of GPU memory copies"),
    ("memset_time", "GPU memset time", DataType::Double, MetricKind::Inclusive, "sec", "Time of GPU memsets"),
    ("memset_bytes", "Bytes set", DataType::Uint64, MetricKind::Exclusive, "bytes", "Bytes of GPU memsets"),
    (
        "hits",
        "Hits",
        DataType::Uint64,
        MetricKind::Exclusive,
        "occ",
        "Samples whose innermost frame is the call path's (CPU time sampling, --sampling)",
    ),
    (
        "sampled_time",
        "Sampled time",
        DataType::Double,
        MetricKind::Inclusive,
        "sec",
        "CPU time by sampling: samples in the call path, everything it called included, times the period",
    ),
];

/// Indices into [`METRICS`].
pub(crate) mod m {
    pub const VISITS: usize = 0;
    pub const TIME: usize = 1;
    pub const SENT: usize = 2;
    pub const RECEIVED: usize = 3;
    pub const KERNEL_TIME: usize = 4;
    pub const COPY_TIME: usize = 5;
    pub const COPY_BYTES: usize = 6;
    pub const MEMSET_TIME: usize = 7;
    pub const MEMSET_BYTES: usize = 8;
    pub const HITS: usize = 9;
    pub const SAMPLED_TIME: usize = 10;
}
