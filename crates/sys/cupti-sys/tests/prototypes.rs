//! The generated files agree where `Cupti` and the crate root assume they
//! do: every function prototype is declared identically by the 12.9, 13.0
//! and 13.5 headers (so one set of function types serves every release),
//! and an enum constant never changes value between releases.

use std::collections::BTreeMap;

const SOURCES: [(&str, &str); 4] = [
    ("v12_9", include_str!("../src/v12_9.rs")),
    ("v13_0", include_str!("../src/v13_0.rs")),
    ("v13_5", include_str!("../src/v13_5.rs")),
    ("common", include_str!("../src/common.rs")),
];

/// The functions `Cupti` loads; each generated file must declare them all.
const FUNCTIONS: [&str; 28] = [
    "cuptiGetVersion",
    "cuptiGetResultString",
    "cuptiSubscribe",
    "cuptiUnsubscribe",
    "cuptiEnableDomain",
    "cuptiEnableCallback",
    "cuptiGetCallbackName",
    "cuptiActivityRegisterCallbacks",
    "cuptiActivityRegisterTimestampCallback",
    "cuptiActivityEnable",
    "cuptiActivityDisable",
    "cuptiActivityFlushAll",
    "cuptiActivityFlushPeriod",
    "cuptiActivityGetNextRecord",
    "cuptiActivityGetNumDroppedRecords",
    "cuptiActivitySetAttribute",
    "cuptiGetTimestamp",
    "cuptiFinalize",
    "cuptiGetDeviceId",
    "cuptiGetContextId",
    "cuptiGetStreamIdEx",
    "cuptiGetGraphNodeId",
    "cuptiActivityEnableDriverApi",
    "cuptiActivityEnableRuntimeApi",
    "cuptiActivityPushExternalCorrelationId",
    "cuptiActivityPopExternalCorrelationId",
    "cuptiSetThreadIdType",
    "cuptiActivityConfigureUnifiedMemoryCounter",
];

/// `name -> declaration` for each `pub fn` in the file's extern block,
/// whitespace collapsed.
fn prototypes(source: &str) -> BTreeMap<String, String> {
    let start = source.find("unsafe extern \"C\" {").expect("an extern block");
    let block = &source[start..];
    let block = &block[..block.find("\n}").expect("end of the extern block")];
    let flat = block.split_whitespace().collect::<Vec<_>>().join(" ");
    flat.split("pub fn ")
        .skip(1)
        .map(|decl| {
            let decl = decl.trim().to_string();
            let name = decl[..decl.find('(').unwrap()].to_string();
            (name, decl)
        })
        .collect()
}

/// The types the prototypes use, as each file defines them (a prototype is
/// only the same if `CUpti_CallbackFunc` & co. are too).
fn type_alias(source: &str, name: &str) -> String {
    let start = source.find(&format!("pub type {name} =")).unwrap_or_else(|| panic!("no type {name}"));
    let decl = &source[start..];
    decl[..decl.find(';').unwrap()].split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn every_file_declares_the_same_prototypes() {
    let (first_name, first) = SOURCES[0];
    let expected = prototypes(first);
    let names: Vec<&str> = expected.keys().map(String::as_str).collect();
    let mut sorted = FUNCTIONS.to_vec();
    sorted.sort_unstable();
    assert_eq!(names, sorted, "{first_name} declares other functions than Cupti loads");
    for (name, source) in &SOURCES[1..] {
        assert_eq!(prototypes(source), expected, "{name} vs {first_name}");
    }
}

#[test]
fn the_types_in_the_prototypes_are_the_same_everywhere() {
    for alias in [
        "CUptiResult",
        "CUpti_CallbackDomain",
        "CUpti_CallbackId",
        "CUpti_CallbackFunc",
        "CUpti_SubscriberHandle",
        "CUpti_ActivityKind",
        "CUpti_ActivityAttribute",
        "CUpti_BuffersCallbackRequestFunc",
        "CUpti_BuffersCallbackCompleteFunc",
        "CUpti_TimestampCallbackFunc",
        "CUpti_ExternalCorrelationKind",
        "CUcontext",
        "CUstream",
    ] {
        let (first_name, first) = SOURCES[0];
        let expected = type_alias(first, alias);
        for (name, source) in &SOURCES[1..] {
            assert_eq!(type_alias(source, alias), expected, "{alias}: {name} vs {first_name}");
        }
    }
}

/// `name -> value` of each `pub const NAME: Type = value;`.
fn constants(source: &str) -> BTreeMap<&str, &str> {
    source
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("pub const ")?;
            let (name, rest) = rest.split_once(':')?;
            let value = rest.split_once(" = ")?.1.strip_suffix(';')?;
            Some((name, value))
        })
        .collect()
}

/// Constants whose value does depend on the release: sentinels that count
/// the values, the header's own version, and three markers NVIDIA changed
/// in 13.5 (see README).
fn version_dependent(name: &str) -> bool {
    name.ends_with("_COUNT")
        || name.ends_with("_SIZE")
        || matches!(
            name,
            "CUPTI_API_VERSION"
                | "CUPTI_MAX_NVLINK_PORTS"
                | "CUPTI_NVLINK_INVALID_PORT"
                | "CUPTI_INVALID_CONTEXT_ID"
                | "CUPTI_INVALID_STREAM_ID"
        )
}

#[test]
fn enum_values_never_change_between_releases() {
    let tables: Vec<(&str, BTreeMap<&str, &str>)> =
        SOURCES.iter().map(|(name, source)| (*name, constants(source))).collect();
    let mut compared = 0;
    for (i, (name_a, a)) in tables.iter().enumerate() {
        for (name_b, b) in &tables[i + 1..] {
            for (constant, value) in a {
                if let Some(other) = b.get(constant) {
                    if version_dependent(constant) {
                        continue;
                    }
                    compared += 1;
                    assert_eq!(value, other, "{constant}: {name_a} vs {name_b}");
                }
            }
        }
    }
    assert!(compared > 1000, "only {compared} comparisons: is the parser broken?");
}

/// The type of each `pub const`.
fn constant_types(source: &str) -> BTreeMap<&str, &str> {
    source
        .lines()
        .filter_map(|line| {
            let (name, rest) = line.strip_prefix("pub const ")?.split_once(": ")?;
            Some((name, rest.split_once(" = ")?.0))
        })
        .collect()
}

#[test]
fn newer_headers_only_add_constants() {
    let v12_9 = constants(SOURCES[0].1);
    let v13_0 = constants(SOURCES[1].1);
    let v13_5 = constants(SOURCES[2].1);
    for constant in v12_9.keys().chain(v13_0.keys()) {
        assert!(v13_5.contains_key(constant), "{constant} vanished from 13.5");
    }
}

#[test]
fn the_root_has_every_value_of_its_enums() {
    // For each enum type common.rs (the crate root) declares, every value
    // the 13.5 headers define for it.
    let common = SOURCES[3].1;
    let in_common = constant_types(common);
    let mut checked = 0;
    for (constant, ty) in constant_types(SOURCES[2].1) {
        if ty.starts_with("CU") && common.contains(&format!("pub type {ty} =")) {
            assert_eq!(in_common.get(constant), Some(&ty), "{constant} missing from common.rs");
            checked += 1;
        }
    }
    assert!(checked > 200, "only {checked} enum values: is the parser broken?");
}
