//! Typed versions of OTF2's enumerations and flag sets.
//!
//! OTF2 declares them as `uint8_t`/`uint32_t` typedefs plus constants. Here
//! each is a Rust enum whose `Raw(value)` variant keeps values this crate
//! does not name (a newer OTF2, a tool's private paradigm), so the reader
//! never loses information and a writer can still pass such a value.
//! `from_raw` maps a known value to its named variant.

use otf2_sys as sys;

macro_rules! otf2_enum {
    (
        $(#[$meta:meta])*
        $name:ident: $raw:ty {
            $($(#[$vmeta:meta])* $variant:ident = $value:ident,)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum $name {
            $($(#[$vmeta])* #[doc = concat!("`", stringify!($value), "`")] $variant,)*
            /// A value without a name in this crate.
            Raw($raw),
        }

        impl $name {
            /// The OTF2 value.
            pub const fn to_raw(self) -> $raw {
                match self {
                    $(Self::$variant => sys::$value as $raw,)*
                    Self::Raw(raw) => raw,
                }
            }

            /// The variant for an OTF2 value; unknown values become `Raw`.
            pub const fn from_raw(raw: $raw) -> Self {
                $(if raw == sys::$value as $raw {
                    return Self::$variant;
                })*
                Self::Raw(raw)
            }
        }
    };
}

otf2_enum! {
    /// The type of an attribute, property or metric value (`OTF2_Type`).
    Type: u8 {
        None = OTF2_TYPE_NONE,
        U8 = OTF2_TYPE_UINT8,
        U16 = OTF2_TYPE_UINT16,
        U32 = OTF2_TYPE_UINT32,
        U64 = OTF2_TYPE_UINT64,
        I8 = OTF2_TYPE_INT8,
        I16 = OTF2_TYPE_INT16,
        I32 = OTF2_TYPE_INT32,
        I64 = OTF2_TYPE_INT64,
        F32 = OTF2_TYPE_FLOAT,
        F64 = OTF2_TYPE_DOUBLE,
        String = OTF2_TYPE_STRING,
        Attribute = OTF2_TYPE_ATTRIBUTE,
        Location = OTF2_TYPE_LOCATION,
        Region = OTF2_TYPE_REGION,
        Group = OTF2_TYPE_GROUP,
        Metric = OTF2_TYPE_METRIC,
        Comm = OTF2_TYPE_COMM,
        Parameter = OTF2_TYPE_PARAMETER,
        RmaWin = OTF2_TYPE_RMA_WIN,
        SourceCodeLocation = OTF2_TYPE_SOURCE_CODE_LOCATION,
        CallingContext = OTF2_TYPE_CALLING_CONTEXT,
        InterruptGenerator = OTF2_TYPE_INTERRUPT_GENERATOR,
        IoFile = OTF2_TYPE_IO_FILE,
        IoHandle = OTF2_TYPE_IO_HANDLE,
        LocationGroup = OTF2_TYPE_LOCATION_GROUP,
    }
}

otf2_enum! {
    /// The programming model a region, group or event belongs to (`OTF2_Paradigm`).
    Paradigm: u8 {
        Unknown = OTF2_PARADIGM_UNKNOWN,
        User = OTF2_PARADIGM_USER,
        Compiler = OTF2_PARADIGM_COMPILER,
        OpenMp = OTF2_PARADIGM_OPENMP,
        Mpi = OTF2_PARADIGM_MPI,
        Cuda = OTF2_PARADIGM_CUDA,
        MeasurementSystem = OTF2_PARADIGM_MEASUREMENT_SYSTEM,
        Pthread = OTF2_PARADIGM_PTHREAD,
        Hmpp = OTF2_PARADIGM_HMPP,
        Ompss = OTF2_PARADIGM_OMPSS,
        Hardware = OTF2_PARADIGM_HARDWARE,
        Gaspi = OTF2_PARADIGM_GASPI,
        Upc = OTF2_PARADIGM_UPC,
        Shmem = OTF2_PARADIGM_SHMEM,
        WinThread = OTF2_PARADIGM_WINTHREAD,
        QtThread = OTF2_PARADIGM_QTTHREAD,
        AceThread = OTF2_PARADIGM_ACETHREAD,
        TbbThread = OTF2_PARADIGM_TBBTHREAD,
        OpenAcc = OTF2_PARADIGM_OPENACC,
        OpenCl = OTF2_PARADIGM_OPENCL,
        Mtapi = OTF2_PARADIGM_MTAPI,
        Sampling = OTF2_PARADIGM_SAMPLING,
        None = OTF2_PARADIGM_NONE,
        Hip = OTF2_PARADIGM_HIP,
        Kokkos = OTF2_PARADIGM_KOKKOS,
    }
}

otf2_enum! {
    /// How a paradigm parallelizes (`OTF2_ParadigmClass`).
    ParadigmClass: u8 {
        Process = OTF2_PARADIGM_CLASS_PROCESS,
        ThreadForkJoin = OTF2_PARADIGM_CLASS_THREAD_FORK_JOIN,
        ThreadCreateWait = OTF2_PARADIGM_CLASS_THREAD_CREATE_WAIT,
        Accelerator = OTF2_PARADIGM_CLASS_ACCELERATOR,
    }
}

otf2_enum! {
    /// A property of a paradigm (`OTF2_ParadigmProperty`).
    ParadigmProperty: u8 {
        CommNameTemplate = OTF2_PARADIGM_PROPERTY_COMM_NAME_TEMPLATE,
        RmaWinNameTemplate = OTF2_PARADIGM_PROPERTY_RMA_WIN_NAME_TEMPLATE,
        RmaOnly = OTF2_PARADIGM_PROPERTY_RMA_ONLY,
    }
}

otf2_enum! {
    /// What a region is (`OTF2_RegionRole`).
    RegionRole: u8 {
        Unknown = OTF2_REGION_ROLE_UNKNOWN,
        Function = OTF2_REGION_ROLE_FUNCTION,
        Wrapper = OTF2_REGION_ROLE_WRAPPER,
        Loop = OTF2_REGION_ROLE_LOOP,
        Code = OTF2_REGION_ROLE_CODE,
        Parallel = OTF2_REGION_ROLE_PARALLEL,
        Sections = OTF2_REGION_ROLE_SECTIONS,
        Section = OTF2_REGION_ROLE_SECTION,
        Workshare = OTF2_REGION_ROLE_WORKSHARE,
        Single = OTF2_REGION_ROLE_SINGLE,
        SingleSblock = OTF2_REGION_ROLE_SINGLE_SBLOCK,
        Master = OTF2_REGION_ROLE_MASTER,
        Critical = OTF2_REGION_ROLE_CRITICAL,
        CriticalSblock = OTF2_REGION_ROLE_CRITICAL_SBLOCK,
        Atomic = OTF2_REGION_ROLE_ATOMIC,
        Barrier = OTF2_REGION_ROLE_BARRIER,
        ImplicitBarrier = OTF2_REGION_ROLE_IMPLICIT_BARRIER,
        Flush = OTF2_REGION_ROLE_FLUSH,
        Ordered = OTF2_REGION_ROLE_ORDERED,
        OrderedSblock = OTF2_REGION_ROLE_ORDERED_SBLOCK,
        Task = OTF2_REGION_ROLE_TASK,
        TaskCreate = OTF2_REGION_ROLE_TASK_CREATE,
        TaskWait = OTF2_REGION_ROLE_TASK_WAIT,
        CollOne2All = OTF2_REGION_ROLE_COLL_ONE2ALL,
        CollAll2One = OTF2_REGION_ROLE_COLL_ALL2ONE,
        CollAll2All = OTF2_REGION_ROLE_COLL_ALL2ALL,
        CollOther = OTF2_REGION_ROLE_COLL_OTHER,
        FileIo = OTF2_REGION_ROLE_FILE_IO,
        Point2Point = OTF2_REGION_ROLE_POINT2POINT,
        Rma = OTF2_REGION_ROLE_RMA,
        DataTransfer = OTF2_REGION_ROLE_DATA_TRANSFER,
        Artificial = OTF2_REGION_ROLE_ARTIFICIAL,
        ThreadCreate = OTF2_REGION_ROLE_THREAD_CREATE,
        ThreadWait = OTF2_REGION_ROLE_THREAD_WAIT,
        TaskUntied = OTF2_REGION_ROLE_TASK_UNTIED,
        Allocate = OTF2_REGION_ROLE_ALLOCATE,
        Deallocate = OTF2_REGION_ROLE_DEALLOCATE,
        Reallocate = OTF2_REGION_ROLE_REALLOCATE,
        FileIoMetadata = OTF2_REGION_ROLE_FILE_IO_METADATA,
    }
}

otf2_enum! {
    /// The hardware domain a system tree node stands for (`OTF2_SystemTreeDomain`).
    SystemTreeDomain: u8 {
        Machine = OTF2_SYSTEM_TREE_DOMAIN_MACHINE,
        SharedMemory = OTF2_SYSTEM_TREE_DOMAIN_SHARED_MEMORY,
        Numa = OTF2_SYSTEM_TREE_DOMAIN_NUMA,
        Socket = OTF2_SYSTEM_TREE_DOMAIN_SOCKET,
        Cache = OTF2_SYSTEM_TREE_DOMAIN_CACHE,
        Core = OTF2_SYSTEM_TREE_DOMAIN_CORE,
        Pu = OTF2_SYSTEM_TREE_DOMAIN_PU,
        AcceleratorDevice = OTF2_SYSTEM_TREE_DOMAIN_ACCELERATOR_DEVICE,
        NetworkingDevice = OTF2_SYSTEM_TREE_DOMAIN_NETWORKING_DEVICE,
    }
}

otf2_enum! {
    /// What a location group is (`OTF2_LocationGroupType`).
    LocationGroupType: u8 {
        Unknown = OTF2_LOCATION_GROUP_TYPE_UNKNOWN,
        Process = OTF2_LOCATION_GROUP_TYPE_PROCESS,
        Accelerator = OTF2_LOCATION_GROUP_TYPE_ACCELERATOR,
    }
}

otf2_enum! {
    /// What a location is (`OTF2_LocationType`).
    LocationType: u8 {
        Unknown = OTF2_LOCATION_TYPE_UNKNOWN,
        CpuThread = OTF2_LOCATION_TYPE_CPU_THREAD,
        AcceleratorStream = OTF2_LOCATION_TYPE_ACCELERATOR_STREAM,
        Metric = OTF2_LOCATION_TYPE_METRIC,
    }
}

otf2_enum! {
    /// What the members of a group are (`OTF2_GroupType`).
    GroupType: u8 {
        Unknown = OTF2_GROUP_TYPE_UNKNOWN,
        /// Members are location ids.
        Locations = OTF2_GROUP_TYPE_LOCATIONS,
        /// Members are region ids.
        Regions = OTF2_GROUP_TYPE_REGIONS,
        /// Members are metric ids.
        Metric = OTF2_GROUP_TYPE_METRIC,
        /// Members are the location ids of a paradigm's ranks, in rank
        /// order: rank `i` of the paradigm is member `i`. One per paradigm.
        CommLocations = OTF2_GROUP_TYPE_COMM_LOCATIONS,
        /// Members are ranks (indices into the paradigm's `CommLocations`
        /// group); a communicator refers to one.
        CommGroup = OTF2_GROUP_TYPE_COMM_GROUP,
        /// The group of a self-communicator; has no members.
        CommSelf = OTF2_GROUP_TYPE_COMM_SELF,
    }
}

otf2_enum! {
    /// Where a metric comes from (`OTF2_MetricType`).
    MetricType: u8 {
        Other = OTF2_METRIC_TYPE_OTHER,
        Papi = OTF2_METRIC_TYPE_PAPI,
        Rusage = OTF2_METRIC_TYPE_RUSAGE,
        User = OTF2_METRIC_TYPE_USER,
    }
}

otf2_enum! {
    /// What a metric value means and which interval it covers (`OTF2_MetricMode`).
    MetricMode: u8 {
        AccumulatedStart = OTF2_METRIC_ACCUMULATED_START,
        AccumulatedPoint = OTF2_METRIC_ACCUMULATED_POINT,
        AccumulatedLast = OTF2_METRIC_ACCUMULATED_LAST,
        AccumulatedNext = OTF2_METRIC_ACCUMULATED_NEXT,
        AbsolutePoint = OTF2_METRIC_ABSOLUTE_POINT,
        AbsoluteLast = OTF2_METRIC_ABSOLUTE_LAST,
        AbsoluteNext = OTF2_METRIC_ABSOLUTE_NEXT,
        RelativePoint = OTF2_METRIC_RELATIVE_POINT,
        RelativeLast = OTF2_METRIC_RELATIVE_LAST,
        RelativeNext = OTF2_METRIC_RELATIVE_NEXT,
    }
}

otf2_enum! {
    /// The base of a metric's unit prefix (`OTF2_Base`).
    Base: u8 {
        Binary = OTF2_BASE_BINARY,
        Decimal = OTF2_BASE_DECIMAL,
    }
}

otf2_enum! {
    /// When a metric class is recorded (`OTF2_MetricOccurrence`).
    MetricOccurrence: u8 {
        SynchronousStrict = OTF2_METRIC_SYNCHRONOUS_STRICT,
        Synchronous = OTF2_METRIC_SYNCHRONOUS,
        Asynchronous = OTF2_METRIC_ASYNCHRONOUS,
    }
}

otf2_enum! {
    /// Which kind of location records a metric class (`OTF2_RecorderKind`).
    RecorderKind: u8 {
        Unknown = OTF2_RECORDER_KIND_UNKNOWN,
        Abstract = OTF2_RECORDER_KIND_ABSTRACT,
        Cpu = OTF2_RECORDER_KIND_CPU,
        Gpu = OTF2_RECORDER_KIND_GPU,
    }
}

otf2_enum! {
    /// The operation of a collective (`OTF2_CollectiveOp`).
    CollectiveOp: u8 {
        Barrier = OTF2_COLLECTIVE_OP_BARRIER,
        Bcast = OTF2_COLLECTIVE_OP_BCAST,
        Gather = OTF2_COLLECTIVE_OP_GATHER,
        Gatherv = OTF2_COLLECTIVE_OP_GATHERV,
        Scatter = OTF2_COLLECTIVE_OP_SCATTER,
        Scatterv = OTF2_COLLECTIVE_OP_SCATTERV,
        Allgather = OTF2_COLLECTIVE_OP_ALLGATHER,
        Allgatherv = OTF2_COLLECTIVE_OP_ALLGATHERV,
        Alltoall = OTF2_COLLECTIVE_OP_ALLTOALL,
        Alltoallv = OTF2_COLLECTIVE_OP_ALLTOALLV,
        Alltoallw = OTF2_COLLECTIVE_OP_ALLTOALLW,
        Allreduce = OTF2_COLLECTIVE_OP_ALLREDUCE,
        Reduce = OTF2_COLLECTIVE_OP_REDUCE,
        ReduceScatter = OTF2_COLLECTIVE_OP_REDUCE_SCATTER,
        Scan = OTF2_COLLECTIVE_OP_SCAN,
        Exscan = OTF2_COLLECTIVE_OP_EXSCAN,
        ReduceScatterBlock = OTF2_COLLECTIVE_OP_REDUCE_SCATTER_BLOCK,
        CreateHandle = OTF2_COLLECTIVE_OP_CREATE_HANDLE,
        DestroyHandle = OTF2_COLLECTIVE_OP_DESTROY_HANDLE,
        Allocate = OTF2_COLLECTIVE_OP_ALLOCATE,
        Deallocate = OTF2_COLLECTIVE_OP_DEALLOCATE,
        CreateHandleAndAllocate = OTF2_COLLECTIVE_OP_CREATE_HANDLE_AND_ALLOCATE,
        DestroyHandleAndDeallocate = OTF2_COLLECTIVE_OP_DESTROY_HANDLE_AND_DEALLOCATE,
    }
}

macro_rules! otf2_flags {
    (
        $(#[$meta:meta])*
        $name:ident: $raw:ty {
            $($(#[$cmeta:meta])* $flag:ident = $value:ident,)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        pub struct $name($raw);

        impl $name {
            $($(#[$cmeta])* #[doc = concat!("`", stringify!($value), "`")]
            pub const $flag: Self = Self(sys::$value as $raw);)*

            /// The flag set with these raw OTF2 bits (unknown bits are kept).
            pub const fn from_raw(raw: $raw) -> Self {
                Self(raw)
            }

            /// The raw OTF2 bits.
            pub const fn to_raw(self) -> $raw {
                self.0
            }

            /// Whether every flag of `other` is set in `self`.
            pub const fn contains(self, other: Self) -> bool {
                self.0 & other.0 == other.0
            }
        }

        impl std::ops::BitOr for $name {
            type Output = Self;
            fn bitor(self, rhs: Self) -> Self {
                Self(self.0 | rhs.0)
            }
        }
    };
}

otf2_flags! {
    /// Flags of a region definition (`OTF2_RegionFlag`).
    RegionFlags: u32 {
        NONE = OTF2_REGION_FLAG_NONE,
        DYNAMIC = OTF2_REGION_FLAG_DYNAMIC,
        PHASE = OTF2_REGION_FLAG_PHASE,
    }
}

otf2_flags! {
    /// Flags of a group definition (`OTF2_GroupFlag`).
    GroupFlags: u32 {
        NONE = OTF2_GROUP_FLAG_NONE,
        GLOBAL_MEMBERS = OTF2_GROUP_FLAG_GLOBAL_MEMBERS,
    }
}

otf2_flags! {
    /// Flags of a communicator definition (`OTF2_CommFlag`).
    CommFlags: u32 {
        NONE = OTF2_COMM_FLAG_NONE,
        CREATE_DESTROY_EVENTS = OTF2_COMM_FLAG_CREATE_DESTROY_EVENTS,
    }
}

otf2_flags! {
    /// Flags of an RMA window definition (`OTF2_RmaWinFlag`).
    RmaWinFlags: u32 {
        NONE = OTF2_RMA_WIN_FLAG_NONE,
        CREATE_DESTROY_EVENTS = OTF2_RMA_WIN_FLAG_CREATE_DESTROY_EVENTS,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_values_round_trip() {
        assert_eq!(Paradigm::Mpi.to_raw(), 4);
        assert_eq!(Paradigm::from_raw(5), Paradigm::Cuda);
        assert_eq!(Paradigm::from_raw(200), Paradigm::Raw(200));
        assert_eq!(Paradigm::Raw(200).to_raw(), 200);
        assert_eq!(MetricMode::AbsolutePoint.to_raw(), 0x11);
        assert_eq!(Type::F64.to_raw(), 10);
        for raw in 0..=u8::MAX {
            assert_eq!(RegionRole::from_raw(raw).to_raw(), raw);
            assert_eq!(CollectiveOp::from_raw(raw).to_raw(), raw);
        }
    }

    #[test]
    fn flags_combine() {
        let flags = RegionFlags::DYNAMIC | RegionFlags::PHASE;
        assert_eq!(flags.to_raw(), 3);
        assert!(flags.contains(RegionFlags::PHASE));
        assert!(!RegionFlags::NONE.contains(RegionFlags::DYNAMIC));
    }
}
