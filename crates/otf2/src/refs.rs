//! Handles to definitions: small `Copy` values standing for OTF2 ids.
//!
//! The [`Definitions`](crate::Definitions) builder hands them out, event
//! writers take them, and the reader returns them; so a caller can keep them
//! in its own tables as cheaply as integers, and the type system keeps a
//! region id from being passed where a communicator is meant.
//!
//! A handle is only meaningful for the archive that defined it. `from_id`
//! exists for ids that come from elsewhere (the reader of another archive,
//! a raw stream); nothing checks that such an id is defined.

macro_rules! handle {
    ($(#[$meta:meta])* $name:ident($raw:ty)) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub(crate) $raw);

        impl $name {
            /// The handle for a raw OTF2 id.
            pub const fn from_id(id: $raw) -> Self {
                Self(id)
            }

            /// The raw OTF2 id.
            pub const fn id(self) -> $raw {
                self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Display::fmt(&self.0, f)
            }
        }
    };
}

handle!(
    /// An interned string (`OTF2_StringRef`).
    StringRef(u32)
);
handle!(
    /// An attribute definition (`OTF2_AttributeRef`).
    AttributeRef(u32)
);
handle!(
    /// A node of the system tree: machine, host, device (`OTF2_SystemTreeNodeRef`).
    SystemTreeNodeRef(u32)
);
handle!(
    /// A location group: a process or an accelerator context (`OTF2_LocationGroupRef`).
    LocationGroupRef(u32)
);
handle!(
    /// A location: a thread, a GPU stream, a metric recorder
    /// (`OTF2_LocationRef`). Its id is chosen by the caller.
    LocationRef(u64)
);
handle!(
    /// A code region: function, API call, kernel (`OTF2_RegionRef`).
    RegionRef(u32)
);
handle!(
    /// A group of locations, ranks, regions or metrics (`OTF2_GroupRef`).
    GroupRef(u32)
);
handle!(
    /// A communicator (`OTF2_CommRef`).
    CommRef(u32)
);
handle!(
    /// An RMA window (`OTF2_RmaWinRef`).
    RmaWinRef(u32)
);
handle!(
    /// A file and line (`OTF2_SourceCodeLocationRef`).
    SourceCodeLocationRef(u32)
);
handle!(
    /// A node of the tree of call paths: a region, where in it, and its
    /// caller's context (`OTF2_CallingContextRef`).
    CallingContextRef(u32)
);
handle!(
    /// What interrupts the program to take samples: a timer of a period
    /// (`OTF2_InterruptGeneratorRef`).
    InterruptGeneratorRef(u32)
);
handle!(
    /// A member (one counter) of a metric class (`OTF2_MetricMemberRef`).
    MetricMemberRef(u32)
);
handle!(
    /// A metric class or metric instance; OTF2 gives both one id space
    /// (`OTF2_MetricRef`).
    MetricRef(u32)
);
