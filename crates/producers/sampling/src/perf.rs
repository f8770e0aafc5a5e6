//! Sampling by perf events: one software event per thread counting the
//! thread's CPU time (`PERF_COUNT_SW_TASK_CLOCK`), which writes a sample
//! into a ring the kernel shares with us every period: the thread's user
//! registers (`PERF_SAMPLE_REGS_USER`: bp, sp, ip) and a copy of the top
//! of its user stack (`PERF_SAMPLE_STACK_USER`). The sampler's thread
//! drains the rings; nothing runs on the sampled thread.
//!
//! Each thread has its own event and ring (`pid` = its tid, `cpu` = -1):
//! the kernel refuses to map the ring of an event inherited by new
//! threads (`perf_mmap`: "Don't allow mmap() of inherited per-task
//! counters"), so new threads are covered by the `pthread_create` hook.
//! Under `perf_event_paranoid` 2 (user space only) the event must exclude
//! the kernel: a period that ends in a system call is then not sampled;
//! the event is asked for with the kernel first, then without.

use std::io;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::Sample;

const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_COUNT_SW_TASK_CLOCK: u64 = 1;
const PERF_SAMPLE_TID: u64 = 1 << 1;
const PERF_SAMPLE_TIME: u64 = 1 << 2;
const PERF_SAMPLE_REGS_USER: u64 = 1 << 12;
const PERF_SAMPLE_STACK_USER: u64 = 1 << 13;
const PERF_RECORD_LOST: u32 = 2;
const PERF_RECORD_SAMPLE: u32 = 9;
const PERF_SAMPLE_REGS_ABI_64: u64 = 2;
/// x86-64's register numbers in `sample_regs_user` (`perf_regs.h`): the
/// record holds them in this order.
const REGS: u64 = (1 << 6) | (1 << 7) | (1 << 8);
const EXCLUDE_KERNEL: u64 = 1 << 5;
const EXCLUDE_HV: u64 = 1 << 6;
const USE_CLOCKID: u64 = 1 << 25;
const PAGE: usize = 4096;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

/// `struct perf_event_attr` up to `sample_max_stack` (PERF_ATTR_SIZE_VER5).
#[repr(C)]
#[derive(Default)]
struct Attr {
    ty: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
    config2: u64,
    branch_sample_type: u64,
    sample_regs_user: u64,
    sample_stack_user: u32,
    clockid: i32,
    sample_regs_intr: u64,
    aux_watermark: u32,
    sample_max_stack: u16,
    reserved: u16,
}

const _: () = assert!(std::mem::size_of::<Attr>() == 112);

/// One thread's event and its mapped ring.
#[derive(Debug)]
pub struct Ring {
    fd: libc::c_int,
    base: NonNull<u8>,
    /// Bytes of the data area (a power of two).
    size: usize,
    /// A record that wraps around the ring's end is copied here whole.
    scratch: Vec<u8>,
}

// SAFETY: the mapping belongs to this value; only the sampler's thread
// reads it after the sampled thread opened it.
unsafe impl Send for Ring {}

/// Samples the kernel could not write (the ring was full), all threads.
pub static LOST: AtomicU64 = AtomicU64::new(0);

fn open_event(tid: i32, period_ns: u64, stack: u32, kernel: bool) -> io::Result<libc::c_int> {
    let attr = Attr {
        ty: PERF_TYPE_SOFTWARE,
        size: std::mem::size_of::<Attr>() as u32,
        config: PERF_COUNT_SW_TASK_CLOCK,
        sample_period: period_ns,
        sample_type: PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER,
        flags: EXCLUDE_HV | USE_CLOCKID | if kernel { 0 } else { EXCLUDE_KERNEL },
        sample_regs_user: REGS,
        sample_stack_user: stack,
        clockid: libc::CLOCK_MONOTONIC,
        ..Attr::default()
    };
    // SAFETY: perf_event_open reads `attr` (size given inside) and
    // returns a descriptor or -1.
    let fd =
        unsafe { libc::syscall(libc::SYS_perf_event_open, &attr as *const Attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC) };
    if fd < 0 { Err(io::Error::last_os_error()) } else { Ok(fd as libc::c_int) }
}

impl Ring {
    /// Opens the event of thread `tid` and maps its ring: the largest of
    /// 512 KiB down to 32 KiB that the locked-memory limit allows.
    pub fn open(tid: i32, period_ns: u64, stack: u32) -> io::Result<Ring> {
        let fd = open_event(tid, period_ns, stack, true).or_else(|_| open_event(tid, period_ns, stack, false))?;
        let mut last = io::Error::from_raw_os_error(libc::ENOMEM);
        let mut pages = 128;
        while pages >= 8 {
            let len = (pages + 1) * PAGE;
            // SAFETY: a shared mapping of the event's ring, as perf_event_open(2) says.
            let p = unsafe {
                libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0)
            };
            if p != libc::MAP_FAILED {
                let base = NonNull::new(p.cast::<u8>()).expect("mmap returned a mapping");
                return Ok(Ring { fd, base, size: pages * PAGE, scratch: Vec::new() });
            }
            last = io::Error::last_os_error();
            pages /= 2;
        }
        // SAFETY: our descriptor.
        unsafe { libc::close(fd) };
        Err(last)
    }

    /// `data_head` (the kernel's) or `data_tail` (ours): u64 fields at
    /// offsets 1024 and 1032 of the mapped perf_event_mmap_page.
    fn word(&self, offset: usize) -> &AtomicU64 {
        // SAFETY: inside the first mapped page, 8-aligned, shared with the
        // kernel, which writes the head and reads the tail.
        unsafe { &*self.base.as_ptr().add(offset).cast::<AtomicU64>() }
    }

    /// Hands every sample in the ring to `each`, and frees their room.
    pub fn drain(&mut self, each: &mut dyn FnMut(&Sample<'_>)) {
        let end = self.word(1024).load(Ordering::Acquire);
        let mut at = self.word(1032).load(Ordering::Relaxed);
        let scratch = &mut self.scratch;
        // SAFETY: the data area follows the first page and is `size` long.
        let data = unsafe { std::slice::from_raw_parts(self.base.as_ptr().add(PAGE), self.size) };
        while at + 8 <= end {
            let offset = (at as usize) & (self.size - 1);
            let header = read_at(data, offset, 8);
            let (ty, len) =
                (u32::from_ne_bytes(header[..4].try_into().unwrap()), header[6] as usize | (header[7] as usize) << 8);
            if len < 8 || at + len as u64 > end {
                break;
            }
            let record: &[u8] = if offset + len <= data.len() {
                &data[offset..offset + len]
            } else {
                scratch.clear();
                scratch.extend_from_slice(&data[offset..]);
                scratch.extend_from_slice(&data[..len - (data.len() - offset)]);
                scratch
            };
            match ty {
                PERF_RECORD_SAMPLE => {
                    if let Some(s) = parse_sample(record) {
                        each(&s);
                    }
                }
                PERF_RECORD_LOST if len >= 24 => {
                    let n = u64::from_ne_bytes(record[16..24].try_into().unwrap());
                    LOST.fetch_add(n, Ordering::Relaxed);
                }
                _ => {}
            }
            at += len as u64;
        }
        self.word(1032).store(at, Ordering::Release);
    }
}

/// `len` bytes at `offset` of the ring, wrapping (for a record's header).
fn read_at(data: &[u8], offset: usize, len: usize) -> [u8; 8] {
    let mut out = [0u8; 8];
    for (i, b) in out.iter_mut().enumerate().take(len) {
        *b = data[(offset + i) % data.len()];
    }
    out
}

/// A PERF_RECORD_SAMPLE of our sample type: header, pid, tid, time, abi,
/// bp, sp, ip, size, the stack's bytes, the size copied.
fn parse_sample(r: &[u8]) -> Option<Sample<'_>> {
    let word = |at: usize| r.get(at..at + 8).map(|b| u64::from_ne_bytes(b.try_into().unwrap()));
    let tid = u32::from_ne_bytes(r.get(12..16)?.try_into().ok()?);
    let time = word(16)?;
    if word(24)? != PERF_SAMPLE_REGS_ABI_64 {
        return None;
    }
    let (bp, sp, ip) = (word(32)?, word(40)?, word(48)?);
    let size = word(56)? as usize;
    let copied = if size == 0 { 0 } else { word(64 + size)? as usize };
    let stack = r.get(64..64 + copied.min(size))?;
    Some(Sample { tid, time, ip, sp, bp, stack })
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: our mapping and descriptor, used by nothing else now.
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.size + PAGE);
            libc::close(self.fd);
        }
    }
}
