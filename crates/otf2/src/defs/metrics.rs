//! Metrics: members (one counter each), classes (a set of members recorded
//! together) and instances (a class recorded by one location about some
//! scope), as OTF2 defines them.
//!
//! Classes and instances share one id space in OTF2 (`OTF2_MetricRef`), so
//! they are kept in one table, in definition order, which also guarantees
//! a class is written before the instances that use it.

use super::{Definitions, next_id};
use crate::error::{Error, Result};
use crate::ffi::global_defs::GlobalDefWriter;
use crate::refs::{LocationRef, MetricMemberRef, MetricRef, StringRef};
use crate::types::{Base, MetricMode, MetricOccurrence, MetricType, RecorderKind, Type};
use crate::values::MetricScope;

/// A metric member to define; [`MetricMember::new`] fills in defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetricMember<'a> {
    /// Name, such as `nvlink_tx_bytes`.
    pub name: &'a str,
    /// Free text.
    pub description: &'a str,
    /// Where the metric comes from.
    pub metric_type: MetricType,
    /// Accumulated/absolute/relative, and the interval a value covers.
    pub mode: MetricMode,
    /// `I64`, `U64` or `F64`; events must send values of this type.
    pub value_type: Type,
    /// Base of the unit prefix: the value means `value * base^exponent unit`.
    pub base: Base,
    /// Exponent of the unit prefix.
    pub exponent: i64,
    /// Unit, such as `bytes`.
    pub unit: &'a str,
}

impl<'a> MetricMember<'a> {
    /// A user metric with no description and no unit prefix.
    pub fn new(name: &'a str, unit: &'a str, mode: MetricMode, value_type: Type) -> Self {
        Self {
            name,
            description: "",
            metric_type: MetricType::User,
            mode,
            value_type,
            base: Base::Decimal,
            exponent: 0,
            unit,
        }
    }
}

struct MemberRecord {
    name: StringRef,
    description: StringRef,
    metric_type: MetricType,
    mode: MetricMode,
    value_type: Type,
    base: Base,
    exponent: i64,
    unit: StringRef,
}

enum MetricRecord {
    Class { members: Vec<MetricMemberRef>, occurrence: MetricOccurrence, recorder_kind: RecorderKind },
    Instance { class: MetricRef, recorder: LocationRef, scope: MetricScope },
}

#[derive(Default)]
pub(super) struct MetricDefs {
    members: Vec<MemberRecord>,
    metrics: Vec<MetricRecord>,
    class_recorders: Vec<(MetricRef, LocationRef)>,
}

impl MetricDefs {
    pub(super) fn write(&self, out: &mut GlobalDefWriter<'_>) -> Result<()> {
        for (id, m) in self.members.iter().enumerate() {
            out.metric_member(
                MetricMemberRef(id as u32),
                m.name,
                m.description,
                m.metric_type,
                m.mode,
                m.value_type,
                m.base,
                m.exponent,
                m.unit,
            )?;
        }
        for (id, metric) in self.metrics.iter().enumerate() {
            let id = MetricRef(id as u32);
            match metric {
                MetricRecord::Class { members, occurrence, recorder_kind } => {
                    out.metric_class(id, members, *occurrence, *recorder_kind)?
                }
                MetricRecord::Instance { class, recorder, scope } => {
                    out.metric_instance(id, *class, *recorder, *scope)?
                }
            }
        }
        for &(class, recorder) in &self.class_recorders {
            out.metric_class_recorder(class, recorder)?;
        }
        Ok(())
    }
}

impl Definitions {
    /// A metric member (`MetricMember`): one counter.
    pub fn metric_member(&mut self, member: MetricMember<'_>) -> MetricMemberRef {
        let id = MetricMemberRef(next_id(self.metrics.members.len(), "metric member"));
        let record = MemberRecord {
            name: self.string(member.name),
            description: self.string(member.description),
            metric_type: member.metric_type,
            mode: member.mode,
            value_type: member.value_type,
            base: member.base,
            exponent: member.exponent,
            unit: self.string(member.unit),
        };
        self.metrics.members.push(record);
        id
    }

    /// A metric class (`MetricClass`): members recorded together, in this
    /// order, by [`EventWriter::metric`](crate::EventWriter::metric).
    ///
    /// # Errors
    ///
    /// [`Error::BadMetricClassSize`] unless there are 1 to 255 members.
    pub fn metric_class(
        &mut self,
        members: &[MetricMemberRef],
        occurrence: MetricOccurrence,
        recorder_kind: RecorderKind,
    ) -> Result<MetricRef> {
        if members.is_empty() || members.len() > usize::from(u8::MAX) {
            return Err(Error::BadMetricClassSize { count: members.len() });
        }
        let id = MetricRef(next_id(self.metrics.metrics.len(), "metric"));
        self.metrics.metrics.push(MetricRecord::Class { members: members.to_vec(), occurrence, recorder_kind });
        Ok(id)
    }

    /// A metric instance (`MetricInstance`): `class` recorded by `recorder`
    /// (a location, often of type `Metric`) about `scope`, such as a GPU's
    /// NVLink traffic recorded on a metric location, scoped to the device.
    pub fn metric_instance(&mut self, class: MetricRef, recorder: LocationRef, scope: MetricScope) -> MetricRef {
        let id = MetricRef(next_id(self.metrics.metrics.len(), "metric"));
        self.metrics.metrics.push(MetricRecord::Instance { class, recorder, scope });
        id
    }

    /// Declares that `recorder` records metric class `class`
    /// (`MetricClassRecorder`).
    pub fn metric_class_recorder(&mut self, class: MetricRef, recorder: LocationRef) {
        self.metrics.class_recorders.push((class, recorder));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_and_instances_share_ids() {
        let mut defs = Definitions::new();
        let member = defs.metric_member(MetricMember::new("bytes", "B", MetricMode::AbsolutePoint, Type::U64));
        let class = defs.metric_class(&[member], MetricOccurrence::Asynchronous, RecorderKind::Abstract).unwrap();
        let instance = defs.metric_instance(class, LocationRef(3), MetricScope::Location(LocationRef(3)));
        assert_eq!((class.id(), instance.id()), (0, 1));
        assert!(matches!(
            defs.metric_class(&[], MetricOccurrence::Synchronous, RecorderKind::Cpu),
            Err(Error::BadMetricClassSize { count: 0 })
        ));
    }
}
