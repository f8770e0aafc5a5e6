#!/bin/sh
# Regenerates src/v12_9.rs, src/v13_0.rs and src/v13_5.rs, one file per
# CUPTI header version, from the headers in NVIDIA's PyPI wheels.
#
# Nothing runs bindgen at build time: the output is committed, so building
# needs neither CUDA, bindgen nor libclang. Run this after changing the
# allowlists or adding a CUPTI version, and review the diff.
#
#   cargo install bindgen-cli            # once (libclang must be installed)
#   crates/sys/cupti-sys/generate.sh         # downloads the pinned wheels with pip
#   CUPTI_WHEELS=/tmp/wheels/x crates/sys/cupti-sys/generate.sh
#
# CUPTI_WHEELS names a directory holding the wheels already unpacked, one
# folder per wheel named like the wheel (<distribution>-<version>, e.g.
# nvidia_cuda_cupti-13.0.85); without it the wheels are fetched with
# `pip download` into a temporary directory.
set -eu

cd "$(dirname "$0")"

# version tag | CUPTI wheel | CUDA runtime wheel (cuda.h, driver_types.h)
versions='
12_9 nvidia_cuda_cupti_cu12-12.9.79 nvidia_cuda_runtime_cu12-12.9.79
13_0 nvidia_cuda_cupti-13.0.85 nvidia_cuda_runtime-13.0.96
13_5 nvidia_cuda_cupti-13.5.25 nvidia_cuda_runtime-13.5.37
'

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

wheels=${CUPTI_WHEELS:-}
if [ -z "$wheels" ]; then
    wheels="$work/wheels"
    mkdir -p "$wheels"
    echo "$versions" | while read -r tag cupti runtime; do
        [ -n "$tag" ] || continue
        for wheel in "$cupti" "$runtime"; do
            # nvidia_cuda_cupti_cu12-12.9.79 -> nvidia-cuda-cupti-cu12==12.9.79
            spec=$(echo "$wheel" | sed -e 's/-/==/' -e 's/_/-/g')
            ${PIP:-pip} download --quiet --no-deps --only-binary=:all: \
                --platform manylinux_2_25_x86_64 --platform manylinux_2_17_x86_64 \
                --platform manylinux2014_x86_64 --dest "$work/dl" "$spec"
            mkdir -p "$wheels/$wheel"
            unzip -q -o "$work/dl/$wheel"-*.whl -d "$wheels/$wheel"
        done
    done
fi

# The include folder of an unpacked wheel: nvidia/cuda_cupti/include (12.x),
# nvidia/cu13/include (13.x).
include_dir() {
    found=$(find "$wheels/$1/nvidia" -maxdepth 3 -type f -name "$2" | head -n 1)
    if [ -z "$found" ]; then
        echo "generate.sh: $2 not found under $wheels/$1" >&2
        exit 1
    fi
    dirname "$found"
}

# builtin_types.h (included by cupti_callbacks.h) includes
# crt/host_defines.h, which ships with nvcc, not with the runtime wheel. This
# stand-in defines the attribute macros the runtime headers use, with their
# host-compiler meaning; none of the items bound here depends on them (the
# bindgen layout assertions in the output check every bound struct).
mkdir -p "$work/stub/crt"
cat >"$work/stub/crt/host_defines.h" <<'STUB'
#pragma once
#define __host__
#define __device__
#define __constant__
#define __device_builtin__
#define __cudart_builtin__
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __builtin_align__(n) __attribute__((aligned(n)))
#define CUDARTAPI
STUB

# The activity record structs, every version of each (the deprecated ones
# included: an older CUPTI emits them, see src/version.rs).
records='CUpti_Activity|CUpti_ActivityAPI|CUpti_ActivityKernel[0-9]*|CUpti_ActivityMemcpy[0-9]*|CUpti_ActivityMemcpyPtoP[0-9]*|CUpti_ActivityMemset[0-9]*|CUpti_ActivitySynchronization[0-9]*|CUpti_ActivityNvLink[0-9]*|CUpti_ActivityNvLinkNpu|CUpti_ActivityDevice[0-9]*|CUpti_ActivityContext[0-9]*|CUpti_ActivityStream|CUpti_ActivityOverhead[0-9]*|CUpti_ActivityMarker2|CUpti_ActivityExternalCorrelation|CUpti_ActivityMemory[0-9]*|CUpti_ActivityMemoryPool[0-9]*|CUpti_ActivityUnifiedMemoryCounter[0-9]*|CUpti_ActivityUnifiedMemoryCounterConfig|CUpti_ActivityName|CUpti_ActivityGraphTrace[0-9]*'
enums='CUpti_ActivityKind|CUpti_ActivityMemcpyKind|CUpti_ActivityMemoryKind|CUpti_ActivitySynchronizationType|CUpti_ActivityFlag|CUpti_ActivityAttribute|CUpti_ActivityObjectKind|CUpti_ActivityOverheadKind|CUpti_ActivityMemoryOperationType|CUpti_ActivityMemoryPoolOperationType|CUpti_ActivityMemoryPoolType|CUpti_ActivityUnifiedMemoryCounterKind|CUpti_ActivityUnifiedMemoryCounterScope|CUpti_ActivityUnifiedMemoryAccessType|CUpti_ActivityUnifiedMemoryMigrationCause|CUpti_ExternalCorrelationKind|CUptiResult|CUpti_CallbackDomain|CUpti_CallbackSite|CUpti_ApiCallbackSite|CUpti_CallbackIdResource|CUpti_CallbackIdSync|CUpti_DevType|CUpti_LinkFlag|CUpti_ActivityThreadIdType'
callbacks='CUpti_CallbackData|CUpti_ResourceData|CUpti_GraphData|CUpti_SynchronizeData|CUpti_CallbackFunc|CUpti_BuffersCallbackRequestFunc|CUpti_BuffersCallbackCompleteFunc|CUpti_TimestampCallbackFunc|CUpti_SubscriberHandle|CUpti_CallbackId'
functions='cuptiGetVersion|cuptiGetResultString|cuptiSubscribe|cuptiUnsubscribe|cuptiEnableDomain|cuptiEnableCallback|cuptiGetCallbackName|cuptiActivityRegisterCallbacks|cuptiActivityRegisterTimestampCallback|cuptiActivityEnable|cuptiActivityDisable|cuptiActivityFlushAll|cuptiActivityFlushPeriod|cuptiActivityGetNextRecord|cuptiActivityGetNumDroppedRecords|cuptiActivitySetAttribute|cuptiGetTimestamp|cuptiFinalize|cuptiGetDeviceId|cuptiGetContextId|cuptiGetStreamIdEx|cuptiGetGraphNodeId|cuptiActivityEnableDriverApi|cuptiActivityEnableRuntimeApi|cuptiActivityPushExternalCorrelationId|cuptiActivityPopExternalCorrelationId|cuptiSetThreadIdType|cuptiActivityConfigureUnifiedMemoryCounter'
# Macros kept; each version has a subset. Casts, `((uint32_t) 0xFFFFFFFFU)`,
# which bindgen's macro parser skips, and `0LL` literals, which it would type
# u32, are re-declared as typed constants (see `generate` below).
version_macros='CUPTI_API_VERSION CUPTI_MAX_NVLINK_PORTS CUPTI_NVLINK_INVALID_PORT CUPTI_CORRELATION_ID_UNKNOWN CUPTI_GRID_ID_UNKNOWN CUPTI_TIMESTAMP_UNKNOWN CUPTI_INVALID_DEVICE_ID CUPTI_INVALID_CONTEXT_ID CUPTI_INVALID_STREAM_ID CUPTI_INVALID_CHANNEL_ID CUPTI_SYNCHRONIZATION_INVALID_VALUE'
# The macros whose value is the same in every version, for common.rs.
common_macros='CUPTI_CORRELATION_ID_UNKNOWN CUPTI_GRID_ID_UNKNOWN CUPTI_TIMESTAMP_UNKNOWN'

# generate <output> <cupti wheel> <runtime wheel> <type allowlist> <macros>
generate() {
    out=$1
    cupti_inc=$(include_dir "$2" cupti.h)
    cuda_inc=$(include_dir "$3" cuda.h)
    api=$(sed -n 's/^#define CUPTI_API_VERSION *\([0-9]*\).*/\1/p' "$cupti_inc/cupti_version.h")

    # A cast or LL macro becomes `static const <type> cupti_sys_typed_<name>`,
    # which bindgen turns into a `pub const` of that type; renamed afterwards.
    # (NVLINK_INVALID_PORT is -1 up to 13.0 and a uint32_t cast in 13.5;
    # INVALID_CONTEXT_ID/STREAM_ID are casts of 0xFFFFFFFF up to 13.0 and 0
    # in 13.5.)
    cp wrapper.h "$work/input.h"
    plain=''
    typed=''
    for name in $5; do
        def=$(grep -h "^#define $name " "$cupti_inc"/cupti_*.h | head -n 1)
        [ -n "$def" ] || continue
        type=$(echo "$def" | sed -n -e 's/^#define [A-Z_]* *( *( *\([a-z0-9_]*\) *).*/\1/p' \
            -e 's/^#define [A-Z_]* *-*[0-9]*LL *$/long long/p')
        if [ -n "$type" ]; then
            echo "static const $type cupti_sys_typed_$name = $name;" >>"$work/input.h"
            typed="$typed|$name"
        else
            plain="$plain|$name"
        fi
    done

    bindgen "$work/input.h" \
        --output "$work/out.rs" \
        --raw-line "// Generated by generate.sh from the CUPTI headers of the $2 wheel" \
        --raw-line "// (CUPTI_API_VERSION $api) and cuda.h of $3; do not edit." \
        --allowlist-type "$4" \
        --allowlist-function "$functions" \
        --allowlist-var "${plain#|}|cupti_sys_typed_.*" \
        --blocklist-item "${typed#|}" \
        --blocklist-type '.*FieldIds' \
        --no-prepend-enum-name \
        --default-enum-style consts \
        --no-doc-comments \
        --merge-extern-blocks \
        --sort-semantically \
        --rust-edition 2024 \
        --rust-target 1.85 \
        -- -I"$cupti_inc" -I"$cuda_inc" -I"$work/stub"

    sed 's/\bcupti_sys_typed_//' "$work/out.rs" >"$out"
    # The default style, whatever the workspace's rustfmt.toml says.
    : >"$work/rustfmt.toml"
    rustfmt --edition 2024 --config-path "$work/rustfmt.toml" "$out"
    echo "$out: $2 (CUPTI_API_VERSION $api), $(wc -l <"$out") lines"
}

# One complete file per version: records, enums, callback structs, functions.
echo "$versions" | while read -r tag cupti runtime; do
    [ -n "$tag" ] || continue
    generate "src/v$tag.rs" "$cupti" "$runtime" "$records|$enums|$callbacks" "$version_macros"
done

# common.rs: what does not depend on the version (function prototypes,
# callback structs, enum constants), from the newest headers. No records.
newest=$(echo "$versions" | awk 'NF { last = $0 } END { print last }')
set -- $newest
generate src/common.rs "$2" "$3" "$enums|$callbacks" "$common_macros"
