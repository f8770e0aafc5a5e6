//! Writing a stream file: whole chunks, and slots filled in place.
//!
//! Space in the file is handed out by one allocator (a mutex over the end
//! offset, taken once per chunk or slot, never per event) and reserved
//! before anything is written there — whole chunks with `posix_fallocate`,
//! slots by populating their mapped pages — so that a full disk is an
//! error at that moment rather than a `SIGBUS` when a mapped page is
//! first touched. Whole chunks (the stream header, definitions,
//! the batches of explicit locations) go out with one `pwrite`; a thread's
//! events go into a [`Slot`], a shared mapping of its part of the file, so
//! that whatever the process recorded is in the page cache and reaches the
//! file however the process ends. The file is created exclusively: a
//! stream never overwrites another.
//!
//! A small slot is reserved right after the stream header for the closing
//! records (what was dropped, how the stream ended), so they can be
//! written even when the disk has filled up meanwhile.
//!
//! The writing process holds a POSIX read lock on the whole file for as
//! long as it lives: the kernel drops it when the process ends, however
//! it ends, so [`writer_pid`] tells a merge whether the stream may still
//! grow (a rank that outlived its launcher).
//!
//! The file's descriptor is checked before every use, since the program
//! may have closed it and given its number to a file of its own
//! ([`descriptor`]).

mod descriptor;
mod encoder;

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use descriptor::Descriptor;
pub use encoder::{EventSpan, EventsEncoder};
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

use crate::chunk::{ChunkHeader, ChunkKind, HEADER_LEN, SEAL_LEN, SLOT_PREFIX, Seal, commit_word};
use crate::event::MAX_EVENT_LEN;
use crate::varint::RoomSink;
use crate::{Event, Producer, StreamHeader, varint};

/// Length of the slot reserved for the closing records.
pub const CLOSING_SLOT_LEN: usize = 4096;

/// An open stream file.
#[derive(Debug)]
pub struct StreamFile {
    /// Absolute, so that the file can be opened again after the program
    /// changed its working directory.
    path: PathBuf,
    producer: Producer,
    /// Taken for each use of the descriptor, innermost (after `end`).
    fd: Mutex<Descriptor>,
    /// The end of the space handed out so far.
    end: Mutex<u64>,
    /// The closing slot, until it is used.
    closing: Mutex<Option<ClosingSlot>>,
}

/// The slot reserved for the closing records: where it is, and its pages
/// mapped when the stream was made, so that the records can be written
/// without the descriptor (one the program took and that cannot be
/// opened again).
#[derive(Debug)]
struct ClosingSlot {
    at: u64,
    map: Option<Mapping>,
}

/// A shared mapping of part of the stream file.
#[derive(Debug)]
struct Mapping {
    base: *mut u8,
    len: usize,
    /// The offset in the file of its first byte.
    from: u64,
}

// SAFETY: the mapping is owned by its `ClosingSlot` alone; the raw
// pointer carries no thread affinity.
unsafe impl Send for Mapping {}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `Mapping::new`, unmapped once.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

impl Mapping {
    /// Maps the pages of `fd` that cover `at..at + len` (bytes the file
    /// holds: reserved, so no access faults).
    fn new(fd: RawFd, at: u64, len: usize) -> Option<Mapping> {
        let from = at - at % page_size();
        let map_len = (at + len as u64 - from).next_multiple_of(page_size()) as usize;
        // SAFETY: a fresh shared mapping of bytes the file holds, at a
        // page-aligned offset.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                from as libc::off_t,
            )
        };
        (base != libc::MAP_FAILED).then_some(Mapping { base: base.cast(), len: map_len, from })
    }

    /// The mapped bytes of the file at `at..at + n`.
    fn bytes_mut(&mut self, at: u64, n: usize) -> &mut [u8] {
        let off = (at - self.from) as usize;
        assert!(off + n <= self.len, "mapping access out of bounds");
        // SAFETY: in bounds of the mapping, which `&mut self` owns.
        unsafe { std::slice::from_raw_parts_mut(self.base.add(off), n) }
    }
}

/// Why a slot could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum SlotError {
    /// The file could not grow (a full disk, a quota): recording must stop.
    #[error("{0}")]
    NoSpace(io::Error),
    /// The file system does not map files (some network and FUSE file
    /// systems): the caller keeps events in memory instead.
    #[error("cannot map the stream file: {0}")]
    NoMapping(io::Error),
}

pub(crate) fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 { n as u64 } else { 4096 }
}

impl StreamFile {
    /// Creates `path` (which must not exist), writes the stream header and
    /// reserves the closing slot.
    pub fn create(path: &Path, header: &StreamHeader) -> io::Result<StreamFile> {
        let path = std::path::absolute(path)?;
        let fd = Descriptor::open(&path, true)?;
        let stream = StreamFile {
            path,
            producer: header.producer,
            fd: Mutex::new(fd),
            end: Mutex::new(0),
            closing: Mutex::new(None),
        };
        // Best effort: a file system without locks only loses the wait
        // for a rank that outlives its launcher.
        let _ = stream.with_fd(|fd| lock(fd, libc::F_SETLK, libc::F_RDLCK as libc::c_short));
        let mut payload = Vec::new();
        header.encode(&mut payload);
        stream.write_chunk(ChunkKind::StreamHeader, None, &payload)?;
        // The closing slot follows the stream header, 8-aligned (zeros
        // before it, which a reader skips): its commit word is one aligned
        // store, which a kill cannot tear.
        let at = stream.allocate(CLOSING_SLOT_LEN as u64, 8, true)?;
        let head = ChunkHeader::for_slot(ChunkKind::Definitions, stream.producer, 0, CLOSING_SLOT_LEN).encode();
        stream.write_header_at(&head, at)?;
        // Where the file system maps no files, the records go out with
        // `pwrite` (and need the descriptor).
        let map = stream.with_fd(|fd| Ok(Mapping::new(fd, at, CLOSING_SLOT_LEN)))?;
        *stream.closing.lock().unwrap_or_else(|e| e.into_inner()) = Some(ClosingSlot { at, map });
        Ok(stream)
    }

    /// Runs `op` on the stream file's descriptor, checked to still be the
    /// stream file's (opened again if the program took its number).
    fn with_fd<R>(&self, op: impl FnOnce(RawFd) -> io::Result<R>) -> io::Result<R> {
        let mut fd = self.fd.lock().unwrap_or_else(|e| e.into_inner());
        let raw = fd.get(&self.path)?;
        op(raw)
    }

    /// How many times the file was opened again because the program had
    /// closed its descriptor.
    pub fn reopened(&self) -> u32 {
        self.fd.lock().unwrap_or_else(|e| e.into_inner()).reopened
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn producer(&self) -> Producer {
        self.producer
    }

    /// Hands out `len` bytes at an offset that is a multiple of `align`.
    /// With `reserve`, the bytes are reserved on disk (`posix_fallocate`);
    /// without, the file only grows to cover them (a slot reserves its
    /// pages by populating them, see [`prepare_slot`](Self::prepare_slot)).
    fn allocate(&self, len: u64, align: u64, reserve: bool) -> io::Result<u64> {
        let mut end = self.end.lock().unwrap_or_else(|e| e.into_inner());
        let at = end.next_multiple_of(align);
        self.with_fd(|fd| {
            if reserve {
                // SAFETY: a valid descriptor; offsets and lengths are
                // checked by the kernel. Reserving from the old end also
                // covers the alignment gap, which the reader skips as zeros.
                let rc = unsafe { libc::posix_fallocate(fd, *end as libc::off_t, (at + len - *end) as libc::off_t) };
                if rc != 0 {
                    return Err(io::Error::from_raw_os_error(rc));
                }
            } else if file_len(fd)? < at + len {
                // SAFETY: a valid descriptor; the kernel checks the length.
                if unsafe { libc::ftruncate(fd, (at + len) as libc::off_t) } != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            Ok(())
        })?;
        *end = at + len;
        Ok(at)
    }

    fn write_all_at(&self, mut bytes: &[u8], mut at: u64) -> io::Result<()> {
        self.with_fd(|fd| {
            while !bytes.is_empty() {
                // SAFETY: a valid descriptor and a buffer of `len` bytes.
                let n = unsafe { libc::pwrite(fd, bytes.as_ptr().cast(), bytes.len(), at as libc::off_t) };
                if n < 0 {
                    let e = io::Error::last_os_error();
                    if e.kind() == io::ErrorKind::Interrupted {
                        continue;
                    }
                    return Err(e);
                }
                if n == 0 {
                    return Err(io::ErrorKind::WriteZero.into());
                }
                bytes = &bytes[n as usize..];
                at += n as u64;
            }
            Ok(())
        })
    }

    /// Writes a chunk header at `at`, its first byte last: a process
    /// killed while writing it (a `pwrite` can be cut where it crosses a
    /// page) leaves a zero where the header starts, which a reader takes
    /// for a chunk not yet written, never for damage.
    fn write_header_at(&self, head: &[u8; HEADER_LEN], at: u64) -> io::Result<()> {
        self.write_all_at(&head[1..], at + 1)?;
        self.write_all_at(&head[..1], at)
    }

    /// Appends one whole chunk. `span` is given for event chunks. Returns
    /// where the chunk lies in the file (for [`release`](Self::release)).
    pub fn write_chunk(&self, kind: ChunkKind, span: Option<EventSpan>, payload: &[u8]) -> io::Result<Extent> {
        let mut header = ChunkHeader::for_payload(kind, self.producer, payload);
        if let Some(s) = span {
            header.location = s.location;
            header.event_count = s.count;
            header.min_time = s.min_time;
            header.max_time = s.max_time;
        }
        let at = self.allocate((HEADER_LEN + payload.len()) as u64, 1, true)?;
        // The payload first, then the header, its first byte last: a
        // process killed before that byte leaves a zero where the chunk
        // starts, which a reader reports as a torn write.
        self.write_all_at(payload, at + HEADER_LEN as u64)?;
        self.write_header_at(&header.encode(), at)?;
        Ok(Extent { at, len: (HEADER_LEN + payload.len()) as u64 })
    }

    /// Gives back a closed slot's or written chunk's file space, header
    /// included (the flight recorder's cut): it reads as zeros, which a
    /// reader skips, and its blocks and cached pages are freed. Failure
    /// only costs space.
    pub fn release(&self, extent: Extent) {
        let _ = self.with_fd(|fd| {
            // SAFETY: a valid descriptor; the range is a closed slot's or
            // a written chunk's, which nothing maps or writes any more.
            Ok(unsafe {
                libc::fallocate(
                    fd,
                    libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                    extent.at as libc::off_t,
                    extent.len as libc::off_t,
                )
            })
        });
    }

    /// Writes definitions into the slot reserved for the closing records
    /// (once; later calls fail). For when the disk is full.
    pub fn write_closing(&self, payload: &[u8]) -> io::Result<()> {
        let room = CLOSING_SLOT_LEN - SLOT_PREFIX - SEAL_LEN;
        if payload.len() > room {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "closing records exceed their slot"));
        }
        let Some(ClosingSlot { at, map }) = self.closing.lock().unwrap_or_else(|e| e.into_inner()).take() else {
            return Err(io::Error::new(io::ErrorKind::AlreadyExists, "closing slot already used"));
        };
        let bytes = payload.len() as u32;
        let seal = Seal { bytes, events: 0, min_time: 0, max_time: 0, payload_crc: crc32fast::hash(payload) };
        let payload_at = at + SLOT_PREFIX as u64;
        let seal_at = payload_at + u64::from(bytes);
        let word = commit_word(bytes, 0).to_le();
        let Some(mut map) = map else {
            self.write_all_at(payload, payload_at)?;
            self.write_all_at(&seal.encode(), seal_at)?;
            // The commit word last: until it is there, the slot reads empty.
            return self.write_all_at(&word.to_ne_bytes(), at + HEADER_LEN as u64);
        };
        map.bytes_mut(payload_at, payload.len()).copy_from_slice(payload);
        map.bytes_mut(seal_at, SEAL_LEN).copy_from_slice(&seal.encode());
        let word_at = map.bytes_mut(at + HEADER_LEN as u64, 8).as_mut_ptr();
        // SAFETY: the slot is 8-aligned (see `create`) and so is its
        // commit word, in bounds of the mapping; the word is accessed only
        // here. The store is ordered after the bytes it covers.
        unsafe { &*word_at.cast::<AtomicU64>() }.store(word, Ordering::Release);
        Ok(())
    }

    /// Opens a slot of `len` bytes (a multiple of the page size) for the
    /// events of `location`.
    pub fn open_slot(&self, location: u32, len: usize) -> Result<Slot, SlotError> {
        let mut slot = self.prepare_slot(len)?;
        self.start_slot(&mut slot, location);
        Ok(slot)
    }

    /// Reserves, maps and populates a slot of `len` bytes, not yet
    /// started: work that a thread other than the recording one can do
    /// ahead of time, so that appends never wait for a page fault.
    pub fn prepare_slot(&self, len: usize) -> Result<Slot, SlotError> {
        let page = page_size();
        let len = (len as u64).next_multiple_of(page).max(page) as usize;
        let at = self.allocate(len as u64, page, false).map_err(SlotError::NoSpace)?;
        let map = self
            .with_fd(|fd| {
                // SAFETY: a fresh shared mapping of `len` bytes of our file
                // at a page-aligned offset that the allocator reserved for
                // this slot alone; nothing else in this process maps or
                // writes it.
                let map = unsafe {
                    libc::mmap(
                        std::ptr::null_mut(),
                        len,
                        libc::PROT_READ | libc::PROT_WRITE,
                        libc::MAP_SHARED,
                        fd,
                        at as libc::off_t,
                    )
                };
                Ok(map)
            })
            .map_err(SlotError::NoSpace)?;
        if map == libc::MAP_FAILED {
            return Err(SlotError::NoMapping(io::Error::last_os_error()));
        }
        // Populating the pages writable makes the file system find room
        // for each of them now (a full disk is an error here, never a
        // SIGBUS on a later append), and spares the appends the page
        // faults. It changes no byte. Cheaper than `posix_fallocate`,
        // whose unwritten extents cost every first write a journal entry
        // (ext4), which is why it is used only where populating is not
        // known (kernels before 5.14).
        // SAFETY: the mapping just made, `len` bytes.
        if unsafe { libc::madvise(map, len, libc::MADV_POPULATE_WRITE) } != 0 {
            let e = io::Error::last_os_error();
            let reserved = if e.raw_os_error() == Some(libc::EINVAL) {
                self.with_fd(|fd| {
                    // SAFETY: a valid descriptor and this slot's range.
                    match unsafe { libc::posix_fallocate(fd, at as libc::off_t, len as libc::off_t) } {
                        0 => Ok(()),
                        rc => Err(io::Error::from_raw_os_error(rc)),
                    }
                })
            } else {
                // EFAULT: a page could not be given room (a full disk).
                Err(io::Error::from_raw_os_error(libc::ENOSPC))
            };
            if let Err(e) = reserved {
                // SAFETY: the mapping made above, unmapped once.
                unsafe { libc::munmap(map, len) };
                return Err(SlotError::NoSpace(e));
            }
        }
        Ok(Slot { map: map.cast::<u8>(), len, at, used: 0, events: EventsEncoder::default() })
    }

    /// Writes the header that makes a prepared slot part of the stream, the
    /// slot of `location`'s events.
    pub fn start_slot(&self, slot: &mut Slot, location: u32) {
        let head = ChunkHeader::for_slot(ChunkKind::Events, self.producer, location, slot.len).encode();
        // Its first byte last (one store, ordered after the rest), as in
        // `write_header_at`: a kill in the middle of the copy leaves a
        // zero where the slot starts, and the slot holds nothing yet.
        slot.bytes_mut(1, HEADER_LEN - 1).copy_from_slice(&head[1..]);
        // SAFETY: the first byte of the slot's mapping, in bounds; the
        // mapping is the slot's alone and `&mut` makes the access exclusive.
        let first = unsafe { &*slot.map.cast::<AtomicU8>() };
        first.store(head[0], Ordering::Release);
    }

    /// Seals `slot`, unmaps it and gives back the pages it did not use.
    /// Returns where the slot lies in the file and what it holds.
    pub fn close_slot(&self, mut slot: Slot) -> ClosedSlot {
        let end = slot.seal();
        let (at, len) = (slot.at, slot.len as u64);
        let closed = ClosedSlot { extent: Extent { at, len }, events: slot.events.count, max_time: slot.events.max };
        drop(slot);
        let page = page_size();
        let keep = (at + end).next_multiple_of(page);
        let slot_end = at + len;
        if keep >= slot_end {
            return closed;
        }
        let file_end = self.end.lock().unwrap_or_else(|e| e.into_inner());
        if *file_end == slot_end {
            // The last thing in the file: cut the file short. The slot's
            // header still claims its whole length (headers are written
            // once), and the allocator goes on from the slot's end; a
            // reader clips the slot to the file.
            // SAFETY: a valid descriptor; failure only costs space.
            let _ = self.with_fd(|fd| Ok(unsafe { libc::ftruncate(fd, keep as libc::off_t) }));
            return closed;
        }
        drop(file_end);
        let _ = self.with_fd(|fd| {
            // SAFETY: a valid descriptor; the range is this slot's unused
            // tail, which nothing maps any more. Failure only costs space.
            Ok(unsafe {
                libc::fallocate(
                    fd,
                    libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                    keep as libc::off_t,
                    (slot_end - keep) as libc::off_t,
                )
            })
        });
        closed
    }
}

/// Where a chunk or slot lies in the stream file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    pub at: u64,
    pub len: u64,
}

/// A slot once closed: where it lies, how many events it holds and the
/// newest one's time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClosedSlot {
    pub extent: Extent,
    pub events: u32,
    pub max_time: u64,
}

/// The length of the file open as `fd`.
fn file_len(fd: RawFd) -> io::Result<u64> {
    // SAFETY: a zeroed stat is a valid value; fstat only writes into it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st.st_size as u64)
}

/// `fcntl` with a lock of `kind` over the whole file; the lock as the
/// kernel answered (for `F_GETLK`).
fn lock(fd: RawFd, cmd: libc::c_int, kind: libc::c_short) -> io::Result<libc::flock> {
    // SAFETY: a zeroed flock is a valid value of this plain C struct.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = kind;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    // SAFETY: a valid descriptor and a flock the call may write to.
    if unsafe { libc::fcntl(fd, cmd, &mut fl) } == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(fl)
}

/// The pid of a live process still writing the stream at `path`, if any
/// (on this host; see the module doc). `None` also where the file system
/// keeps no locks.
pub fn writer_pid(path: &Path) -> io::Result<Option<u32>> {
    let file = File::open(path)?;
    let fl = lock(file.as_raw_fd(), libc::F_GETLK, libc::F_WRLCK as libc::c_short)?;
    Ok((fl.l_type != libc::F_UNLCK as libc::c_short).then_some(fl.l_pid as u32))
}

/// A thread's events being written in place: a shared mapping of one slot
/// chunk of the stream file. Every [`append`](Slot::append) ends with the
/// commit word, so what it appended is part of the file from then on.
#[derive(Debug)]
pub struct Slot {
    map: *mut u8,
    len: usize,
    at: u64,
    used: usize,
    events: EventsEncoder,
}

// SAFETY: the mapping is owned by the slot alone (see `open_slot`); the
// raw pointer carries no thread affinity.
unsafe impl Send for Slot {}

impl Slot {
    /// Room for payload bytes: the slot less header, commit word and seal.
    fn room(&self) -> usize {
        self.len - SLOT_PREFIX - SEAL_LEN
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.events.count == 0
    }

    /// The mapped bytes `from..from + n`.
    fn bytes(&self, from: usize, n: usize) -> &[u8] {
        assert!(from + n <= self.len, "slot access out of bounds");
        // SAFETY: as in `bytes_mut`, shared.
        unsafe { std::slice::from_raw_parts(self.map.add(from), n) }
    }

    /// The mapped bytes `from..from + n`, to write.
    #[inline]
    fn bytes_mut(&mut self, from: usize, n: usize) -> &mut [u8] {
        assert!(from + n <= self.len, "slot access out of bounds");
        // SAFETY: the mapping is `len` bytes long, readable and writable,
        // and owned by this slot; `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.map.add(from), n) }
    }

    /// Whether `n` more events surely fit.
    #[inline]
    pub fn fits(&self, n: usize) -> bool {
        self.events.count < u32::MAX - n as u32 && self.used + varint::MAX_LEN + n * MAX_EVENT_LEN <= self.room()
    }

    /// Appends `events` (which must [fit](Slot::fits)) and commits them.
    /// They are encoded straight into the mapped pages: no copy.
    #[inline(always)]
    pub fn append(&mut self, events: &[(u64, Event)]) {
        let from = SLOT_PREFIX + self.used;
        let room = self.room() - self.used;
        let mut encoder = self.events;
        let written = {
            // SAFETY: `fits` checked room for the longest encoding of
            // every event given (MAX_EVENT_LEN each, and a base time).
            let mut out = unsafe { RoomSink::new(self.bytes_mut(from, room)) };
            for (time, event) in events {
                encoder.put(&mut out, *time, event);
            }
            out.len()
        };
        self.events = encoder;
        self.used += written;
        self.commit();
    }

    /// Stores the commit word after the bytes it covers.
    #[inline]
    fn commit(&self) {
        // SAFETY: offset 48 of a page-aligned mapping is 8-aligned and in
        // bounds; the word is only ever accessed atomically.
        let word = unsafe { &*self.map.add(HEADER_LEN).cast::<AtomicU64>() };
        word.store(commit_word(self.used as u32, self.events.count).to_le(), Ordering::Release);
    }

    /// Writes the seal after the committed bytes; returns the offset in the
    /// slot where its content ends.
    fn seal(&mut self) -> u64 {
        let from = SLOT_PREFIX + self.used;
        let payload_crc = crc32fast::hash(self.bytes(SLOT_PREFIX, self.used));
        let seal = Seal {
            bytes: self.used as u32,
            events: self.events.count,
            min_time: if self.events.count == 0 { 0 } else { self.events.min },
            max_time: self.events.max,
            payload_crc,
        };
        self.bytes_mut(from, SEAL_LEN).copy_from_slice(&seal.encode());
        (from + SEAL_LEN) as u64
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `open_slot`, unmapped once, here.
        unsafe { libc::munmap(self.map.cast(), self.len) };
    }
}
