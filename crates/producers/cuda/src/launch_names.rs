//! The kernel a launch call launches, named at the call: CUPTI's callback
//! data for a launch carries the kernel's name (`symbolName`), which the
//! call's Enter takes as the string attribute `CUDA kernel`. A kernel
//! that never ends (it spins, it waits for a peer that never comes) has no
//! activity record, so its launch is all the trace knows of it; with the
//! name, `gputrace analyze` says which kernel never finished.
//!
//! The launch path is hot: the name pointer is looked up in a fixed table
//! of (pointer, string id) pairs read without a lock (a hash, one or two
//! atomic loads); the name is read, demangled and defined once per
//! distinct pointer, under a lock. CUDA's runtime keeps one name per
//! registered kernel for the life of the process. When the table is full
//! (more distinct pointers than it holds), further kernels go unnamed.

use std::ffi::{CStr, c_char};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use recorder::Recorder;

use crate::names;

/// Slots of the table: distinct kernel names a process can have named.
const SLOTS: usize = 4096;
/// Slots looked at from a pointer's home before giving up.
const PROBES: usize = 16;

/// Kernel names by their pointer, for one recorder's string ids.
pub struct LaunchNames {
    ptrs: [AtomicUsize; SLOTS],
    ids: [AtomicU32; SLOTS],
    /// The id of the attribute's name, `CUDA kernel` (0: not defined yet).
    attribute: AtomicU32,
    define: Mutex<()>,
}

impl Default for LaunchNames {
    fn default() -> Self {
        Self::new()
    }
}

fn home(ptr: usize) -> usize {
    // Names are at least byte-aligned strings in a table: the low bits
    // vary; Fibonacci hashing spreads them.
    (ptr.wrapping_mul(0x9E37_79B9_7F4A_7C15_u64 as usize) >> 20) % SLOTS
}

impl LaunchNames {
    pub const fn new() -> Self {
        LaunchNames {
            ptrs: [const { AtomicUsize::new(0) }; SLOTS],
            ids: [const { AtomicU32::new(0) }; SLOTS],
            attribute: AtomicU32::new(0),
            define: Mutex::new(()),
        }
    }

    /// The (attribute, value) string ids naming the kernel whose name is
    /// at `symbol`, defined in `rec` on first sight; `None` for a null
    /// pointer or a full table.
    ///
    /// # Safety
    ///
    /// `symbol` is null or points to a NUL-terminated string that lives
    /// as long as the process (CUPTI's `symbolName` of a launch).
    pub unsafe fn ids(&self, rec: &Recorder, symbol: *const c_char) -> Option<(u32, u32)> {
        let ptr = symbol as usize;
        if ptr == 0 {
            return None;
        }
        let start = home(ptr);
        for i in 0..PROBES {
            let slot = (start + i) % SLOTS;
            match self.ptrs[slot].load(Ordering::Acquire) {
                p if p == ptr => {
                    return Some((self.attribute.load(Ordering::Relaxed), self.ids[slot].load(Ordering::Relaxed)));
                }
                0 => break,
                _ => {}
            }
        }
        // SAFETY: the caller's promise.
        unsafe { self.define(rec, ptr, start) }
    }

    /// Defines the name at `ptr` and publishes it in the first free slot
    /// from `start` (the id is stored before the pointer that finds it).
    ///
    /// # Safety
    ///
    /// As [`ids`](Self::ids).
    unsafe fn define(&self, rec: &Recorder, ptr: usize, start: usize) -> Option<(u32, u32)> {
        let _one = self.define.lock().unwrap_or_else(|e| e.into_inner());
        if self.attribute.load(Ordering::Relaxed) == 0 {
            self.attribute.store(rec.intern("CUDA kernel"), Ordering::Relaxed);
        }
        let attribute = self.attribute.load(Ordering::Relaxed);
        for i in 0..PROBES {
            let slot = (start + i) % SLOTS;
            match self.ptrs[slot].load(Ordering::Acquire) {
                p if p == ptr => return Some((attribute, self.ids[slot].load(Ordering::Relaxed))),
                0 => {
                    // SAFETY: the caller's promise: a live NUL-terminated string.
                    let name = unsafe { CStr::from_ptr(ptr as *const c_char) }.to_string_lossy();
                    let id = rec.intern(&names::demangle(&name));
                    self.ids[slot].store(id, Ordering::Relaxed);
                    self.ptrs[slot].store(ptr, Ordering::Release);
                    return Some((attribute, id));
                }
                _ => {}
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use raw::{Definition, Producer, RawFile};
    use recorder::RecorderOptions;

    #[test]
    fn a_kernel_is_named_once_per_pointer_and_the_ids_are_the_recorders_strings() {
        let dir = tempfile::tempdir().unwrap();
        let rec = Recorder::create(dir.path(), Producer::Cuda, RecorderOptions::default()).unwrap();
        let names = LaunchNames::new();
        let spin = c"_Z12spin_foreverPVi";
        let other = c"axpy";
        // SAFETY: static NUL-terminated strings.
        let (a, s) = unsafe { names.ids(&rec, spin.as_ptr()) }.unwrap();
        // SAFETY: as above.
        let again = unsafe { names.ids(&rec, spin.as_ptr()) }.unwrap();
        // SAFETY: as above.
        let (a2, o) = unsafe { names.ids(&rec, other.as_ptr()) }.unwrap();
        assert_eq!((again, a2), ((a, s), a));
        assert!(a != s && s != o && o != a);
        // SAFETY: a null pointer is allowed.
        assert_eq!(unsafe { names.ids(&rec, std::ptr::null()) }, None);
        let path = rec.path().to_path_buf();
        rec.finish();
        let file = RawFile::open(&path).unwrap();
        let strings: Vec<(u32, String)> = file
            .definitions
            .iter()
            .filter_map(|d| match d {
                Definition::String { id, value } => Some((*id, value.clone())),
                _ => None,
            })
            .collect();
        let named = |id: u32| strings.iter().find(|(i, _)| *i == id).map(|(_, v)| v.as_str());
        assert_eq!(
            (named(a), named(s), named(o)),
            (Some("CUDA kernel"), Some("spin_forever(int volatile*)"), Some("axpy"))
        );
        assert_eq!(strings.iter().filter(|(_, v)| v.starts_with("spin_forever")).count(), 1, "defined once");
    }

    #[test]
    fn a_pointer_whose_probes_are_all_taken_goes_unnamed() {
        let dir = tempfile::tempdir().unwrap();
        let rec = Recorder::create(dir.path(), Producer::Cuda, RecorderOptions::default()).unwrap();
        let names = LaunchNames::new();
        let name = c"late_kernel";
        let h = home(name.as_ptr() as usize);
        for i in 0..PROBES {
            names.ptrs[(h + i) % SLOTS].store(usize::MAX - i, Ordering::Relaxed);
        }
        // SAFETY: a static NUL-terminated string.
        assert_eq!(unsafe { names.ids(&rec, name.as_ptr()) }, None);
        // One slot freed: named there.
        names.ptrs[(h + PROBES - 1) % SLOTS].store(0, Ordering::Relaxed);
        // SAFETY: as above.
        assert!(unsafe { names.ids(&rec, name.as_ptr()) }.is_some());
        rec.finish();
    }
}
