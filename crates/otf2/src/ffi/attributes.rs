//! Attribute values and lists across the FFI boundary.
//!
//! Writing: an [`AttributeList`] owned by an event writer collects the
//! attributes of the next event; OTF2 empties it when it writes that event,
//! so one list is reused for the whole location.
//!
//! Reading: [`Attributes`] is a borrowed view of the list OTF2 passes to an
//! event callback, valid only during that callback.

use std::marker::PhantomData;
use std::ptr::NonNull;

use otf2_sys as sys;

use super::{check, null_error};
use crate::error::Result;
use crate::refs::{
    AttributeRef, CommRef, GroupRef, LocationGroupRef, LocationRef, MetricRef, RegionRef, RmaWinRef, StringRef,
    SystemTreeNodeRef,
};
use crate::types::Type;
use crate::values::{AttributeValue, MetricScope, MetricValue};

/// The OTF2 (type, union) pair for a value.
pub(crate) fn attribute_to_raw(value: &AttributeValue) -> (sys::OTF2_Type, sys::OTF2_AttributeValue) {
    use sys::OTF2_AttributeValue as V;
    let raw = match *value {
        AttributeValue::U8(v) => V { uint8: v },
        AttributeValue::U16(v) => V { uint16: v },
        AttributeValue::U32(v) => V { uint32: v },
        AttributeValue::U64(v) => V { uint64: v },
        AttributeValue::I8(v) => V { int8: v },
        AttributeValue::I16(v) => V { int16: v },
        AttributeValue::I32(v) => V { int32: v },
        AttributeValue::I64(v) => V { int64: v },
        AttributeValue::F32(v) => V { float32: v },
        AttributeValue::F64(v) => V { float64: v },
        AttributeValue::String(r) => V { stringRef: r.0 },
        AttributeValue::Attribute(r) => V { attributeRef: r.0 },
        AttributeValue::Location(r) => V { locationRef: r.0 },
        AttributeValue::Region(r) => V { regionRef: r.0 },
        AttributeValue::Group(r) => V { groupRef: r.0 },
        AttributeValue::Metric(r) => V { metricRef: r.0 },
        AttributeValue::Comm(r) => V { commRef: r.0 },
        AttributeValue::RmaWin(r) => V { rmaWinRef: r.0 },
        AttributeValue::LocationGroup(r) => V { locationGroupRef: r.0 },
        AttributeValue::Raw { ty, bits } => return (ty.to_raw(), raw_bits(ty, bits)),
    };
    (value.ty().to_raw(), raw)
}

/// A union holding `bits` in the member of `ty`'s width, so OTF2 reads
/// back exactly the bits a reader handed us.
fn raw_bits(ty: Type, bits: u64) -> sys::OTF2_AttributeValue {
    use sys::OTF2_AttributeValue as V;
    match width(ty) {
        1 => V { uint8: bits as u8 },
        2 => V { uint16: bits as u16 },
        4 => V { uint32: bits as u32 },
        _ => V { uint64: bits },
    }
}

/// Width in bytes of the union member OTF2 uses for `ty`; a type unknown
/// to this crate is kept whole.
fn width(ty: Type) -> usize {
    match ty {
        Type::None | Type::U8 | Type::I8 => 1,
        Type::U16 | Type::I16 => 2,
        Type::U64 | Type::I64 | Type::F64 | Type::Location | Type::Raw(_) => 8,
        _ => 4,
    }
}

/// The typed value of an OTF2 (type, union) pair.
pub(crate) fn attribute_from_raw(ty: sys::OTF2_Type, value: sys::OTF2_AttributeValue) -> AttributeValue {
    let ty = Type::from_raw(ty);
    // SAFETY: for each arm OTF2 wrote the union member that belongs to
    // `ty`; every member is plain old data, so even a mismatched producer
    // yields some value, never undefined behavior beyond reading bytes.
    unsafe {
        match ty {
            Type::U8 => AttributeValue::U8(value.uint8),
            Type::U16 => AttributeValue::U16(value.uint16),
            Type::U32 => AttributeValue::U32(value.uint32),
            Type::U64 => AttributeValue::U64(value.uint64),
            Type::I8 => AttributeValue::I8(value.int8),
            Type::I16 => AttributeValue::I16(value.int16),
            Type::I32 => AttributeValue::I32(value.int32),
            Type::I64 => AttributeValue::I64(value.int64),
            Type::F32 => AttributeValue::F32(value.float32),
            Type::F64 => AttributeValue::F64(value.float64),
            Type::String => AttributeValue::String(StringRef(value.stringRef)),
            Type::Attribute => AttributeValue::Attribute(AttributeRef(value.attributeRef)),
            Type::Location => AttributeValue::Location(LocationRef(value.locationRef)),
            Type::Region => AttributeValue::Region(RegionRef(value.regionRef)),
            Type::Group => AttributeValue::Group(GroupRef(value.groupRef)),
            Type::Metric => AttributeValue::Metric(MetricRef(value.metricRef)),
            Type::Comm => AttributeValue::Comm(CommRef(value.commRef)),
            Type::RmaWin => AttributeValue::RmaWin(RmaWinRef(value.rmaWinRef)),
            Type::LocationGroup => AttributeValue::LocationGroup(LocationGroupRef(value.locationGroupRef)),
            other => {
                let bits = match width(other) {
                    1 => u64::from(value.uint8),
                    2 => u64::from(value.uint16),
                    4 => u64::from(value.uint32),
                    _ => value.uint64,
                };
                AttributeValue::Raw { ty: other, bits }
            }
        }
    }
}

/// The OTF2 (type, union) pair of a metric value.
pub(crate) fn metric_to_raw(value: &MetricValue) -> (sys::OTF2_Type, sys::OTF2_MetricValue) {
    use sys::OTF2_MetricValue as V;
    let raw = match *value {
        MetricValue::I64(v) => V { signed_int: v },
        MetricValue::U64(v) => V { unsigned_int: v },
        MetricValue::F64(v) => V { floating_point: v },
    };
    (value.ty().to_raw(), raw)
}

/// The typed metric value; OTF2 only allows INT64, UINT64 and DOUBLE, and
/// anything else is read as its unsigned bits.
pub(crate) fn metric_from_raw(ty: sys::OTF2_Type, value: sys::OTF2_MetricValue) -> MetricValue {
    // SAFETY: all three members are 8-byte plain data; any bits are valid
    // for each of them.
    unsafe {
        match Type::from_raw(ty) {
            Type::I64 => MetricValue::I64(value.signed_int),
            Type::F64 => MetricValue::F64(value.floating_point),
            _ => MetricValue::U64(value.unsigned_int),
        }
    }
}

/// The OTF2 (scope kind, scope id) pair of a metric scope.
pub(crate) fn scope_to_raw(scope: MetricScope) -> (sys::OTF2_MetricScope, u64) {
    match scope {
        MetricScope::Location(r) => (sys::OTF2_SCOPE_LOCATION as u8, r.0),
        MetricScope::LocationGroup(r) => (sys::OTF2_SCOPE_LOCATION_GROUP as u8, r.0.into()),
        MetricScope::SystemTreeNode(r) => (sys::OTF2_SCOPE_SYSTEM_TREE_NODE as u8, r.0.into()),
        MetricScope::Group(r) => (sys::OTF2_SCOPE_GROUP as u8, r.0.into()),
    }
}

/// The typed metric scope, or `None` for a scope kind OTF2 3.0 lacks.
pub(crate) fn scope_from_raw(kind: sys::OTF2_MetricScope, id: u64) -> Option<MetricScope> {
    // Ids other than locations are 32-bit in OTF2; truncation only hits
    // corrupt input.
    let id32 = id as u32;
    match u32::from(kind) {
        sys::OTF2_SCOPE_LOCATION => Some(MetricScope::Location(LocationRef(id))),
        sys::OTF2_SCOPE_LOCATION_GROUP => Some(MetricScope::LocationGroup(LocationGroupRef(id32))),
        sys::OTF2_SCOPE_SYSTEM_TREE_NODE => Some(MetricScope::SystemTreeNode(SystemTreeNodeRef(id32))),
        sys::OTF2_SCOPE_GROUP => Some(MetricScope::Group(GroupRef(id32))),
        _ => None,
    }
}

/// An owned `OTF2_AttributeList` for writing.
pub(crate) struct AttributeList {
    raw: NonNull<sys::OTF2_AttributeList>,
}

impl AttributeList {
    pub(crate) fn new() -> Result<Self> {
        super::install_error_callback();
        // SAFETY: no arguments; returns an owned list or null.
        let raw = unsafe { sys::OTF2_AttributeList_New() };
        let raw = NonNull::new(raw).ok_or_else(|| null_error("OTF2_AttributeList_New"))?;
        Ok(Self { raw })
    }

    /// Adds one attribute; OTF2 refuses an attribute already in the list.
    pub(crate) fn add(&mut self, attribute: AttributeRef, value: &AttributeValue) -> Result<()> {
        let (ty, raw) = attribute_to_raw(value);
        check(
            "OTF2_AttributeList_AddAttribute",
            // SAFETY: `self.raw` is a live list we own; the value is
            // passed by value.
            unsafe { sys::OTF2_AttributeList_AddAttribute(self.raw.as_ptr(), attribute.0, ty, raw) },
        )
    }

    /// Drops whatever a failed event left in the list.
    pub(crate) fn clear(&mut self) -> Result<()> {
        check(
            "OTF2_AttributeList_RemoveAllAttributes",
            // SAFETY: `self.raw` is a live list we own.
            unsafe { sys::OTF2_AttributeList_RemoveAllAttributes(self.raw.as_ptr()) },
        )
    }

    pub(crate) fn as_ptr(&mut self) -> *mut sys::OTF2_AttributeList {
        self.raw.as_ptr()
    }
}

impl Drop for AttributeList {
    fn drop(&mut self) {
        // SAFETY: we own the list and nothing uses it after this.
        unsafe {
            sys::OTF2_AttributeList_Delete(self.raw.as_ptr());
        }
    }
}

/// The attributes of one event being read, borrowed from OTF2 for the
/// duration of a visitor call.
#[derive(Clone, Copy)]
pub struct Attributes<'a> {
    raw: *const sys::OTF2_AttributeList,
    len: u32,
    _list: PhantomData<&'a sys::OTF2_AttributeList>,
}

impl<'a> Attributes<'a> {
    /// # Safety
    ///
    /// `raw` must be null or a list that stays valid and unchanged for `'a`.
    pub(crate) unsafe fn from_raw(raw: *const sys::OTF2_AttributeList) -> Self {
        let len = if raw.is_null() {
            0
        } else {
            // SAFETY: the caller's contract: a valid list.
            unsafe { sys::OTF2_AttributeList_GetNumberOfElements(raw) }
        };
        Self { raw, len, _list: PhantomData }
    }

    /// An empty attribute list.
    pub fn empty() -> Self {
        Self { raw: std::ptr::null(), len: 0, _list: PhantomData }
    }

    /// Number of attributes on the event.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether the event has no attributes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The attribute at `index` (in the order they were written).
    pub fn get_index(&self, index: usize) -> Option<(AttributeRef, AttributeValue)> {
        let index = u32::try_from(index).ok().filter(|&i| i < self.len)?;
        let mut attribute = 0;
        let mut ty = 0;
        let mut value = sys::OTF2_AttributeValue { uint64: 0 };
        // SAFETY: `raw` is non-null here (len > 0) and valid for 'a; the
        // out pointers point to live locals.
        let code = unsafe {
            sys::OTF2_AttributeList_GetAttributeByIndex(self.raw, index, &mut attribute, &mut ty, &mut value)
        };
        (code == sys::OTF2_SUCCESS).then(|| (AttributeRef(attribute), attribute_from_raw(ty, value)))
    }

    /// The value of `attribute`, if the event carries it.
    pub fn get(&self, attribute: AttributeRef) -> Option<AttributeValue> {
        self.iter().find(|(a, _)| *a == attribute).map(|(_, v)| v)
    }

    /// All attributes of the event.
    pub fn iter(&self) -> impl Iterator<Item = (AttributeRef, AttributeValue)> + 'a {
        let this = *self;
        (0..self.len()).filter_map(move |i| this.get_index(i))
    }
}

impl std::fmt::Debug for Attributes<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_survive_the_union() {
        let values = [
            AttributeValue::U8(7),
            AttributeValue::I16(-3),
            AttributeValue::U64(u64::MAX - 1),
            AttributeValue::F64(2.5),
            AttributeValue::String(StringRef(9)),
            AttributeValue::Location(LocationRef(1 << 40)),
            AttributeValue::LocationGroup(LocationGroupRef(3)),
        ];
        for value in values {
            let (ty, raw) = attribute_to_raw(&value);
            assert_eq!(attribute_from_raw(ty, raw), value);
        }
        for value in [MetricValue::I64(-5), MetricValue::U64(5), MetricValue::F64(0.5)] {
            let (ty, raw) = metric_to_raw(&value);
            assert_eq!(metric_from_raw(ty, raw), value);
        }
    }

    #[test]
    fn list_collects_attributes() {
        let mut list = AttributeList::new().unwrap();
        list.add(AttributeRef(1), &AttributeValue::U32(5)).unwrap();
        list.add(AttributeRef(2), &AttributeValue::String(StringRef(0))).unwrap();
        // A second value for the same attribute is refused by OTF2.
        assert!(list.add(AttributeRef(1), &AttributeValue::U32(6)).is_err());
        // SAFETY: the list lives until the end of the test, unchanged.
        let view = unsafe { Attributes::from_raw(list.as_ptr()) };
        assert_eq!(view.len(), 2);
        assert_eq!(view.get(AttributeRef(1)), Some(AttributeValue::U32(5)));
        assert_eq!(view.get(AttributeRef(3)), None);
        list.clear().unwrap();
    }
}
