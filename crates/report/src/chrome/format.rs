//! The trace-event format's JSON as serde types: the document's fields,
//! the events, their arguments, and times in microseconds exact to the ns.

use otf2::reader::GlobalDefs;
use otf2::{AttributeRef, AttributeValue};
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

/// The document's fields before its events.
#[derive(Serialize)]
pub(super) struct OtherData<'a> {
    pub(super) exporter: &'a str,
    pub(super) archive: &'a str,
}

/// One trace event, as the trace-event format names its fields (the order
/// of the fields is the order written).
#[derive(Serialize)]
#[serde(tag = "ph")]
pub(super) enum Event<'a> {
    /// Metadata: a process's or track's name or place.
    #[serde(rename = "M")]
    Meta {
        name: &'static str,
        pid: usize,
        #[serde(skip_serializing_if = "Option::is_none")]
        tid: Option<usize>,
        args: MetaArgs<'a>,
    },
    /// A complete event: a region from its enter to its leave.
    #[serde(rename = "X")]
    Slice {
        name: &'a str,
        cat: &'static str,
        pid: usize,
        tid: usize,
        ts: Micros,
        dur: Micros,
        #[serde(skip_serializing_if = "Option::is_none")]
        args: Option<Args<'a>>,
    },
    #[serde(rename = "s")]
    FlowStart { id: u64, cat: &'static str, name: &'static str, pid: usize, tid: usize, ts: Micros },
    /// A flow's end, bound to the enclosing slice (`"bp":"e"`).
    #[serde(rename = "f")]
    FlowEnd { id: u64, cat: &'static str, name: &'static str, pid: usize, tid: usize, ts: Micros, bp: &'static str },
    #[serde(rename = "C")]
    Counter { name: &'a str, pid: usize, ts: Micros, args: CounterArgs },
    /// A sampled call stack (`--sampling`): an instant on its thread,
    /// named by the innermost function (`"s":"t"`: thread-scoped).
    #[serde(rename = "i")]
    Sample {
        name: &'a str,
        cat: &'static str,
        pid: usize,
        tid: usize,
        ts: Micros,
        s: &'static str,
        args: SampleArgs<'a>,
    },
    /// An analysis finding's instance, on its analysis track.
    #[serde(rename = "X")]
    Marked { name: &'a str, cat: &'static str, pid: usize, tid: usize, ts: Micros, dur: Micros, args: MarkArgs<'a> },
}

/// What an analysis slice says of itself.
#[derive(Serialize)]
pub(super) struct MarkArgs<'a> {
    #[serde(rename = "time lost (ns)")]
    pub(super) time_lost: u64,
    #[serde(rename = "waited for", skip_serializing_if = "Option::is_none")]
    pub(super) waited_for: Option<String>,
    #[serde(skip_serializing_if = "str::is_empty")]
    pub(super) call: &'a str,
}

/// A sample's call path, outermost first, and the innermost frame's line.
#[derive(Serialize)]
pub(super) struct SampleArgs<'a> {
    pub(super) stack: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) source: Option<&'a str>,
}

#[derive(Serialize)]
#[serde(untagged)]
pub(super) enum MetaArgs<'a> {
    Name { name: &'a str },
    SortIndex { sort_index: usize },
}

#[derive(Serialize)]
pub(super) struct CounterArgs {
    pub(super) value: Number,
}

/// A metric's value.
#[derive(Serialize)]
#[serde(untagged)]
pub(super) enum Number {
    U64(u64),
    I64(i64),
    /// NaN and infinities, which JSON lacks, become null (serde_json's rule).
    F64(f64),
}

/// Nanoseconds written as microseconds. `ns as f64 / 1000.0` is the double
/// nearest to the exact quotient, and serde_json writes the shortest
/// decimal that reads back as that double: the exact quotient (three
/// decimals at most) below 10^15 ns (11 days), and beyond that the same
/// double a reader makes of the exact quotient (JSON readers, Perfetto's
/// included, read numbers as doubles).
#[derive(Clone, Copy)]
pub(super) struct Micros(pub(super) u64);

impl Serialize for Micros {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.0 as f64 / 1000.0)
    }
}

/// An event's attributes, named as the archive names them.
pub(super) struct Args<'a> {
    pub(super) defs: &'a GlobalDefs,
    pub(super) attributes: &'a [(AttributeRef, AttributeValue)],
}

impl Serialize for Args<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.attributes.len()))?;
        for (a, v) in self.attributes {
            if self.defs.attributes.contains_key(a) {
                map.serialize_entry(self.defs.attribute_name(*a), &Value(self.defs, *v))?;
            } else {
                map.serialize_entry(&format!("attribute {a}"), &Value(self.defs, *v))?;
            }
        }
        map.end()
    }
}

/// One attribute's value: numbers as numbers, references by their names.
struct Value<'a>(&'a GlobalDefs, AttributeValue);

impl Serialize for Value<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let defs = self.0;
        match self.1 {
            AttributeValue::String(r) => s.serialize_str(defs.string(r)),
            AttributeValue::F32(f) => s.serialize_f64(f.into()),
            AttributeValue::F64(f) => s.serialize_f64(f),
            AttributeValue::I8(x) => s.serialize_i64(x.into()),
            AttributeValue::I16(x) => s.serialize_i64(x.into()),
            AttributeValue::I32(x) => s.serialize_i64(x.into()),
            AttributeValue::I64(x) => s.serialize_i64(x),
            AttributeValue::Region(r) => s.serialize_str(defs.region_name(r)),
            AttributeValue::Location(l) => s.serialize_str(defs.location_name(l)),
            other => match other.as_u64() {
                Some(x) => s.serialize_u64(x),
                None => s.collect_str(&format_args!("{other:?}")),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn splitmix(mut x: u64) -> u64 {
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^ (x >> 31)
    }

    #[test]
    fn microseconds_are_written_exact_to_the_nanosecond() {
        // Dense near 0, then spread up to 2^53 ns.
        let mut x = 0x1234_5678u64;
        let values = (0..20_000u64).chain((0..20_000).map(|_| {
            x = splitmix(x);
            x % (1 << 53)
        }));
        for ns in values {
            let text = serde_json::to_string(&Micros(ns)).unwrap();
            let exact = format!("{}.{:03}", ns / 1000, ns % 1000);
            assert_eq!(text.parse::<f64>().unwrap(), exact.parse::<f64>().unwrap(), "{ns} ns: {text}");
            if ns < 1_000_000_000_000_000 {
                let exact = exact.trim_end_matches('0');
                let exact = if exact.ends_with('.') { format!("{exact}0") } else { exact.to_owned() };
                assert_eq!(text, exact, "{ns} ns");
            }
        }
    }
}
