//! A writing `OTF2_Archive`: opened for post-mortem, serial writing, with
//! its local definition files written at close.
//!
//! The setup: POSIX files, no compression, OTF2's default chunk sizes
//! (1 MiB events, 4 MiB definitions), serial collective callbacks (one
//! process writes every location), bounded chunk memory (see
//! [`memory`](super::memory)), and a pre-flush callback that always
//! flushes, so a full buffer goes to disk instead of failing.
//!
//! No post-flush callback is registered. With one, OTF2 inserts a
//! `BufferFlush` event into the location whose buffer it flushed, which
//! Vampir draws as the program pausing to write its trace; here the flush
//! happens long after the program ended and cost it nothing, so such an
//! event would be false. (OTF2 documents a null post-flush callback as the
//! way to suppress the record.)

use std::ffi::{CStr, c_void};
use std::marker::PhantomData;
use std::path::Path;
use std::ptr::{self, NonNull};

use otf2_sys as sys;

use super::global_defs::GlobalDefWriter;
use super::memory::MEMORY_CALLBACKS;
use super::{check, clear_reports, install_error_callback, null_error, path_cstring};
use crate::error::Result;
use crate::refs::LocationRef;
use crate::values::ClockOffset;

unsafe extern "C" fn pre_flush(
    _user_data: *mut c_void,
    _file_type: sys::OTF2_FileType,
    _location: sys::OTF2_LocationRef,
    _caller_data: *mut c_void,
    _final: bool,
) -> sys::OTF2_FlushType {
    sys::OTF2_FLUSH as sys::OTF2_FlushType
}

static FLUSH_CALLBACKS: sys::OTF2_FlushCallbacks =
    sys::OTF2_FlushCallbacks { otf2_pre_flush: Some(pre_flush), otf2_post_flush: None };

/// An archive opened for writing. Closed (finalized) by [`Archive::close`]
/// or, failing that, on drop.
pub(crate) struct Archive {
    raw: NonNull<sys::OTF2_Archive>,
    closed: bool,
    /// Written by several processes together: closing is collective, so
    /// an archive dropped unclosed (its process is about to abort the job)
    /// is left as it is instead of waiting for the others.
    collective: bool,
}

impl Archive {
    /// Opens `dir/name.otf2` for writing and prepares the event files.
    pub(crate) fn create(dir: &Path, name: &CStr) -> Result<Self> {
        Self::create_with(dir, name, None)
    }

    /// [`create`](Self::create), for one of the processes that write the
    /// archive together through `comm` when it is given.
    pub(crate) fn create_with(
        dir: &Path,
        name: &CStr,
        comm: Option<std::sync::Arc<dyn crate::Collectives>>,
    ) -> Result<Self> {
        install_error_callback();
        let dir = path_cstring(dir)?;
        clear_reports();
        // SAFETY: both strings are NUL-terminated and outlive the call;
        // the enum arguments are valid OTF2 values.
        let raw = unsafe {
            sys::OTF2_Archive_Open(
                dir.as_ptr(),
                name.as_ptr(),
                sys::OTF2_FILEMODE_WRITE as sys::OTF2_FileMode,
                sys::OTF2_CHUNK_SIZE_EVENTS_DEFAULT,
                sys::OTF2_CHUNK_SIZE_DEFINITIONS_DEFAULT,
                sys::OTF2_SUBSTRATE_POSIX as sys::OTF2_FileSubstrate,
                sys::OTF2_COMPRESSION_NONE as sys::OTF2_Compression,
            )
        };
        let raw = NonNull::new(raw).ok_or_else(|| null_error("OTF2_Archive_Open"))?;
        // From here on, Drop closes the archive if a step fails.
        let mut archive = Self { raw, closed: false, collective: false };
        check(
            "OTF2_Archive_SetFlushCallbacks",
            // SAFETY: live archive; the callbacks are a static and ignore
            // their user data.
            unsafe { sys::OTF2_Archive_SetFlushCallbacks(archive.ptr(), &FLUSH_CALLBACKS, ptr::null_mut()) },
        )?;
        check(
            "OTF2_Archive_SetMemoryCallbacks",
            // SAFETY: live archive; the callbacks are a static and keep
            // their state in OTF2's per-buffer slot, not the user data.
            unsafe { sys::OTF2_Archive_SetMemoryCallbacks(archive.ptr(), &MEMORY_CALLBACKS, ptr::null_mut()) },
        )?;
        check(
            "OTF2_Archive_SetLockingCallbacks",
            // SAFETY: live archive; a null attribute gives default mutexes,
            // and the callbacks' user data is released by OTF2 at close.
            unsafe { sys::pthread_locks::OTF2_Pthread_Archive_SetLockingCallbacks(archive.ptr(), ptr::null()) },
        )?;
        match comm {
            None => check(
                "OTF2_Archive_SetSerialCollectiveCallbacks",
                // SAFETY: live archive.
                unsafe { sys::OTF2_Archive_SetSerialCollectiveCallbacks(archive.ptr()) },
            )?,
            Some(comm) => {
                check(
                    "OTF2_Archive_SetCollectiveCallbacks",
                    // SAFETY: live archive without collective callbacks.
                    unsafe { super::collectives::register(archive.ptr(), comm) },
                )?;
                archive.collective = true;
            }
        }
        check(
            "OTF2_Archive_OpenEvtFiles",
            // SAFETY: live archive with collective callbacks set.
            unsafe { sys::OTF2_Archive_OpenEvtFiles(archive.ptr()) },
        )?;
        Ok(archive)
    }

    pub(crate) fn ptr(&self) -> *mut sys::OTF2_Archive {
        self.raw.as_ptr()
    }

    pub(crate) fn set_creator(&mut self, creator: &CStr) -> Result<()> {
        check(
            "OTF2_Archive_SetCreator",
            // SAFETY: live archive; OTF2 copies the string.
            unsafe { sys::OTF2_Archive_SetCreator(self.ptr(), creator.as_ptr()) },
        )
    }

    pub(crate) fn set_description(&mut self, description: &CStr) -> Result<()> {
        check(
            "OTF2_Archive_SetDescription",
            // SAFETY: live archive; OTF2 copies the string.
            unsafe { sys::OTF2_Archive_SetDescription(self.ptr(), description.as_ptr()) },
        )
    }

    pub(crate) fn set_machine_name(&mut self, machine: &CStr) -> Result<()> {
        check(
            "OTF2_Archive_SetMachineName",
            // SAFETY: live archive; OTF2 copies the string.
            unsafe { sys::OTF2_Archive_SetMachineName(self.ptr(), machine.as_ptr()) },
        )
    }

    pub(crate) fn set_property(&mut self, name: &CStr, value: &CStr) -> Result<()> {
        check(
            "OTF2_Archive_SetProperty",
            // SAFETY: live archive; OTF2 copies both strings.
            unsafe { sys::OTF2_Archive_SetProperty(self.ptr(), name.as_ptr(), value.as_ptr(), true) },
        )
    }

    pub(crate) fn close_evt_files(&mut self) -> Result<()> {
        check(
            "OTF2_Archive_CloseEvtFiles",
            // SAFETY: live archive whose event writers are all closed.
            unsafe { sys::OTF2_Archive_CloseEvtFiles(self.ptr()) },
        )
    }

    pub(crate) fn open_def_files(&mut self) -> Result<()> {
        check(
            "OTF2_Archive_OpenDefFiles",
            // SAFETY: live archive.
            unsafe { sys::OTF2_Archive_OpenDefFiles(self.ptr()) },
        )
    }

    pub(crate) fn close_def_files(&mut self) -> Result<()> {
        check(
            "OTF2_Archive_CloseDefFiles",
            // SAFETY: live archive whose local definition writers are closed.
            unsafe { sys::OTF2_Archive_CloseDefFiles(self.ptr()) },
        )
    }

    /// Writes the local definition file of `location`: its mapping tables
    /// (local to global string and attribute ids; dense arrays, identity
    /// ones left out), its clock offsets, or nothing, which still creates
    /// the file readers expect.
    pub(crate) fn write_local_defs(
        &mut self,
        location: LocationRef,
        offsets: &[ClockOffset],
        mappings: &[(sys::OTF2_MappingType, &[u64])],
    ) -> Result<()> {
        clear_reports();
        // SAFETY: live archive with definition files open.
        let writer = unsafe { sys::OTF2_Archive_GetDefWriter(self.ptr(), location.0) };
        if writer.is_null() {
            return Err(null_error("OTF2_Archive_GetDefWriter"));
        }
        let mut result = Ok(());
        for &(kind, map) in mappings {
            // SAFETY: `map` is a live array of `map.len()` ids; OTF2 copies it.
            let id_map = unsafe { sys::OTF2_IdMap_CreateFromUint64Array(map.len() as u64, map.as_ptr(), true) };
            if id_map.is_null() {
                // The identity: nothing to map.
                continue;
            }
            result = check(
                "OTF2_DefWriter_WriteMappingTable",
                // SAFETY: `writer` is live; `id_map` is ours until freed below.
                unsafe { sys::OTF2_DefWriter_WriteMappingTable(writer, kind, id_map) },
            );
            // SAFETY: made above, freed once.
            unsafe { sys::OTF2_IdMap_Free(id_map) };
            if result.is_err() {
                break;
            }
        }
        for offset in offsets {
            if result.is_err() {
                break;
            }
            result = check(
                "OTF2_DefWriter_WriteClockOffset",
                // SAFETY: `writer` is live until closed below.
                unsafe {
                    sys::OTF2_DefWriter_WriteClockOffset(writer, offset.time, offset.offset, offset.standard_deviation)
                },
            );
        }
        let closed = check(
            "OTF2_Archive_CloseDefWriter",
            // SAFETY: `writer` came from this archive and is closed once.
            unsafe { sys::OTF2_Archive_CloseDefWriter(self.ptr(), writer) },
        );
        result.and(closed)
    }

    /// Whether this process writes the anchor file and the global
    /// definitions (the first rank of a collective archive; always, alone).
    pub(crate) fn is_primary(&self) -> Result<bool> {
        let mut primary = false;
        check(
            "OTF2_Archive_IsPrimary",
            // SAFETY: live archive; `primary` is a live local.
            unsafe { sys::OTF2_Archive_IsPrimary(self.ptr(), &mut primary) },
        )?;
        Ok(primary)
    }

    /// The global definition writer; OTF2 closes it with the archive, but
    /// [`GlobalDefWriter::close`] does it first to report errors.
    pub(crate) fn global_def_writer(&mut self) -> Result<GlobalDefWriter<'_>> {
        clear_reports();
        // SAFETY: live archive.
        let raw = unsafe { sys::OTF2_Archive_GetGlobalDefWriter(self.ptr()) };
        let raw = NonNull::new(raw).ok_or_else(|| null_error("OTF2_Archive_GetGlobalDefWriter"))?;
        Ok(GlobalDefWriter { archive: self.ptr(), raw, _archive: PhantomData })
    }

    /// Finalizes the archive: flushes and closes every file, writes the
    /// anchor file. Idempotent.
    pub(crate) fn close(&mut self) -> Result<()> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        check(
            "OTF2_Archive_Close",
            // SAFETY: live archive, closed exactly once (flag above).
            unsafe { sys::OTF2_Archive_Close(self.ptr()) },
        )
    }
}

// SAFETY: OTF2 objects have no thread affinity (no thread-local state);
// what they need is serial use, which `&mut self` on every call provides.
unsafe impl Send for Archive {}

/// An archive shared by threads that write the events of different
/// locations at once: it offers only [`Archive::evt_writer`], whose OTF2
/// call locks the archive (the pthread locking callbacks registered in
/// [`Archive::create`]); each writer is then used by one thread only
/// (`EvtWriter` is neither `Send` nor `Sync`), and OTF2 keeps one buffer
/// and one file per location, so writers of different locations share
/// nothing unlocked.
pub(crate) struct SharedArchive<'a>(&'a Archive);

impl<'a> SharedArchive<'a> {
    pub(crate) fn new(archive: &'a mut Archive) -> Self {
        // `&mut`: no other call on the archive can run while it is shared.
        Self(archive)
    }

    pub(crate) fn evt_writer(&self, location: LocationRef) -> Result<super::events::EvtWriter<'a>> {
        self.0.evt_writer(location)
    }
}

// SAFETY: see the type's documentation: the only call made through a
// shared archive is OTF2_Archive_GetEvtWriter (and, by the writers it
// returns, OTF2_Archive_CloseEvtWriter), both of which OTF2 serializes with
// the archive's lock; the `&mut` borrow taken in `new` keeps every other
// call out for as long as it is shared.
unsafe impl Sync for SharedArchive<'_> {}
// SAFETY: as for Sync; the archive itself is Send.
unsafe impl Send for SharedArchive<'_> {}

impl Drop for Archive {
    fn drop(&mut self) {
        if self.collective && !self.closed {
            // Closing would wait for the other processes, which are not
            // closing: the process that drops it aborts the job instead.
            return;
        }
        // Errors cannot be reported from drop; ArchiveWriter::close is the
        // path that reports them.
        let _ = self.close();
    }
}
