//! Which record layouts a loaded CUPTI writes. [`CuptiVersion`] turns
//! `cuptiGetVersion`'s number into a CUDA release, [`Layout`] names the
//! generated module made from the newest headers not newer than that
//! release, and [`RecordStruct`] names, per activity kind, the exact struct
//! the library emits and the module to read it from.
//!
//! The numbering changed at 13.0: CUDA 12.x reports a small API version
//! (18 for 12.0 and 12.1, and for 11.8 too; 20 for 12.2, 21, 22, 23, 24 for
//! 12.6, 26 for 12.8, 27 and 28 for 12.9), CUDA 13 reports `xxyyzz`
//! (130001 = 13.0 with CUPTI update 1). The per-kind tables below were read
//! from the `\ref` of each `CUPTI_ACTIVITY_KIND_*` in the headers of one
//! wheel per release: 12.0.146, 12.1.105, 12.2.142, 12.3.101, 12.4.127,
//! 12.5.82, 12.6.80, 12.8.90, 12.9.79, 13.0.85, 13.1.115, 13.2.86, 13.3.75,
//! 13.4.92 and 13.5.25. Every record struct has one definition in all of
//! those headers, except `Memcpy6` and `Memset4`, whose last 4 bytes went
//! from `pad2: u32` (12.x) to `isDeviceLaunched: u8, pad2: [u8; 3]` (13.x);
//! hence the two variants of each here.

use std::fmt;

use crate::{CUpti_ActivityKind, UnsupportedVersion, v12_9, v13_0, v13_5};

/// A generated module of record layouts: the headers of one CUPTI release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Layout {
    /// [`crate::v12_9`]: CUDA 12.9 headers, right for every 12.x library
    /// (older 12.x emit structs that are still declared there).
    V12_9,
    /// [`crate::v13_0`]: CUDA 13.0 headers, for 13.0 up to 13.4. 13.1 to
    /// 13.4 also emit structs first declared after 13.0 (`Kernel11`,
    /// `NvLink5`, …): [`RecordStruct::layout`] sends those to `V13_5`.
    V13_0,
    /// [`crate::v13_5`]: CUDA 13.5 headers, for 13.5 and newer 13.x.
    V13_5,
}

impl Layout {
    /// Every layout, oldest first.
    pub const ALL: [Layout; 3] = [Layout::V12_9, Layout::V13_0, Layout::V13_5];

    /// The module's name, `"v12_9"`.
    pub const fn module(self) -> &'static str {
        match self {
            Layout::V12_9 => "v12_9",
            Layout::V13_0 => "v13_0",
            Layout::V13_5 => "v13_5",
        }
    }

    /// `CUPTI_API_VERSION` of the headers the module was generated from.
    pub const fn header_api_version(self) -> u32 {
        match self {
            Layout::V12_9 => v12_9::CUPTI_API_VERSION,
            Layout::V13_0 => v13_0::CUPTI_API_VERSION,
            Layout::V13_5 => v13_5::CUPTI_API_VERSION,
        }
    }
}

/// The version of a loaded CUPTI, as the CUDA release it ships with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CuptiVersion {
    api: u32,
    major: u32,
    minor: u32,
}

/// The newest release the bindings were generated from.
const NEWEST: (u32, u32) = (13, 5);

impl CuptiVersion {
    /// Maps `cuptiGetVersion`'s value to a release. `soname_major` is the
    /// CUDA major in the library's SONAME (`libcupti.so.12` → 12); it is
    /// needed only for API version 18, which CUDA 11.8 and 12.0/12.1 share.
    ///
    /// Refused: anything older than CUDA 12.0, and CUDA 14 or newer (whose
    /// records these bindings cannot describe). A 12.x or 13.x newer than
    /// the bindings is accepted with the newest known layouts; see
    /// [`is_newer_than_bindings`](Self::is_newer_than_bindings).
    pub fn from_api(api: u32, soname_major: Option<u32>) -> Result<Self, UnsupportedVersion> {
        let (major, minor) = match api {
            0..=17 => {
                return Err(UnsupportedVersion::TooOld { api, cuda: "11.6 or older" });
            }
            18 => match soname_major {
                Some(12) => (12, 0),
                Some(major) if major < 12 => {
                    return Err(UnsupportedVersion::TooOld { api, cuda: "11.8" });
                }
                _ => return Err(UnsupportedVersion::Ambiguous18),
            },
            // 19 is listed for 12.0 in the header comment, but 12.0 and 12.1
            // report 18.
            19 => (12, 0),
            20 => (12, 2),
            21 => (12, 3),
            22 => (12, 4),
            23 => (12, 5),
            // No release reported 25 (there is no CUDA 12.7); take the older
            // neighbour, whose records are prefixes of the newer ones.
            24 | 25 => (12, 6),
            26 => (12, 8),
            // 28 is 12.9 update 1; anything up to 99 would be a later 12.x.
            27..=99 => (12, 9),
            130_000.. => {
                let (major, minor) = (api / 10_000, api / 100 % 100);
                if major > NEWEST.0 {
                    return Err(UnsupportedVersion::NewerMajor { api, major });
                }
                (major, minor)
            }
            _ => return Err(UnsupportedVersion::Unrecognized { api }),
        };
        Ok(CuptiVersion { api, major, minor })
    }

    /// `cuptiGetVersion`'s value.
    pub const fn api(self) -> u32 {
        self.api
    }

    /// The CUDA release, `(12, 9)`. API version 18 gives `(12, 0)` for
    /// 12.0 and 12.1 alike.
    pub const fn cuda(self) -> (u32, u32) {
        (self.major, self.minor)
    }

    /// The generated module from the newest headers not newer than this
    /// release.
    pub const fn layout(self) -> Layout {
        match (self.major, self.minor) {
            (12, _) => Layout::V12_9,
            (13, 0..=4) => Layout::V13_0,
            _ => Layout::V13_5,
        }
    }

    /// Whether the library is newer than every header the bindings come
    /// from (a 12.x after 12.9 update 1, a 13.x after 13.5). Its records are
    /// read with the newest known structs: CUPTI has so far grown records by
    /// appending fields, but `NvLink5` (13.2) moved fields, so a caller may
    /// want to warn.
    pub const fn is_newer_than_bindings(self) -> bool {
        match self.major {
            12 => self.api > 28,
            _ => self.minor > NEWEST.1,
        }
    }

    /// The struct this library writes for records of `kind`, for the kinds
    /// these bindings cover (`None` for the others).
    pub fn record_struct(self, kind: CUpti_ActivityKind) -> Option<RecordStruct> {
        use crate::common as c;
        use RecordStruct as R;
        let release = self.major * 100 + self.minor;
        Some(match kind {
            c::CUPTI_ACTIVITY_KIND_KERNEL | c::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL => match release {
                ..1300 => R::Kernel9,
                1300 => R::Kernel10,
                1301..=1302 => R::Kernel11,
                1303 => R::Kernel12,
                _ => R::Kernel13,
            },
            c::CUPTI_ACTIVITY_KIND_MEMCPY => match release {
                ..1208 => R::Memcpy5,
                1208..1300 => R::Memcpy6Cuda12,
                1300..1304 => R::Memcpy6,
                _ => R::Memcpy7,
            },
            c::CUPTI_ACTIVITY_KIND_MEMCPY2 => R::MemcpyPtoP4,
            c::CUPTI_ACTIVITY_KIND_MEMSET => match release {
                ..1300 => R::Memset4Cuda12,
                1300..1304 => R::Memset4,
                _ => R::Memset5,
            },
            c::CUPTI_ACTIVITY_KIND_DRIVER
            | c::CUPTI_ACTIVITY_KIND_RUNTIME
            | c::CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API => R::Api,
            c::CUPTI_ACTIVITY_KIND_SYNCHRONIZATION => match release {
                ..1208 => R::Synchronization,
                _ => R::Synchronization2,
            },
            c::CUPTI_ACTIVITY_KIND_NVLINK => match release {
                ..1302 => R::NvLink4,
                _ => R::NvLink5,
            },
            c::CUPTI_ACTIVITY_KIND_DEVICE => match release {
                ..1202 => R::Device4,
                1202..1302 => R::Device5,
                _ => R::Device6,
            },
            c::CUPTI_ACTIVITY_KIND_CONTEXT => match release {
                ..1204 => R::Context,
                1204 => R::Context2,
                1205..1301 => R::Context3,
                _ => R::Context4,
            },
            c::CUPTI_ACTIVITY_KIND_STREAM => R::Stream,
            c::CUPTI_ACTIVITY_KIND_OVERHEAD => match release {
                ..1203 => R::Overhead,
                1203 => R::Overhead2,
                _ => R::Overhead3,
            },
            c::CUPTI_ACTIVITY_KIND_MARKER => R::Marker2,
            c::CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION => R::ExternalCorrelation,
            c::CUPTI_ACTIVITY_KIND_MEMORY => R::Memory,
            c::CUPTI_ACTIVITY_KIND_MEMORY2 => match release {
                ..1206 => R::Memory3,
                _ => R::Memory4,
            },
            c::CUPTI_ACTIVITY_KIND_NAME => R::Name,
            c::CUPTI_ACTIVITY_KIND_GRAPH_TRACE => match release {
                ..1203 => R::GraphTrace,
                _ => R::GraphTrace2,
            },
            c::CUPTI_ACTIVITY_KIND_MEMORY_POOL => match release {
                ..1300 => R::MemoryPool2,
                _ => R::MemoryPool3,
            },
            c::CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER => match release {
                ..1208 => R::UnifiedMemoryCounter2,
                _ => R::UnifiedMemoryCounter3,
            },
            _ => return None,
        })
    }
}

impl fmt::Display for CuptiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CUPTI {}.{} (API version {})", self.major, self.minor, self.api)
    }
}

/// Declares [`RecordStruct`]: variant => layout, module::struct.
macro_rules! record_structs {
    ($( $(#[$doc:meta])* $variant:ident => $layout:ident, $module:ident :: $ty:ident; )*) => {
        /// One activity record struct as a library writes it: which
        /// `CUpti_Activity*` to cast a record to, and from which generated
        /// module ([`RecordStruct::layout`]). Structs with one definition in
        /// every header are read from the oldest module that has them.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum RecordStruct {
            $( $(#[$doc])* $variant, )*
        }

        impl RecordStruct {
            /// Every variant.
            pub const ALL: &'static [RecordStruct] = &[$(RecordStruct::$variant),*];

            /// The C name, `"CUpti_ActivityKernel10"`.
            pub const fn c_name(self) -> &'static str {
                match self {
                    $( RecordStruct::$variant => stringify!($ty), )*
                }
            }

            /// The module holding the definition to read it with.
            pub const fn layout(self) -> Layout {
                match self {
                    $( RecordStruct::$variant => Layout::$layout, )*
                }
            }

            /// `size_of` the struct: how far one record reaches.
            pub const fn size(self) -> usize {
                match self {
                    $( RecordStruct::$variant => std::mem::size_of::<$module::$ty>(), )*
                }
            }

            /// The module's name as written in the table, for the test that
            /// checks it against [`layout`](Self::layout).
            #[cfg(test)]
            const fn module_written(self) -> &'static str {
                match self {
                    $( RecordStruct::$variant => stringify!($module), )*
                }
            }
        }
    };
}

record_structs! {
    /// `CUpti_ActivityAPI`: driver, runtime and internal-launch API calls.
    Api => V12_9, v12_9::CUpti_ActivityAPI;
    /// Kernels, CUDA 12.x.
    Kernel9 => V12_9, v12_9::CUpti_ActivityKernel9;
    /// Kernels, 13.0: `Kernel9` + `isDeviceLaunched`.
    Kernel10 => V13_0, v13_0::CUpti_ActivityKernel10;
    /// Kernels, 13.1 and 13.2: `Kernel10` + `priority`.
    Kernel11 => V13_5, v13_5::CUpti_ActivityKernel11;
    /// Kernels, 13.3: `Kernel11` + `executionModel`.
    Kernel12 => V13_5, v13_5::CUpti_ActivityKernel12;
    /// Kernels, 13.4 and 13.5: `Kernel12` + `sourceGraphId`, `sourceGraphNodeId`.
    Kernel13 => V13_5, v13_5::CUpti_ActivityKernel13;
    /// Copies, 12.0 to 12.6.
    Memcpy5 => V12_9, v12_9::CUpti_ActivityMemcpy5;
    /// Copies, 12.8 and 12.9: `Memcpy5` + `copyCount`; bytes 84..88 are `pad2`.
    Memcpy6Cuda12 => V12_9, v12_9::CUpti_ActivityMemcpy6;
    /// Copies, 13.0 to 13.3: byte 84 is `isDeviceLaunched`.
    Memcpy6 => V13_0, v13_0::CUpti_ActivityMemcpy6;
    /// Copies, 13.4 and 13.5: `Memcpy6` + `sourceGraphId`, `sourceGraphNodeId`.
    Memcpy7 => V13_5, v13_5::CUpti_ActivityMemcpy7;
    /// Peer-to-peer copies (`MEMCPY2`), every release.
    MemcpyPtoP4 => V12_9, v12_9::CUpti_ActivityMemcpyPtoP4;
    /// Memsets, 12.x; bytes 84..88 are `pad2`.
    Memset4Cuda12 => V12_9, v12_9::CUpti_ActivityMemset4;
    /// Memsets, 13.0 to 13.3: byte 84 is `isDeviceLaunched`.
    Memset4 => V13_0, v13_0::CUpti_ActivityMemset4;
    /// Memsets, 13.4 and 13.5: `Memset4` + `sourceGraphId`, `sourceGraphNodeId`.
    Memset5 => V13_5, v13_5::CUpti_ActivityMemset5;
    /// Synchronization, 12.0 to 12.6.
    Synchronization => V12_9, v12_9::CUpti_ActivitySynchronization;
    /// Synchronization, 12.8 on: + `cudaEventSyncId`, `returnValue`.
    Synchronization2 => V12_9, v12_9::CUpti_ActivitySynchronization2;
    /// NVLink topology up to 13.1: ports as `int8_t[32]`.
    NvLink4 => V12_9, v12_9::CUpti_ActivityNvLink4;
    /// NVLink topology, 13.2 on: ports as `uint32_t *`; `bandwidth` moved.
    NvLink5 => V13_5, v13_5::CUpti_ActivityNvLink5;
    /// Devices, 12.0 and 12.1.
    Device4 => V12_9, v12_9::CUpti_ActivityDevice4;
    /// Devices, 12.2 to 13.1: + `isNumaNode`, `numaId`.
    Device5 => V12_9, v12_9::CUpti_ActivityDevice5;
    /// Devices, 13.2 on: + `numTpcs`.
    Device6 => V13_5, v13_5::CUpti_ActivityDevice6;
    /// Contexts, 12.0 to 12.3.
    Context => V12_9, v12_9::CUpti_ActivityContext;
    /// Contexts, 12.4: + `parentContextId`, `isGreenContext`, `numMultiprocessors`.
    Context2 => V12_9, v12_9::CUpti_ActivityContext2;
    /// Contexts, 12.5 to 13.0: + `cigMode`.
    Context3 => V12_9, v12_9::CUpti_ActivityContext3;
    /// Contexts, 13.1 on: + `processId`.
    Context4 => V13_5, v13_5::CUpti_ActivityContext4;
    /// Streams, every release.
    Stream => V12_9, v12_9::CUpti_ActivityStream;
    /// Overheads, 12.0 to 12.2.
    Overhead => V12_9, v12_9::CUpti_ActivityOverhead;
    /// Overheads, 12.3: + `correlationId`.
    Overhead2 => V12_9, v12_9::CUpti_ActivityOverhead2;
    /// Overheads, 12.4 on: + `overheadData`.
    Overhead3 => V12_9, v12_9::CUpti_ActivityOverhead3;
    /// NVTX markers, every release.
    Marker2 => V12_9, v12_9::CUpti_ActivityMarker2;
    /// External correlation, every release.
    ExternalCorrelation => V12_9, v12_9::CUpti_ActivityExternalCorrelation;
    /// `MEMORY` (allocation and free in one record), every release.
    Memory => V12_9, v12_9::CUpti_ActivityMemory;
    /// `MEMORY2`, 12.0 to 12.5.
    Memory3 => V12_9, v12_9::CUpti_ActivityMemory3;
    /// `MEMORY2`, 12.6 on: + `source`.
    Memory4 => V12_9, v12_9::CUpti_ActivityMemory4;
    /// NVTX resource names, every release.
    Name => V12_9, v12_9::CUpti_ActivityName;
    /// One graph execution (`GRAPH_TRACE`), 12.0 to 12.2.
    GraphTrace => V12_9, v12_9::CUpti_ActivityGraphTrace;
    /// One graph execution, 12.3 on: + `endDeviceId`, `endContextId`.
    GraphTrace2 => V12_9, v12_9::CUpti_ActivityGraphTrace2;
    /// Memory pools created, destroyed, trimmed: 12.x.
    MemoryPool2 => V12_9, v12_9::CUpti_ActivityMemoryPool2;
    /// Memory pools, 13.0 on: `MemoryPool2` + `isManagedPool`.
    MemoryPool3 => V13_0, v13_0::CUpti_ActivityMemoryPool3;
    /// Unified memory counters, 12.0 to 12.6.
    UnifiedMemoryCounter2 => V12_9, v12_9::CUpti_ActivityUnifiedMemoryCounter2;
    /// Unified memory counters, 12.8 on: `UnifiedMemoryCounter2` + `processors`.
    UnifiedMemoryCounter3 => V12_9, v12_9::CUpti_ActivityUnifiedMemoryCounter3;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common as c;

    fn version(api: u32) -> CuptiVersion {
        CuptiVersion::from_api(api, Some(12)).unwrap()
    }

    #[test]
    fn api_versions_map_to_releases_and_layouts() {
        let cases = [
            (18, (12, 0), Layout::V12_9),
            (20, (12, 2), Layout::V12_9),
            (24, (12, 6), Layout::V12_9),
            (26, (12, 8), Layout::V12_9),
            (28, (12, 9), Layout::V12_9),
            (130_000, (13, 0), Layout::V13_0),
            (130_001, (13, 0), Layout::V13_0),
            (130_101, (13, 1), Layout::V13_0),
            (130_401, (13, 4), Layout::V13_0),
            (130_500, (13, 5), Layout::V13_5),
            (130_902, (13, 9), Layout::V13_5),
        ];
        for (api, cuda, layout) in cases {
            let v = version(api);
            assert_eq!((v.api(), v.cuda(), v.layout()), (api, cuda, layout), "API {api}");
        }
        assert_eq!(version(130_001).to_string(), "CUPTI 13.0 (API version 130001)");
    }

    #[test]
    fn layouts_match_the_headers_they_were_generated_from() {
        for layout in Layout::ALL {
            let v = CuptiVersion::from_api(layout.header_api_version(), None).unwrap();
            assert_eq!(v.layout(), layout);
            assert!(!v.is_newer_than_bindings(), "{layout:?}");
        }
    }

    #[test]
    fn too_old_ambiguous_and_unknown_versions_are_refused() {
        let refused = |api, soname| CuptiVersion::from_api(api, soname).unwrap_err();
        assert_eq!(refused(17, None), UnsupportedVersion::TooOld { api: 17, cuda: "11.6 or older" });
        assert_eq!(refused(18, Some(11)), UnsupportedVersion::TooOld { api: 18, cuda: "11.8" });
        assert_eq!(refused(18, None), UnsupportedVersion::Ambiguous18);
        assert_eq!(refused(18, Some(13)), UnsupportedVersion::Ambiguous18);
        assert_eq!(refused(140_000, None), UnsupportedVersion::NewerMajor { api: 140_000, major: 14 });
        assert_eq!(refused(1000, None), UnsupportedVersion::Unrecognized { api: 1000 });
        assert!(refused(0, None).to_string().contains("older than 12.0"));
    }

    #[test]
    fn newer_minor_releases_are_accepted_and_flagged() {
        assert!(version(29).is_newer_than_bindings());
        assert_eq!(version(29).cuda(), (12, 9));
        assert!(version(130_600).is_newer_than_bindings());
        assert!(!version(130_501).is_newer_than_bindings());
        assert_eq!(
            version(130_600).record_struct(c::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
            Some(RecordStruct::Kernel13)
        );
    }

    /// The struct per kind per release, as the `\ref` of each kind in that
    /// release's `cupti_activity.h` names it (read from the wheels listed in
    /// the module docs). Columns: kernel, memcpy, memset, synchronization,
    /// nvlink, device, context, overhead, memory2, memory pool, unified
    /// memory counter (12.0, 12.4, 12.6: `UnifiedMemoryCounter2`; 12.8:
    /// `UnifiedMemoryCounter3`).
    #[test]
    fn record_structs_per_release_follow_the_headers() {
        use RecordStruct as R;
        #[rustfmt::skip]
        let table = [
            (18, [R::Kernel9, R::Memcpy5, R::Memset4Cuda12, R::Synchronization, R::NvLink4, R::Device4, R::Context, R::Overhead, R::Memory3, R::MemoryPool2, R::UnifiedMemoryCounter2]),
            (20, [R::Kernel9, R::Memcpy5, R::Memset4Cuda12, R::Synchronization, R::NvLink4, R::Device5, R::Context, R::Overhead, R::Memory3, R::MemoryPool2, R::UnifiedMemoryCounter2]),
            (21, [R::Kernel9, R::Memcpy5, R::Memset4Cuda12, R::Synchronization, R::NvLink4, R::Device5, R::Context, R::Overhead2, R::Memory3, R::MemoryPool2, R::UnifiedMemoryCounter2]),
            (22, [R::Kernel9, R::Memcpy5, R::Memset4Cuda12, R::Synchronization, R::NvLink4, R::Device5, R::Context2, R::Overhead3, R::Memory3, R::MemoryPool2, R::UnifiedMemoryCounter2]),
            (23, [R::Kernel9, R::Memcpy5, R::Memset4Cuda12, R::Synchronization, R::NvLink4, R::Device5, R::Context3, R::Overhead3, R::Memory3, R::MemoryPool2, R::UnifiedMemoryCounter2]),
            (24, [R::Kernel9, R::Memcpy5, R::Memset4Cuda12, R::Synchronization, R::NvLink4, R::Device5, R::Context3, R::Overhead3, R::Memory4, R::MemoryPool2, R::UnifiedMemoryCounter2]),
            (26, [R::Kernel9, R::Memcpy6Cuda12, R::Memset4Cuda12, R::Synchronization2, R::NvLink4, R::Device5, R::Context3, R::Overhead3, R::Memory4, R::MemoryPool2, R::UnifiedMemoryCounter3]),
            (28, [R::Kernel9, R::Memcpy6Cuda12, R::Memset4Cuda12, R::Synchronization2, R::NvLink4, R::Device5, R::Context3, R::Overhead3, R::Memory4, R::MemoryPool2, R::UnifiedMemoryCounter3]),
            (130_001, [R::Kernel10, R::Memcpy6, R::Memset4, R::Synchronization2, R::NvLink4, R::Device5, R::Context3, R::Overhead3, R::Memory4, R::MemoryPool3, R::UnifiedMemoryCounter3]),
            (130_101, [R::Kernel11, R::Memcpy6, R::Memset4, R::Synchronization2, R::NvLink4, R::Device5, R::Context4, R::Overhead3, R::Memory4, R::MemoryPool3, R::UnifiedMemoryCounter3]),
            (130_202, [R::Kernel11, R::Memcpy6, R::Memset4, R::Synchronization2, R::NvLink5, R::Device6, R::Context4, R::Overhead3, R::Memory4, R::MemoryPool3, R::UnifiedMemoryCounter3]),
            (130_301, [R::Kernel12, R::Memcpy6, R::Memset4, R::Synchronization2, R::NvLink5, R::Device6, R::Context4, R::Overhead3, R::Memory4, R::MemoryPool3, R::UnifiedMemoryCounter3]),
            (130_401, [R::Kernel13, R::Memcpy7, R::Memset5, R::Synchronization2, R::NvLink5, R::Device6, R::Context4, R::Overhead3, R::Memory4, R::MemoryPool3, R::UnifiedMemoryCounter3]),
            (130_500, [R::Kernel13, R::Memcpy7, R::Memset5, R::Synchronization2, R::NvLink5, R::Device6, R::Context4, R::Overhead3, R::Memory4, R::MemoryPool3, R::UnifiedMemoryCounter3]),
        ];
        let kinds = [
            c::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
            c::CUPTI_ACTIVITY_KIND_MEMCPY,
            c::CUPTI_ACTIVITY_KIND_MEMSET,
            c::CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
            c::CUPTI_ACTIVITY_KIND_NVLINK,
            c::CUPTI_ACTIVITY_KIND_DEVICE,
            c::CUPTI_ACTIVITY_KIND_CONTEXT,
            c::CUPTI_ACTIVITY_KIND_OVERHEAD,
            c::CUPTI_ACTIVITY_KIND_MEMORY2,
            c::CUPTI_ACTIVITY_KIND_MEMORY_POOL,
            c::CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER,
        ];
        for (api, expected) in table {
            let v = version(api);
            for (kind, want) in kinds.into_iter().zip(expected) {
                assert_eq!(v.record_struct(kind), Some(want), "API {api}, kind {kind}");
            }
            // The same in every release.
            for (kind, want) in [
                (c::CUPTI_ACTIVITY_KIND_KERNEL, v.record_struct(kinds[0]).unwrap()),
                (c::CUPTI_ACTIVITY_KIND_DRIVER, R::Api),
                (c::CUPTI_ACTIVITY_KIND_RUNTIME, R::Api),
                (c::CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API, R::Api),
                (c::CUPTI_ACTIVITY_KIND_MEMCPY2, R::MemcpyPtoP4),
                (c::CUPTI_ACTIVITY_KIND_STREAM, R::Stream),
                (c::CUPTI_ACTIVITY_KIND_MARKER, R::Marker2),
                (c::CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, R::ExternalCorrelation),
                (c::CUPTI_ACTIVITY_KIND_MEMORY, R::Memory),
                (c::CUPTI_ACTIVITY_KIND_NAME, R::Name),
            ] {
                assert_eq!(v.record_struct(kind), Some(want), "API {api}, kind {kind}");
            }
            assert_eq!(v.record_struct(c::CUPTI_ACTIVITY_KIND_PC_SAMPLING), None);
        }
    }

    #[test]
    fn cuda12_reads_only_v12_9_and_cuda13_never_the_12_x_definitions() {
        for api in [18, 24, 28, 130_001, 130_202, 130_500] {
            let v = version(api);
            for kind in 0..c::CUPTI_ACTIVITY_KIND_COUNT {
                if let Some(record) = v.record_struct(kind) {
                    // 12.x libraries read only from v12_9; 13.x libraries
                    // read 12.x-only definitions never.
                    match v.layout() {
                        Layout::V12_9 => assert_eq!(record.layout(), Layout::V12_9, "{record:?}"),
                        _ => assert!(
                            !matches!(record, RecordStruct::Memcpy6Cuda12 | RecordStruct::Memset4Cuda12),
                            "{record:?} for {v}"
                        ),
                    }
                }
            }
        }
    }

    #[test]
    fn record_table_names_modules_consistently() {
        for &record in RecordStruct::ALL {
            assert_eq!(record.module_written(), record.layout().module(), "{record:?}");
            assert!(record.c_name().starts_with("CUpti_Activity"));
            assert!(record.size() >= 8 && record.size() % 8 == 0, "{record:?}");
        }
        assert_eq!(RecordStruct::Kernel10.size(), 216);
        assert_eq!(RecordStruct::NvLink5.size(), 88);
        assert_eq!(RecordStruct::GraphTrace.size(), 48);
        assert_eq!(RecordStruct::GraphTrace2.size(), 56);
    }

    /// `GRAPH_TRACE`'s struct, as the `\ref` of the kind names it in the
    /// 12.1.105, 12.2.142 (`GraphTrace`), 12.3.101, 12.4.127, 12.9.79,
    /// 13.0.85 and 13.5.25 (`GraphTrace2`) headers.
    #[test]
    fn graph_trace_records_per_release() {
        let kind = c::CUPTI_ACTIVITY_KIND_GRAPH_TRACE;
        for (api, want) in [
            (18, RecordStruct::GraphTrace),
            (20, RecordStruct::GraphTrace),
            (21, RecordStruct::GraphTrace2),
            (22, RecordStruct::GraphTrace2),
            (28, RecordStruct::GraphTrace2),
            (130_001, RecordStruct::GraphTrace2),
            (130_500, RecordStruct::GraphTrace2),
        ] {
            assert_eq!(version(api).record_struct(kind), Some(want), "API {api}");
        }
    }
}
