//! A reading `OTF2_Reader`: the global definitions into [`GlobalDefs`],
//! each location's local definitions (clock offsets, mapping tables), and
//! the events of one location at a time.
//!
//! Local definitions are read for every location when the archive is
//! opened, because OTF2 needs a location's clock offsets and id mappings
//! before it reads that location's events; they are small. Events are
//! read by [`reader_events`](super::reader_events).

use std::ffi::c_void;
use std::path::Path;
use std::ptr::NonNull;

use otf2_sys as sys;

use super::reader_defs::GlobalDefCallbacks;
use super::{check, clear_reports, install_error_callback, null_error, path_cstring};
use crate::error::Result;
use crate::reader::GlobalDefs;
use crate::refs::LocationRef;
use crate::values::ClockOffset;

/// An open `OTF2_Reader`.
pub(crate) struct Reader {
    raw: NonNull<sys::OTF2_Reader>,
    evt_files_open: bool,
    /// Each calling context's region (its leaf), by context id: what a
    /// `CallingContextEnter` or `CallingContextLeave` enters or leaves.
    pub(crate) leaves: Vec<u32>,
}

impl Reader {
    /// Opens the anchor file; nothing else is read yet.
    pub(crate) fn open(anchor: &Path) -> Result<Self> {
        install_error_callback();
        let path = path_cstring(anchor)?;
        clear_reports();
        // SAFETY: NUL-terminated path, valid for the call.
        let raw = unsafe { sys::OTF2_Reader_Open(path.as_ptr()) };
        let raw = NonNull::new(raw).ok_or_else(|| null_error("OTF2_Reader_Open"))?;
        let reader = Self { raw, evt_files_open: false, leaves: Vec::new() };
        check(
            "OTF2_Reader_SetSerialCollectiveCallbacks",
            // SAFETY: live reader.
            unsafe { sys::OTF2_Reader_SetSerialCollectiveCallbacks(reader.ptr()) },
        )?;
        Ok(reader)
    }

    pub(crate) fn ptr(&self) -> *mut sys::OTF2_Reader {
        self.raw.as_ptr()
    }

    /// Number of locations the anchor file announces.
    pub(crate) fn number_of_locations(&mut self) -> Result<u64> {
        let mut count = 0;
        check(
            "OTF2_Reader_GetNumberOfLocations",
            // SAFETY: live reader; `count` is a live local.
            unsafe { sys::OTF2_Reader_GetNumberOfLocations(self.ptr(), &mut count) },
        )?;
        Ok(count)
    }

    /// Number of global definitions the anchor file announces.
    pub(crate) fn number_of_global_definitions(&mut self) -> Result<u64> {
        let mut count = 0;
        check(
            "OTF2_Reader_GetNumberOfGlobalDefinitions",
            // SAFETY: live reader; `count` is a live local.
            unsafe { sys::OTF2_Reader_GetNumberOfGlobalDefinitions(self.ptr(), &mut count) },
        )?;
        Ok(count)
    }

    /// The size of the event files' chunks, when they are plain files of
    /// chunks (the POSIX substrate, uncompressed), the only layout
    /// [`chunks`](crate::reader::chunks) can check; `None` otherwise.
    pub(crate) fn plain_event_chunk_size(&mut self) -> Result<Option<u64>> {
        let (mut substrate, mut compression) = (0, 0);
        let (mut events, mut defs) = (0, 0);
        check(
            "OTF2_Reader_GetFileSubstrate",
            // SAFETY: live reader; `substrate` is a live local.
            unsafe { sys::OTF2_Reader_GetFileSubstrate(self.ptr(), &mut substrate) },
        )?;
        check(
            "OTF2_Reader_GetCompression",
            // SAFETY: live reader; `compression` is a live local.
            unsafe { sys::OTF2_Reader_GetCompression(self.ptr(), &mut compression) },
        )?;
        check(
            "OTF2_Reader_GetChunkSize",
            // SAFETY: live reader; both are live locals.
            unsafe { sys::OTF2_Reader_GetChunkSize(self.ptr(), &mut events, &mut defs) },
        )?;
        let plain = u32::from(substrate) == sys::OTF2_SUBSTRATE_POSIX
            && u32::from(compression) == sys::OTF2_COMPRESSION_NONE
            && events > 0;
        Ok(plain.then_some(events))
    }

    /// Reads every global definition into `defs`; returns how many.
    pub(crate) fn read_global_defs(&mut self, defs: &mut GlobalDefs) -> Result<u64> {
        let callbacks = GlobalDefCallbacks::new()?;
        clear_reports();
        // SAFETY: live reader.
        let def_reader = unsafe { sys::OTF2_Reader_GetGlobalDefReader(self.ptr()) };
        if def_reader.is_null() {
            return Err(null_error("OTF2_Reader_GetGlobalDefReader"));
        }
        let mut read = 0;
        let registered = check(
            "OTF2_Reader_RegisterGlobalDefCallbacks",
            // SAFETY: live reader and def reader; `defs` outlives the read
            // below, the only time OTF2 uses the pointer.
            unsafe {
                sys::OTF2_Reader_RegisterGlobalDefCallbacks(
                    self.ptr(),
                    def_reader,
                    callbacks.as_ptr(),
                    (defs as *mut GlobalDefs).cast(),
                )
            },
        );
        let result = registered.and_then(|()| {
            check(
                "OTF2_Reader_ReadAllGlobalDefinitions",
                // SAFETY: as above; `read` is a live local.
                unsafe { sys::OTF2_Reader_ReadAllGlobalDefinitions(self.ptr(), def_reader, &mut read) },
            )
        });
        // SAFETY: the def reader came from this reader; closed once.
        let closed = check("OTF2_Reader_CloseGlobalDefReader", unsafe {
            sys::OTF2_Reader_CloseGlobalDefReader(self.ptr(), def_reader)
        });
        result.and(closed).map(|()| read)
    }

    /// Selects every location, reads each one's local definitions (clock
    /// offsets into `defs`), and opens the event files.
    pub(crate) fn prepare_locations(&mut self, defs: &mut GlobalDefs) -> Result<()> {
        let locations: Vec<LocationRef> = defs.locations.keys().copied().collect();
        for location in &locations {
            check(
                "OTF2_Reader_SelectLocation",
                // SAFETY: live reader.
                unsafe { sys::OTF2_Reader_SelectLocation(self.ptr(), location.0) },
            )?;
        }
        check(
            "OTF2_Reader_OpenDefFiles",
            // SAFETY: live reader.
            unsafe { sys::OTF2_Reader_OpenDefFiles(self.ptr()) },
        )?;
        let callbacks = LocalDefCallbacks::new()?;
        for &location in &locations {
            let mut sink = LocalDefSink { location, defs: &mut *defs };
            match self.read_local_defs(location, &callbacks, &mut sink) {
                // Some writers create no local definition file for a
                // location without local definitions; OTF2's tools accept
                // that, and so does this reader.
                Err(err) if err.otf2_code() == Some(sys::OTF2_ERROR_ENOENT) => {}
                other => other?,
            }
        }
        check(
            "OTF2_Reader_CloseDefFiles",
            // SAFETY: live reader; its def readers are closed.
            unsafe { sys::OTF2_Reader_CloseDefFiles(self.ptr()) },
        )?;
        check(
            "OTF2_Reader_OpenEvtFiles",
            // SAFETY: live reader.
            unsafe { sys::OTF2_Reader_OpenEvtFiles(self.ptr()) },
        )?;
        self.evt_files_open = true;
        Ok(())
    }

    fn read_local_defs(
        &mut self,
        location: LocationRef,
        callbacks: &LocalDefCallbacks,
        sink: &mut LocalDefSink<'_>,
    ) -> Result<()> {
        clear_reports();
        // SAFETY: live reader with definition files open.
        let def_reader = unsafe { sys::OTF2_Reader_GetDefReader(self.ptr(), location.0) };
        if def_reader.is_null() {
            return Err(null_error("OTF2_Reader_GetDefReader"));
        }
        let mut read = 0;
        let result = check(
            "OTF2_Reader_RegisterDefCallbacks",
            // SAFETY: live readers; `sink` outlives the read below.
            unsafe {
                sys::OTF2_Reader_RegisterDefCallbacks(
                    self.ptr(),
                    def_reader,
                    callbacks.raw.as_ptr(),
                    (sink as *mut LocalDefSink<'_>).cast(),
                )
            },
        )
        .and_then(|()| {
            check(
                "OTF2_Reader_ReadAllLocalDefinitions",
                // SAFETY: as above; `read` is a live local.
                unsafe { sys::OTF2_Reader_ReadAllLocalDefinitions(self.ptr(), def_reader, &mut read) },
            )
        });
        // SAFETY: the def reader came from this reader; closed once.
        let closed =
            check("OTF2_Reader_CloseDefReader", unsafe { sys::OTF2_Reader_CloseDefReader(self.ptr(), def_reader) });
        result.and(closed)
    }

    pub(crate) fn evt_files_open(&self) -> bool {
        self.evt_files_open
    }
}

// SAFETY: as for the writing archive: no thread affinity, serial use
// through `&mut self`.
unsafe impl Send for Reader {}

impl Drop for Reader {
    fn drop(&mut self) {
        // SAFETY: the reader is live and closed once; OTF2_Reader_Close
        // also closes any file or sub-reader still open.
        unsafe {
            sys::OTF2_Reader_Close(self.ptr());
        }
    }
}

/// Where local definition callbacks put what they read.
struct LocalDefSink<'a> {
    location: LocationRef,
    defs: &'a mut GlobalDefs,
}

/// Owned `OTF2_DefReaderCallbacks`: only clock offsets are of interest;
/// OTF2 applies mapping tables itself.
struct LocalDefCallbacks {
    raw: NonNull<sys::OTF2_DefReaderCallbacks>,
}

impl LocalDefCallbacks {
    fn new() -> Result<Self> {
        // SAFETY: no arguments; returns an owned object or null.
        let raw = unsafe { sys::OTF2_DefReaderCallbacks_New() };
        let raw = NonNull::new(raw).ok_or_else(|| null_error("OTF2_DefReaderCallbacks_New"))?;
        let this = Self { raw };
        check(
            "OTF2_DefReaderCallbacks_SetClockOffsetCallback",
            // SAFETY: live callbacks object; matching trampoline.
            unsafe { sys::OTF2_DefReaderCallbacks_SetClockOffsetCallback(this.raw.as_ptr(), Some(on_clock_offset)) },
        )?;
        Ok(this)
    }
}

impl Drop for LocalDefCallbacks {
    fn drop(&mut self) {
        // SAFETY: we own the object; OTF2 copied it when it was registered.
        unsafe { sys::OTF2_DefReaderCallbacks_Delete(self.raw.as_ptr()) }
    }
}

unsafe extern "C" fn on_clock_offset(
    u: *mut c_void,
    time: sys::OTF2_TimeStamp,
    offset: i64,
    standard_deviation: f64,
) -> sys::OTF2_CallbackCode {
    // SAFETY: `u` is the LocalDefSink registered in read_local_defs, alive
    // and otherwise unused during the read.
    let sink = unsafe { &mut *u.cast::<LocalDefSink<'_>>() };
    sink.defs.clock_offsets.entry(sink.location).or_default().push(ClockOffset { time, offset, standard_deviation });
    sys::OTF2_CALLBACK_SUCCESS
}
