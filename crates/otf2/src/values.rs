//! Values carried by attributes, properties and metric events.
//!
//! OTF2 passes these as a type tag plus a C union; here they are enums
//! whose variant is the tag, so a value can never disagree with its type.

use crate::refs::{
    AttributeRef, CommRef, GroupRef, LocationGroupRef, LocationRef, MetricRef, RegionRef, RmaWinRef, StringRef,
    SystemTreeNodeRef,
};
use crate::types::{CollectiveOp, Type};

/// The value of an attribute on an event, or of a property of a location,
/// location group, system tree node or paradigm.
///
/// Strings are interned first: `AttributeValue::String(defs.string("x"))`.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum AttributeValue {
    U8(u8),
    U16(u16),
    U32(u32),
    U64(u64),
    I8(i8),
    I16(i16),
    I32(i32),
    I64(i64),
    F32(f32),
    F64(f64),
    String(StringRef),
    Attribute(AttributeRef),
    Location(LocationRef),
    Region(RegionRef),
    Group(GroupRef),
    Metric(MetricRef),
    Comm(CommRef),
    RmaWin(RmaWinRef),
    LocationGroup(LocationGroupRef),
    /// A type this enum does not model (parameters, calling contexts, I/O
    /// handles, ...): the type tag and the union's bits, zero-extended.
    Raw {
        /// The OTF2 type.
        ty: Type,
        /// The value's bits.
        bits: u64,
    },
}

impl AttributeValue {
    /// The OTF2 type of this value.
    pub const fn ty(&self) -> Type {
        match self {
            Self::U8(_) => Type::U8,
            Self::U16(_) => Type::U16,
            Self::U32(_) => Type::U32,
            Self::U64(_) => Type::U64,
            Self::I8(_) => Type::I8,
            Self::I16(_) => Type::I16,
            Self::I32(_) => Type::I32,
            Self::I64(_) => Type::I64,
            Self::F32(_) => Type::F32,
            Self::F64(_) => Type::F64,
            Self::String(_) => Type::String,
            Self::Attribute(_) => Type::Attribute,
            Self::Location(_) => Type::Location,
            Self::Region(_) => Type::Region,
            Self::Group(_) => Type::Group,
            Self::Metric(_) => Type::Metric,
            Self::Comm(_) => Type::Comm,
            Self::RmaWin(_) => Type::RmaWin,
            Self::LocationGroup(_) => Type::LocationGroup,
            Self::Raw { ty, .. } => *ty,
        }
    }

    /// The value as an unsigned integer, for any integer variant that fits.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Self::U8(v) => Some(v.into()),
            Self::U16(v) => Some(v.into()),
            Self::U32(v) => Some(v.into()),
            Self::U64(v) => Some(v),
            Self::I8(v) => u64::try_from(v).ok(),
            Self::I16(v) => u64::try_from(v).ok(),
            Self::I32(v) => u64::try_from(v).ok(),
            Self::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }
}

macro_rules! from_for_attribute_value {
    ($($ty:ty => $variant:ident),* $(,)?) => {
        $(impl From<$ty> for AttributeValue {
            fn from(value: $ty) -> Self {
                Self::$variant(value)
            }
        })*
    };
}

from_for_attribute_value! {
    u8 => U8, u16 => U16, u32 => U32, u64 => U64,
    i8 => I8, i16 => I16, i32 => I32, i64 => I64,
    f32 => F32, f64 => F64,
    StringRef => String, AttributeRef => Attribute, LocationRef => Location,
    RegionRef => Region, GroupRef => Group, MetricRef => Metric, CommRef => Comm,
    RmaWinRef => RmaWin, LocationGroupRef => LocationGroup,
}

/// One value of a metric event. OTF2 allows exactly these three types;
/// the variant should match the value type of its metric member.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MetricValue {
    I64(i64),
    U64(u64),
    F64(f64),
}

impl MetricValue {
    /// The OTF2 type of this value.
    pub const fn ty(&self) -> Type {
        match self {
            Self::I64(_) => Type::I64,
            Self::U64(_) => Type::U64,
            Self::F64(_) => Type::F64,
        }
    }
}

impl From<i64> for MetricValue {
    fn from(value: i64) -> Self {
        Self::I64(value)
    }
}

impl From<u64> for MetricValue {
    fn from(value: u64) -> Self {
        Self::U64(value)
    }
}

impl From<f64> for MetricValue {
    fn from(value: f64) -> Self {
        Self::F64(value)
    }
}

/// The fields of a collective operation's end record, shared by
/// `MpiCollectiveEnd` and `NonBlockingCollectiveComplete`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Collective {
    /// The operation.
    pub op: CollectiveOp,
    /// The communicator it ran on.
    pub comm: CommRef,
    /// The root rank in `comm`, for rooted operations.
    pub root: Option<u32>,
    /// Bytes this location sent.
    pub bytes_sent: u64,
    /// Bytes this location received.
    pub bytes_received: u64,
}

/// Where a metric instance's values apply (`OTF2_MetricScope` plus the
/// scope's id).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MetricScope {
    Location(LocationRef),
    LocationGroup(LocationGroupRef),
    SystemTreeNode(SystemTreeNodeRef),
    Group(GroupRef),
}

/// A clock offset of one location (`ClockOffset` local definition): at
/// `time` (local clock), the global clock is `time + offset`. OTF2 readers
/// interpolate linearly between a location's offsets and apply them to its
/// event timestamps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClockOffset {
    /// Local timestamp of the measurement.
    pub time: u64,
    /// Global minus local time at `time`, in timer ticks.
    pub offset: i64,
    /// Standard deviation of the measurement, in ticks.
    pub standard_deviation: f64,
}

/// The trace's clock (`ClockProperties`, the first global definition).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockProperties {
    /// Ticks per second (1,000,000,000 for nanoseconds).
    pub timer_resolution: u64,
    /// The timestamp of the trace's start.
    pub global_offset: u64,
    /// The trace's duration in ticks.
    pub trace_length: u64,
    /// Nanoseconds since the Unix epoch at `global_offset`, when known.
    pub realtime_timestamp: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_follow_variants() {
        assert_eq!(AttributeValue::from(5u64).ty(), Type::U64);
        assert_eq!(AttributeValue::String(StringRef(1)).ty(), Type::String);
        assert_eq!(AttributeValue::I32(-1).as_u64(), None);
        assert_eq!(AttributeValue::U16(7).as_u64(), Some(7));
        assert_eq!(MetricValue::from(1.5).ty(), Type::F64);
    }
}
