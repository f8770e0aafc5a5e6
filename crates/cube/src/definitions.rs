//! What a cube's definitions are: the handles a [`Cube`](crate::Cube)
//! gives out (small `Copy` indices, one type per tree), and the
//! descriptions of metrics, regions, location groups and locations, and
//! the values of severities.

macro_rules! handle {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub(crate) u32);

        impl $name {
            /// The handle's index, in definition order.
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }
    };
}

handle!(
    /// A metric of a [`Cube`](crate::Cube).
    MetricId
);
handle!(
    /// A region (function, MPI call, kernel...) of a [`Cube`](crate::Cube).
    RegionId
);
handle!(
    /// A call-tree node of a [`Cube`](crate::Cube).
    CnodeId
);
handle!(
    /// A system-tree node (machine, host, device) of a [`Cube`](crate::Cube).
    NodeId
);
handle!(
    /// A location group (process, GPU context) of a [`Cube`](crate::Cube).
    GroupId
);
handle!(
    /// A location (thread, GPU stream) of a [`Cube`](crate::Cube).
    LocationId
);

/// How a metric's values are stored (`dtype`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataType {
    /// `UINT64`: counts, bytes.
    Uint64,
    /// `INT64`.
    Int64,
    /// `DOUBLE`: times in seconds.
    Double,
}

impl DataType {
    pub(crate) fn name(self) -> &'static str {
        match self {
            DataType::Uint64 => "UINT64",
            DataType::Int64 => "INT64",
            DataType::Double => "DOUBLE",
        }
    }
}

/// What a stored value at a call-tree node means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    /// The node's own share (Score-P's `visits`, `bytes_sent`): a reader
    /// adds the subtree for the inclusive value.
    Exclusive,
    /// The node with everything called from it (Score-P's `time`): a
    /// reader subtracts the children for the exclusive value.
    Inclusive,
}

impl MetricKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            MetricKind::Exclusive => "EXCLUSIVE",
            MetricKind::Inclusive => "INCLUSIVE",
        }
    }
}

/// A metric's definition.
#[derive(Debug, Clone, Copy)]
pub struct Metric<'a> {
    /// The name tools look metrics up by (`time`, `visits`).
    pub unique_name: &'a str,
    /// The name shown (`Time`).
    pub display_name: &'a str,
    pub data_type: DataType,
    pub kind: MetricKind,
    /// Unit of measurement: `sec`, `occ`, `bytes`.
    pub unit: &'a str,
    /// Where its documentation is (may be empty).
    pub url: &'a str,
    pub description: &'a str,
}

impl<'a> Metric<'a> {
    pub fn new(
        unique_name: &'a str,
        display_name: &'a str,
        data_type: DataType,
        kind: MetricKind,
        unit: &'a str,
    ) -> Self {
        Metric { unique_name, display_name, data_type, kind, unit, url: "", description: "" }
    }

    pub fn description(self, description: &'a str) -> Self {
        Metric { description, ..self }
    }
}

/// A region's definition: what a call-tree node calls.
#[derive(Debug, Clone, Copy)]
pub struct Region<'a> {
    pub name: &'a str,
    /// The mangled (or full) name; the name when empty.
    pub mangled_name: &'a str,
    /// `mpi`, `cuda`, `user`, `measurement`...
    pub paradigm: &'a str,
    /// `function`, `point2point`, `barrier`, `artificial`...
    pub role: &'a str,
    /// The source file or module (may be empty).
    pub module: &'a str,
    /// First and last source line, 0 when unknown (as Score-P writes
    /// them: CubeLib's `cube_sanity` takes a negative line as an error).
    pub begin_line: i64,
    pub end_line: i64,
    pub description: &'a str,
}

impl<'a> Region<'a> {
    pub fn new(name: &'a str, paradigm: &'a str, role: &'a str) -> Self {
        Region { name, mangled_name: "", paradigm, role, module: "", begin_line: 0, end_line: 0, description: "" }
    }
}

/// What a location group is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupType {
    /// A process (an MPI rank).
    Process,
    /// A group of metric locations.
    Metrics,
    /// An accelerator context (a CUDA context); needs Cube 4.7 to read.
    Accelerator,
}

impl GroupType {
    pub(crate) fn name(self) -> &'static str {
        match self {
            GroupType::Process => "process",
            GroupType::Metrics => "metrics",
            GroupType::Accelerator => "accelerator",
        }
    }
}

/// What a location is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocationType {
    /// A CPU thread.
    Thread,
    /// An accelerator stream (a CUDA stream); needs Cube 4.7 to read.
    AcceleratorStream,
    /// Where metrics are sampled.
    Metric,
}

impl LocationType {
    pub(crate) fn name(self) -> &'static str {
        match self {
            LocationType::Thread => "thread",
            LocationType::AcceleratorStream => "accelerator stream",
            LocationType::Metric => "metric",
        }
    }
}

/// A severity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    U64(u64),
    I64(i64),
    F64(f64),
}

impl Value {
    pub(crate) fn type_name(self) -> &'static str {
        match self {
            Value::U64(_) => "UINT64",
            Value::I64(_) => "INT64",
            Value::F64(_) => "DOUBLE",
        }
    }
}

impl From<u64> for Value {
    fn from(v: u64) -> Self {
        Value::U64(v)
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::I64(v)
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::F64(v)
    }
}
