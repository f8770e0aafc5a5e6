//! Global definition callbacks: each turns one OTF2 definition record into
//! its typed entry in [`GlobalDefs`].

use std::ffi::{c_char, c_void};
use std::ptr::NonNull;

use otf2_sys as sys;

use super::attributes::{attribute_from_raw, scope_from_raw};
use super::{check, copy_str, null_error};
use crate::error::Result;
use crate::reader::defs::*;
use crate::refs::*;
use crate::types::*;
use crate::values::ClockProperties;

/// Owned `OTF2_GlobalDefReaderCallbacks` with every callback below set.
pub(crate) struct GlobalDefCallbacks {
    raw: NonNull<sys::OTF2_GlobalDefReaderCallbacks>,
}

impl GlobalDefCallbacks {
    pub(crate) fn new() -> Result<Self> {
        // SAFETY: no arguments; returns an owned object or null.
        let raw = unsafe { sys::OTF2_GlobalDefReaderCallbacks_New() };
        let raw = NonNull::new(raw).ok_or_else(|| null_error("OTF2_GlobalDefReaderCallbacks_New"))?;
        let this = Self { raw };
        let cb = this.raw.as_ptr();
        macro_rules! set {
            ($($setter:ident => $callback:ident),* $(,)?) => {$(
                check(
                    stringify!($setter),
                    // SAFETY: `cb` is live; the compiler checks that the
                    // callback has the type the setter takes.
                    unsafe { sys::$setter(cb, Some($callback)) },
                )?;
            )*};
        }
        set! {
            OTF2_GlobalDefReaderCallbacks_SetClockPropertiesCallback => on_clock_properties,
            OTF2_GlobalDefReaderCallbacks_SetStringCallback => on_string,
            OTF2_GlobalDefReaderCallbacks_SetParadigmCallback => on_paradigm,
            OTF2_GlobalDefReaderCallbacks_SetParadigmPropertyCallback => on_paradigm_property,
            OTF2_GlobalDefReaderCallbacks_SetAttributeCallback => on_attribute,
            OTF2_GlobalDefReaderCallbacks_SetSystemTreeNodeCallback => on_system_tree_node,
            OTF2_GlobalDefReaderCallbacks_SetSystemTreeNodePropertyCallback => on_system_tree_node_property,
            OTF2_GlobalDefReaderCallbacks_SetSystemTreeNodeDomainCallback => on_system_tree_node_domain,
            OTF2_GlobalDefReaderCallbacks_SetLocationGroupCallback => on_location_group,
            OTF2_GlobalDefReaderCallbacks_SetLocationGroupPropertyCallback => on_location_group_property,
            OTF2_GlobalDefReaderCallbacks_SetLocationCallback => on_location,
            OTF2_GlobalDefReaderCallbacks_SetLocationPropertyCallback => on_location_property,
            OTF2_GlobalDefReaderCallbacks_SetRegionCallback => on_region,
            OTF2_GlobalDefReaderCallbacks_SetGroupCallback => on_group,
            OTF2_GlobalDefReaderCallbacks_SetCommCallback => on_comm,
            OTF2_GlobalDefReaderCallbacks_SetRmaWinCallback => on_rma_win,
            OTF2_GlobalDefReaderCallbacks_SetMetricMemberCallback => on_metric_member,
            OTF2_GlobalDefReaderCallbacks_SetMetricClassCallback => on_metric_class,
            OTF2_GlobalDefReaderCallbacks_SetMetricInstanceCallback => on_metric_instance,
            OTF2_GlobalDefReaderCallbacks_SetMetricClassRecorderCallback => on_metric_class_recorder,
            OTF2_GlobalDefReaderCallbacks_SetSourceCodeLocationCallback => on_source_code_location,
            OTF2_GlobalDefReaderCallbacks_SetCallingContextCallback => on_calling_context,
            OTF2_GlobalDefReaderCallbacks_SetInterruptGeneratorCallback => on_interrupt_generator,
        }
        Ok(this)
    }

    pub(crate) fn as_ptr(&self) -> *const sys::OTF2_GlobalDefReaderCallbacks {
        self.raw.as_ptr()
    }
}

impl Drop for GlobalDefCallbacks {
    fn drop(&mut self) {
        // SAFETY: we own the object; OTF2 copied it when it was registered.
        unsafe { sys::OTF2_GlobalDefReaderCallbacks_Delete(self.raw.as_ptr()) }
    }
}

/// Defines a callback taking OTF2's user data and the listed record
/// fields; the body runs with `$defs` bound to the [`GlobalDefs`] being
/// filled.
macro_rules! def_callback {
    ($name:ident($defs:ident $(, $arg:ident: $ty:ty)* $(,)?) $body:block) => {
        #[allow(clippy::too_many_arguments)]
        unsafe extern "C" fn $name(user_data: *mut c_void $(, $arg: $ty)*) -> sys::OTF2_CallbackCode {
            // SAFETY: OTF2 passes back the `GlobalDefs` registered in
            // `read_global_defs`, only during that read, and nothing else
            // refers to it meanwhile.
            let $defs = unsafe { &mut *user_data.cast::<GlobalDefs>() };
            $body
            sys::OTF2_CALLBACK_SUCCESS
        }
    };
}

/// `Some(make(id))` unless `id` is OTF2's "undefined".
fn defined<T>(id: u32, make: impl Fn(u32) -> T) -> Option<T> {
    (id != sys::OTF2_UNDEFINED_UINT32).then(|| make(id))
}

def_callback! { on_clock_properties(defs, resolution: u64, offset: u64, length: u64, realtime: u64) {
    defs.clock_properties = Some(ClockProperties {
        timer_resolution: resolution,
        global_offset: offset,
        trace_length: length,
        realtime_timestamp: (realtime != sys::OTF2_UNDEFINED_TIMESTAMP).then_some(realtime),
    });
}}

def_callback! { on_string(defs, id: u32, text: *const c_char) {
    // SAFETY: `text` is OTF2's NUL-terminated copy of the string.
    defs.strings.insert(StringRef(id), unsafe { copy_str(text) });
}}

def_callback! { on_paradigm(defs, paradigm: u8, name: u32, class: u8) {
    defs.paradigms.push(ParadigmDef {
        paradigm: Paradigm::from_raw(paradigm),
        name: StringRef(name),
        class: ParadigmClass::from_raw(class),
    });
}}

def_callback! { on_paradigm_property(defs, paradigm: u8, property: u8, ty: u8, value: sys::OTF2_AttributeValue) {
    defs.paradigm_properties.push((
        Paradigm::from_raw(paradigm),
        ParadigmProperty::from_raw(property),
        attribute_from_raw(ty, value),
    ));
}}

def_callback! { on_attribute(defs, id: u32, name: u32, description: u32, ty: u8) {
    let def = AttributeDef { name: StringRef(name), description: StringRef(description), ty: Type::from_raw(ty) };
    defs.attributes.insert(AttributeRef(id), def);
}}

def_callback! { on_system_tree_node(defs, id: u32, name: u32, class_name: u32, parent: u32) {
    let def = SystemTreeNodeDef {
        name: StringRef(name),
        class_name: StringRef(class_name),
        parent: defined(parent, SystemTreeNodeRef),
    };
    defs.system_tree_nodes.insert(SystemTreeNodeRef(id), def);
}}

def_callback! { on_system_tree_node_property(defs, node: u32, name: u32, ty: u8, value: sys::OTF2_AttributeValue) {
    defs.system_tree_node_properties.push(PropertyDef {
        owner: SystemTreeNodeRef(node),
        name: StringRef(name),
        value: attribute_from_raw(ty, value),
    });
}}

def_callback! { on_system_tree_node_domain(defs, node: u32, domain: u8) {
    defs.system_tree_node_domains.push((SystemTreeNodeRef(node), SystemTreeDomain::from_raw(domain)));
}}

def_callback! { on_location_group(defs, id: u32, name: u32, ty: u8, parent: u32, creating: u32) {
    let def = LocationGroupDef {
        name: StringRef(name),
        ty: LocationGroupType::from_raw(ty),
        system_tree_parent: defined(parent, SystemTreeNodeRef),
        creating_group: defined(creating, LocationGroupRef),
    };
    defs.location_groups.insert(LocationGroupRef(id), def);
}}

def_callback! { on_location_group_property(defs, group: u32, name: u32, ty: u8, value: sys::OTF2_AttributeValue) {
    defs.location_group_properties.push(PropertyDef {
        owner: LocationGroupRef(group),
        name: StringRef(name),
        value: attribute_from_raw(ty, value),
    });
}}

def_callback! { on_location(defs, id: u64, name: u32, ty: u8, events: u64, group: u32) {
    let def = LocationDef {
        name: StringRef(name),
        ty: LocationType::from_raw(ty),
        number_of_events: events,
        group: LocationGroupRef(group),
    };
    defs.locations.insert(LocationRef(id), def);
}}

def_callback! { on_location_property(defs, location: u64, name: u32, ty: u8, value: sys::OTF2_AttributeValue) {
    defs.location_properties.push(PropertyDef {
        owner: LocationRef(location),
        name: StringRef(name),
        value: attribute_from_raw(ty, value),
    });
}}

def_callback! { on_region(
    defs, id: u32, name: u32, canonical_name: u32, description: u32, role: u8, paradigm: u8,
    flags: u32, source_file: u32, begin_line: u32, end_line: u32,
) {
    let def = RegionDef {
        name: StringRef(name),
        canonical_name: StringRef(canonical_name),
        description: StringRef(description),
        role: RegionRole::from_raw(role),
        paradigm: Paradigm::from_raw(paradigm),
        flags: RegionFlags::from_raw(flags),
        source_file: StringRef(source_file),
        begin_line,
        end_line,
    };
    defs.regions.insert(RegionRef(id), def);
}}

def_callback! { on_source_code_location(defs, id: u32, file: u32, line: u32) {
    defs.source_code_locations.insert(SourceCodeLocationRef(id), (StringRef(file), line));
}}

def_callback! { on_calling_context(defs, id: u32, region: u32, location: u32, parent: u32) {
    let def = CallingContextDef {
        region: RegionRef(region),
        location: defined(location, SourceCodeLocationRef),
        parent: defined(parent, CallingContextRef),
    };
    defs.calling_contexts.insert(CallingContextRef(id), def);
}}

def_callback! { on_interrupt_generator(defs, id: u32, name: u32, mode: u8, base: u8, exponent: i64, period: u64) {
    let def = InterruptGeneratorDef { name: StringRef(name), mode, base: Base::from_raw(base), exponent, period };
    defs.interrupt_generators.insert(InterruptGeneratorRef(id), def);
}}

def_callback! { on_group(defs, id: u32, name: u32, ty: u8, paradigm: u8, flags: u32, count: u32, members: *const u64) {
    let members = if count == 0 || members.is_null() {
        Vec::new()
    } else {
        // SAFETY: OTF2 passes `count` member ids at `members`.
        unsafe { std::slice::from_raw_parts(members, count as usize) }.to_vec()
    };
    let def = GroupDef {
        name: StringRef(name),
        ty: GroupType::from_raw(ty),
        paradigm: Paradigm::from_raw(paradigm),
        flags: GroupFlags::from_raw(flags),
        members,
    };
    defs.groups.insert(GroupRef(id), def);
}}

def_callback! { on_comm(defs, id: u32, name: u32, group: u32, parent: u32, flags: u32) {
    let def = CommDef {
        name: StringRef(name),
        group: GroupRef(group),
        parent: defined(parent, CommRef),
        flags: CommFlags::from_raw(flags),
    };
    defs.comms.insert(CommRef(id), def);
}}

def_callback! { on_rma_win(defs, id: u32, name: u32, comm: u32, flags: u32) {
    let def = RmaWinDef { name: StringRef(name), comm: CommRef(comm), flags: RmaWinFlags::from_raw(flags) };
    defs.rma_wins.insert(RmaWinRef(id), def);
}}

def_callback! { on_metric_member(
    defs, id: u32, name: u32, description: u32, metric_type: u8, mode: u8, value_type: u8,
    base: u8, exponent: i64, unit: u32,
) {
    let def = MetricMemberDef {
        name: StringRef(name),
        description: StringRef(description),
        metric_type: MetricType::from_raw(metric_type),
        mode: MetricMode::from_raw(mode),
        value_type: Type::from_raw(value_type),
        base: Base::from_raw(base),
        exponent,
        unit: StringRef(unit),
    };
    defs.metric_members.insert(MetricMemberRef(id), def);
}}

def_callback! { on_metric_class(defs, id: u32, count: u8, members: *const u32, occurrence: u8, recorder_kind: u8) {
    let members = if count == 0 || members.is_null() {
        Vec::new()
    } else {
        // SAFETY: OTF2 passes `count` member refs at `members`.
        let members = unsafe { std::slice::from_raw_parts(members, count.into()) };
        members.iter().map(|&m| MetricMemberRef(m)).collect()
    };
    let def = MetricDef::Class {
        members,
        occurrence: MetricOccurrence::from_raw(occurrence),
        recorder_kind: RecorderKind::from_raw(recorder_kind),
    };
    defs.metrics.insert(MetricRef(id), def);
}}

def_callback! { on_metric_instance(defs, id: u32, class: u32, recorder: u64, scope_kind: u8, scope: u64) {
    let def = MetricDef::Instance {
        class: MetricRef(class),
        recorder: LocationRef(recorder),
        scope: scope_from_raw(scope_kind, scope),
    };
    defs.metrics.insert(MetricRef(id), def);
}}

def_callback! { on_metric_class_recorder(defs, metric: u32, recorder: u64) {
    defs.metric_class_recorders.push((MetricRef(metric), LocationRef(recorder)));
}}
