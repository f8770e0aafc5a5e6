//! The global definition writer of an archive: one call per record of the
//! global definitions file, in the order `Definitions::write` decides.

use std::ffi::CStr;
use std::marker::PhantomData;
use std::ptr::NonNull;

use otf2_sys as sys;

use super::archive::Archive;
use super::attributes::{attribute_to_raw, scope_to_raw};
use super::check;
use crate::error::Result;
use crate::refs::{
    AttributeRef, CallingContextRef, CommRef, GroupRef, InterruptGeneratorRef, LocationGroupRef, LocationRef,
    MetricMemberRef, MetricRef, RegionRef, RmaWinRef, SourceCodeLocationRef, StringRef, SystemTreeNodeRef,
};
use crate::types::{
    Base, CommFlags, GroupFlags, GroupType, LocationGroupType, LocationType, MetricMode, MetricOccurrence, MetricType,
    Paradigm, ParadigmClass, ParadigmProperty, RecorderKind, RegionFlags, RegionRole, RmaWinFlags, SystemTreeDomain,
    Type,
};
use crate::values::{AttributeValue, ClockProperties, MetricScope};

/// The global definition writer of an archive, borrowed from it.
pub(crate) struct GlobalDefWriter<'a> {
    pub(super) archive: *mut sys::OTF2_Archive,
    pub(super) raw: NonNull<sys::OTF2_GlobalDefWriter>,
    pub(super) _archive: PhantomData<&'a mut Archive>,
}

/// Raw id of an optional reference, with OTF2's "undefined" marker for None.
fn or_undefined<T>(value: Option<T>, id: impl Fn(T) -> u32) -> u32 {
    value.map_or(sys::OTF2_UNDEFINED_UINT32, id)
}

// The argument lists mirror the OTF2 records one to one.
#[allow(clippy::too_many_arguments)]
impl GlobalDefWriter<'_> {
    fn ptr(&self) -> *mut sys::OTF2_GlobalDefWriter {
        self.raw.as_ptr()
    }

    pub(crate) fn clock_properties(&mut self, clock: &ClockProperties) -> Result<()> {
        check(
            "OTF2_GlobalDefWriter_WriteClockProperties",
            // SAFETY: live writer (borrowed from the archive for 'a); the
            // same holds for every call below.
            unsafe {
                sys::OTF2_GlobalDefWriter_WriteClockProperties(
                    self.ptr(),
                    clock.timer_resolution,
                    clock.global_offset,
                    clock.trace_length,
                    clock.realtime_timestamp.unwrap_or(sys::OTF2_UNDEFINED_TIMESTAMP),
                )
            },
        )
    }

    pub(crate) fn string(&mut self, id: StringRef, text: &CStr) -> Result<()> {
        check(
            "OTF2_GlobalDefWriter_WriteString",
            // SAFETY: live writer; OTF2 copies the string.
            unsafe { sys::OTF2_GlobalDefWriter_WriteString(self.ptr(), id.0, text.as_ptr()) },
        )
    }

    pub(crate) fn paradigm(&mut self, paradigm: Paradigm, name: StringRef, class: ParadigmClass) -> Result<()> {
        check(
            "OTF2_GlobalDefWriter_WriteParadigm",
            // SAFETY: live writer.
            unsafe { sys::OTF2_GlobalDefWriter_WriteParadigm(self.ptr(), paradigm.to_raw(), name.0, class.to_raw()) },
        )
    }

    pub(crate) fn paradigm_property(
        &mut self,
        paradigm: Paradigm,
        property: ParadigmProperty,
        value: &AttributeValue,
    ) -> Result<()> {
        let (ty, raw) = attribute_to_raw(value);
        check(
            "OTF2_GlobalDefWriter_WriteParadigmProperty",
            // SAFETY: live writer.
            unsafe {
                sys::OTF2_GlobalDefWriter_WriteParadigmProperty(
                    self.ptr(),
                    paradigm.to_raw(),
                    property.to_raw(),
                    ty,
                    raw,
                )
            },
        )
    }

    pub(crate) fn attribute(
        &mut self,
        id: AttributeRef,
        name: StringRef,
        description: StringRef,
        ty: Type,
    ) -> Result<()> {
        check(
            "OTF2_GlobalDefWriter_WriteAttribute",
            // SAFETY: live writer.
            unsafe { sys::OTF2_GlobalDefWriter_WriteAttribute(self.ptr(), id.0, name.0, description.0, ty.to_raw()) },
        )
    }

    pub(crate) fn system_tree_node(
        &mut self,
        id: SystemTreeNodeRef,
        name: StringRef,
        class_name: StringRef,
        parent: Option<SystemTreeNodeRef>,
    ) -> Result<()> {
        check(
            "OTF2_GlobalDefWriter_WriteSystemTreeNode",
            // SAFETY: live writer.
            unsafe {
                sys::OTF2_GlobalDefWriter_WriteSystemTreeNode(
                    self.ptr(),
                    id.0,
                    name.0,
                    class_name.0,
                    or_undefined(parent, |p| p.0),
                )
            },
        )
    }

    pub(crate) fn system_tree_node_property(
        &mut self,
        node: SystemTreeNodeRef,
        name: StringRef,
        value: &AttributeValue,
    ) -> Result<()> {
        let (ty, raw) = attribute_to_raw(value);
        check(
            "OTF2_GlobalDefWriter_WriteSystemTreeNodeProperty",
            // SAFETY: live writer.
            unsafe { sys::OTF2_GlobalDefWriter_WriteSystemTreeNodeProperty(self.ptr(), node.0, name.0, ty, raw) },
        )
    }

    pub(crate) fn system_tree_node_domain(&mut self, node: SystemTreeNodeRef, domain: SystemTreeDomain) -> Result<()> {
        check(
            "OTF2_GlobalDefWriter_WriteSystemTreeNodeDomain",
            // SAFETY: live writer.
            unsafe { sys::OTF2_GlobalDefWriter_WriteSystemTreeNodeDomain(self.ptr(), node.0, domain.to_raw()) },
        )
    }

    pub(crate) fn location_group(
        &mut self,
        id: LocationGroupRef,
        name: StringRef,
        ty: LocationGroupType,
        parent: SystemTreeNodeRef,
        creating: Option<LocationGroupRef>,
    ) -> Result<()> {
        check(
            "OTF2_GlobalDefWriter_WriteLocationGroup",
            // SAFETY: live writer.
            unsafe {
                sys::OTF2_GlobalDefWriter_WriteLocationGroup(
                    self.ptr(),
                    id.0,
                    name.0,
                    ty.to_raw(),
                    parent.0,
                    or_undefined(creating, |g| g.0),
                )
            },
        )
    }

    pub(crate) fn location_group_property(
        &mut self,
        group: LocationGroupRef,
        name: StringRef,
        value: &AttributeValue,
    ) -> Result<()> {
        let (ty, raw) = attribute_to_raw(value);
        check(
            "OTF2_GlobalDefWriter_WriteLocationGroupProperty",
            // SAFETY: live writer.
            unsafe { sys::OTF2_GlobalDefWriter_WriteLocationGroupProperty(self.ptr(), group.0, name.0, ty, raw) },
        )
    }

    pub(crate) fn location(
        &mut self,
        id: LocationRef,
        name: StringRef,
        ty: LocationType,
        number_of_events: u64,
        group: LocationGroupRef,
    ) -> Result<()> {
        check(
            "OTF2_GlobalDefWriter_WriteLocation",
            // SAFETY: live writer.
            unsafe {
                sys::OTF2_GlobalDefWriter_WriteLocation(
                    self.ptr(),
                    id.0,
                    name.0,
                    ty.to_raw(),
                    number_of_events,
                    group.0,
                )
            },
        )
    }

    pub(crate) fn location_property(
        &mut self,
        location: LocationRef,
        name: StringRef,
        value: &AttributeValue,
    ) -> Result<()> {
        let (ty, raw) = attribute_to_raw(value);
        check(
            "OTF2_GlobalDefWriter_WriteLocationProperty",
            // SAFETY: live writer.
            unsafe { sys::OTF2_GlobalDefWriter_WriteLocationProperty(self.ptr(), location.0, name.0, ty, raw) },
        )
    }

    pub(crate) fn region(
        &mut self,
        id: RegionRef,
        name: StringRef,
        canonical_name: StringRef,
        description: StringRef,
        role: RegionRole,
        paradigm: Paradigm,
        flags: RegionFlags,
        source_file: StringRef,
        begin_line: u32,
        end_line: u32,
    ) -> Result<()> {
        check(
            "OTF2_GlobalDefWriter_WriteRegion",
            // SAFETY: live writer.
            unsafe {
                sys::OTF2_GlobalDefWriter_WriteRegion(
                    self.ptr(),
                    id.0,
                    name.0,
                    canonical_name.0,
                    description.0,
                    role.to_raw(),
                    paradigm.to_raw(),
                    flags.to_raw(),
                    source_file.0,
                    begin_line,
                    end_line,
                )
            },
        )
    }

    pub(crate) fn source_code_location(&mut self, id: SourceCodeLocationRef, file: StringRef, line: u32) -> Result<()> {
        check(
            "OTF2_GlobalDefWriter_WriteSourceCodeLocation",
            // SAFETY: live writer.
            unsafe { sys::OTF2_GlobalDefWriter_WriteSourceCodeLocation(self.ptr(), id.0, file.0, line) },
        )
    }

    pub(crate) fn calling_context(
        &mut self,
        id: CallingContextRef,
        region: RegionRef,
        location: Option<SourceCodeLocationRef>,
        parent: Option<CallingContextRef>,
    ) -> Result<()> {
        let (location, parent) = (or_undefined(location, |l| l.0), or_undefined(parent, |p| p.0));
        check(
            "OTF2_GlobalDefWriter_WriteCallingContext",
            // SAFETY: live writer.
            unsafe { sys::OTF2_GlobalDefWriter_WriteCallingContext(self.ptr(), id.0, region.0, location, parent) },
        )
    }

    /// A timer interrupting every `period_ns` of CPU time (mode TIME, the
    /// period in 10⁻⁹ s).
    pub(crate) fn interrupt_generator(
        &mut self,
        id: InterruptGeneratorRef,
        name: StringRef,
        period_ns: u64,
    ) -> Result<()> {
        let (mode, base) = (sys::OTF2_INTERRUPT_GENERATOR_MODE_TIME as u8, sys::OTF2_BASE_DECIMAL as u8);
        check(
            "OTF2_GlobalDefWriter_WriteInterruptGenerator",
            // SAFETY: live writer.
            unsafe {
                sys::OTF2_GlobalDefWriter_WriteInterruptGenerator(self.ptr(), id.0, name.0, mode, base, -9, period_ns)
            },
        )
    }

    pub(crate) fn group(
        &mut self,
        id: GroupRef,
        name: StringRef,
        ty: GroupType,
        paradigm: Paradigm,
        flags: GroupFlags,
        members: &[u64],
    ) -> Result<()> {
        // The builder refused longer member lists.
        let count = u32::try_from(members.len()).unwrap_or(u32::MAX);
        check(
            "OTF2_GlobalDefWriter_WriteGroup",
            // SAFETY: live writer; `members` holds `count` ids and OTF2
            // copies them.
            unsafe {
                sys::OTF2_GlobalDefWriter_WriteGroup(
                    self.ptr(),
                    id.0,
                    name.0,
                    ty.to_raw(),
                    paradigm.to_raw(),
                    flags.to_raw(),
                    count,
                    members.as_ptr(),
                )
            },
        )
    }

    pub(crate) fn comm(
        &mut self,
        id: CommRef,
        name: StringRef,
        group: GroupRef,
        parent: Option<CommRef>,
        flags: CommFlags,
    ) -> Result<()> {
        check(
            "OTF2_GlobalDefWriter_WriteComm",
            // SAFETY: live writer.
            unsafe {
                sys::OTF2_GlobalDefWriter_WriteComm(
                    self.ptr(),
                    id.0,
                    name.0,
                    group.0,
                    or_undefined(parent, |c| c.0),
                    flags.to_raw(),
                )
            },
        )
    }

    pub(crate) fn rma_win(&mut self, id: RmaWinRef, name: StringRef, comm: CommRef, flags: RmaWinFlags) -> Result<()> {
        check(
            "OTF2_GlobalDefWriter_WriteRmaWin",
            // SAFETY: live writer.
            unsafe { sys::OTF2_GlobalDefWriter_WriteRmaWin(self.ptr(), id.0, name.0, comm.0, flags.to_raw()) },
        )
    }

    pub(crate) fn metric_member(
        &mut self,
        id: MetricMemberRef,
        name: StringRef,
        description: StringRef,
        metric_type: MetricType,
        mode: MetricMode,
        value_type: Type,
        base: Base,
        exponent: i64,
        unit: StringRef,
    ) -> Result<()> {
        check(
            "OTF2_GlobalDefWriter_WriteMetricMember",
            // SAFETY: live writer.
            unsafe {
                sys::OTF2_GlobalDefWriter_WriteMetricMember(
                    self.ptr(),
                    id.0,
                    name.0,
                    description.0,
                    metric_type.to_raw(),
                    mode.to_raw(),
                    value_type.to_raw(),
                    base.to_raw(),
                    exponent,
                    unit.0,
                )
            },
        )
    }

    pub(crate) fn metric_class(
        &mut self,
        id: MetricRef,
        members: &[MetricMemberRef],
        occurrence: MetricOccurrence,
        recorder_kind: RecorderKind,
    ) -> Result<()> {
        // The builder refused classes of more than 255 members.
        let count = u8::try_from(members.len()).unwrap_or(u8::MAX);
        let ids: Vec<u32> = members.iter().map(|m| m.0).collect();
        check(
            "OTF2_GlobalDefWriter_WriteMetricClass",
            // SAFETY: live writer; `ids` holds `count` ids, copied by OTF2.
            unsafe {
                sys::OTF2_GlobalDefWriter_WriteMetricClass(
                    self.ptr(),
                    id.0,
                    count,
                    ids.as_ptr(),
                    occurrence.to_raw(),
                    recorder_kind.to_raw(),
                )
            },
        )
    }

    pub(crate) fn metric_instance(
        &mut self,
        id: MetricRef,
        class: MetricRef,
        recorder: LocationRef,
        scope: MetricScope,
    ) -> Result<()> {
        let (kind, scope_id) = scope_to_raw(scope);
        check(
            "OTF2_GlobalDefWriter_WriteMetricInstance",
            // SAFETY: live writer.
            unsafe {
                sys::OTF2_GlobalDefWriter_WriteMetricInstance(self.ptr(), id.0, class.0, recorder.0, kind, scope_id)
            },
        )
    }

    pub(crate) fn metric_class_recorder(&mut self, class: MetricRef, recorder: LocationRef) -> Result<()> {
        check(
            "OTF2_GlobalDefWriter_WriteMetricClassRecorder",
            // SAFETY: live writer.
            unsafe { sys::OTF2_GlobalDefWriter_WriteMetricClassRecorder(self.ptr(), class.0, recorder.0) },
        )
    }

    /// Closes the writer, flushing the global definitions file.
    pub(crate) fn close(self) -> Result<()> {
        check(
            "OTF2_Archive_CloseGlobalDefWriter",
            // SAFETY: the writer belongs to `archive`, which is live for 'a;
            // `self` is consumed, so it is closed once.
            unsafe { sys::OTF2_Archive_CloseGlobalDefWriter(self.archive, self.ptr()) },
        )
    }
}
