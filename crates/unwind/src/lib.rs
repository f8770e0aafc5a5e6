//! gputrace's unwinder, used in the traced process by the sampler
//! (`gputrace-sampling`: a stack copied by perf or a signal handler) and
//! by the MPI hooks (`gputrace-mpi-core`, `GPUTRACE_UNWINDING`: the
//! calling thread's own stack at an MPI call's Enter).
//!
//! [`Unwinder`] keeps the process's modules ([`modules`]: the ones
//! `dl_iterate_phdr` lists, their `.eh_frame_hdr`, `.eh_frame` and
//! `.text` mapped from their files) and hands them to
//! [framehop](https://crates.io/crates/framehop), which walks a stack from
//! its registers with the DWARF CFI rules (with a cache of the rules it
//! looked up), so that code built without frame pointers unwinds right.
//! [`Tree`] dedupes call stacks into the process's tree of nodes (the
//! raw stream's `Frame` definitions): an event records one node id.
//!
//! In-process: depends on `raw` (the module definition); x86-64 only.

mod here;
pub mod modules;
mod tree;

use std::collections::HashSet;
use std::ops::Range;

use framehop::Unwinder as _;
use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};

pub use tree::Tree;

/// The most frames kept of one stack.
pub const MAX_DEPTH: usize = 256;

/// The process's modules and their unwind tables.
pub struct Unwinder {
    inner: UnwinderX86_64<modules::Section>,
    cache: CacheX86_64,
    /// Executable address ranges of the modules added.
    known: Vec<Range<u64>>,
    /// (path, bias) of every object looked at, added or not.
    seen: HashSet<(String, u64)>,
    /// The loader's count of objects loaded at the last scan.
    loads: u64,
    /// The module this crate's code is in: its frames are not the
    /// caller's ([`Unwinder::unwind_here`]).
    own: Option<Range<u64>>,
}

impl Default for Unwinder {
    fn default() -> Self {
        Unwinder {
            inner: UnwinderX86_64::new(),
            cache: CacheX86_64::new(),
            known: Vec::new(),
            seen: HashSet::new(),
            loads: 0,
            own: None,
        }
    }
}

impl Unwinder {
    /// Whether `address` is in a module added.
    pub fn knows(&self, address: u64) -> bool {
        self.known.iter().any(|r| r.contains(&address))
    }

    /// Whether objects were loaded (or unloaded) since the last scan.
    pub fn stale(&self) -> bool {
        modules::loads() != self.loads
    }

    /// Adds the objects loaded since the last scan; returns their
    /// definitions, to record.
    pub fn scan(&mut self) -> Vec<raw::Module> {
        self.loads = modules::loads();
        let mut added = Vec::new();
        for l in modules::loaded() {
            let Some(exec) = l.exec.clone() else { continue };
            let path = match l.name.as_str() {
                "" => {
                    std::fs::read_link("/proc/self/exe").map(|p| p.to_string_lossy().into_owned()).unwrap_or_default()
                }
                name => name.to_string(),
            };
            if path.is_empty() || !self.seen.insert((path.clone(), l.bias)) {
                continue;
            }
            let avma = l.bias + exec.start..l.bias + exec.end;
            match modules::sections(&path) {
                Some(info) => self.inner.add_module(framehop::Module::new(path.clone(), avma.clone(), l.bias, info)),
                None => tracing::debug!(path, "no unwind tables read"),
            }
            self.known.push(avma.clone());
            added.push(raw::Module { start: avma.start, end: avma.end, bias: l.bias, path, build_id: l.build_id });
        }
        let here = here::address();
        self.own = self.known.iter().find(|r| r.contains(&here)).cloned();
        added
    }

    /// A stack copied at an interrupt (registers `ip`, `sp`, `bp`; the
    /// stack's bytes from `sp` up), innermost first, as lookup addresses
    /// (the instruction pointer, then each return address minus one:
    /// inside the call instruction).
    pub fn unwind_copy(&mut self, ip: u64, sp: u64, bp: u64, stack: &[u8], out: &mut Vec<u64>) {
        let mut read = |addr: u64| -> Result<u64, ()> {
            let at = addr.checked_sub(sp).ok_or(())? as usize;
            let bytes = stack.get(at..at + 8).ok_or(())?;
            Ok(u64::from_ne_bytes(bytes.try_into().map_err(|_| ())?))
        };
        self.walk(UnwindRegsX86_64::new(ip, sp, bp), ip, &mut read, out);
    }

    #[inline]
    fn walk<F>(&mut self, regs: UnwindRegsX86_64, ip: u64, read: &mut F, out: &mut Vec<u64>)
    where
        F: FnMut(u64) -> Result<u64, ()>,
    {
        out.clear();
        let mut frames = self.inner.iter_frames(ip, regs, &mut self.cache, read);
        while let Ok(Some(frame)) = frames.next() {
            out.push(frame.address_for_lookup());
            if out.len() == MAX_DEPTH {
                break;
            }
        }
    }
}
