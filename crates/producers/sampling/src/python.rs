//! Python frames of a sampled thread, read from CPython's own structures
//! (3.10 to 3.13) on the sampler's thread, and put in the places of the
//! interpreter's eval loop among the native frames, as py-spy does: a
//! sample of `hot.py` reads `main > … > <module> > step > spin` rather
//! than `main > … > _PyEval_EvalFrameDefault`.
//!
//! - **Where.** The interpreter's functions are looked up with `dlsym` in
//!   the process (the `python3.X` executable, or a `libpython3.X.so`
//!   loaded globally): `Py_Version` (or `Py_GetVersion` for 3.10),
//!   `Py_IsInitialized`, `PyInterpreterState_Head`,
//!   `PyInterpreterState_ThreadHead`, `PyCode_Type` and
//!   `_PyEval_EvalFrameDefault`, whose address range (`dladdr1`) tells
//!   which native frames are the eval loop's.
//! - **The thread.** A sampled thread's `PyThreadState` is the one of the
//!   main interpreter whose `thread_id` is the thread's `pthread_self()`.
//! - **The frames.** 3.10: `tstate->frame`, a chain of `PyFrameObject`
//!   (`f_back`), one eval loop each. 3.11 and 3.12: `tstate->cframe->
//!   current_frame`, 3.13: `tstate->current_frame`, a chain of
//!   `_PyInterpreterFrame` (`previous`); one eval loop runs several (a
//!   Python call from Python does not recurse in C): in 3.11 the first
//!   frame of a loop has `is_entry`, in 3.12 and 3.13 a shim frame owned
//!   by the C stack (`FRAME_OWNED_BY_CSTACK`) comes before it. The
//!   offsets of these fields, per version, are in [`LAYOUTS`] (read from
//!   the versions' own headers).
//! - **Per frame** the code object's qualified name (`co_qualname`; 3.10
//!   has only `co_name`), file name and first line, once per code object
//!   (a [`raw::Definition::PyCode`]), and the line the frame is at, from
//!   its instruction pointer (3.10: `f_lasti`) and the code's line table
//!   ([`lines`]), each sample.
//!
//! **No lock is taken.** The GIL would make the sampler wait for the
//! sampled thread to let go of it (up to the switch interval, 5 ms, each
//! time, and forever if the thread sits in C code holding it), would
//! change the program's scheduling, and may not be taken at all during
//! the interpreter's finalization; the interpreter's own thread-list lock
//! is not exported. So the frames are read while the thread runs: every
//! read goes through `process_vm_readv` on the process itself, which
//! fails (rather than faulting) on an address that is not mapped; each
//! code object's type must be `PyCode_Type`; the chain is cut at
//! [`MAX_FRAMES`]; and a sample whose Python frames do not match its
//! native eval loops one for one gets no Python frames (its native ones
//! stay). What can still happen is a frame that changed between the read
//! of the chain and the sample: the chain is read when the sampler drains
//! the samples (every period, at least 1 ms, at most 5 ms), not at the
//! sample itself (docs/sampling.md).

mod lines;

use std::collections::HashMap;
use std::ffi::{CStr, c_void};
use std::ops::Range;

/// The most Python frames read of one thread.
pub const MAX_FRAMES: usize = 512;
/// The most thread states walked in search of a thread's.
const MAX_THREADS: usize = 4096;

/// A node of a sampled stack: a native address, or a Python frame (its
/// code's id, its line, 0 when unknown).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Node {
    Native(u64),
    Python { code: u32, line: u32 },
}

/// Offsets (x86-64) of the fields read, per CPython minor version.
#[derive(Debug)]
pub struct Layout {
    pub minor: u32,
    ts_thread_id: u64,
    /// Where the current frame is: `tstate->frame` (3.10),
    /// `tstate->cframe->current_frame` (3.11, 3.12: the cframe's offset,
    /// then the frame's in it), `tstate->current_frame` (3.13).
    ts_frame: (u64, Option<u64>),
    fr_previous: u64,
    fr_code: u64,
    /// 3.10: `f_lasti` (an int, instructions of 2 bytes); later: the
    /// instruction pointer.
    fr_instr: u64,
    /// 3.11: `is_entry`; 3.12+: `owner`; 3.10: none.
    fr_entry: Option<u64>,
    co_firstlineno: u64,
    co_filename: u64,
    /// `co_qualname` (3.11+), `co_name` (3.10).
    co_name: u64,
    co_linetable: u64,
    /// 3.11+: the bytecode's start (`co_code_adaptive`).
    co_code: Option<u64>,
    /// Where an ASCII and a compact string's characters start.
    str_ascii: u64,
    str_compact: u64,
}

/// Read from each version's headers (`offsetof` in a build of each).
pub static LAYOUTS: [Layout; 4] = [
    Layout {
        minor: 10,
        ts_thread_id: 176,
        ts_frame: (24, None),
        fr_previous: 24,
        fr_code: 32,
        fr_instr: 96,
        fr_entry: None,
        co_firstlineno: 40,
        co_filename: 104,
        co_name: 112,
        co_linetable: 120,
        co_code: None,
        str_ascii: 48,
        str_compact: 72,
    },
    Layout {
        minor: 11,
        ts_thread_id: 152,
        ts_frame: (56, Some(8)),
        fr_previous: 48,
        fr_code: 32,
        fr_instr: 56,
        fr_entry: Some(68),
        co_firstlineno: 72,
        co_filename: 112,
        co_name: 128,
        co_linetable: 136,
        co_code: Some(184),
        str_ascii: 48,
        str_compact: 72,
    },
    Layout {
        minor: 12,
        ts_thread_id: 136,
        ts_frame: (56, Some(0)),
        fr_previous: 8,
        fr_code: 0,
        fr_instr: 56,
        fr_entry: Some(70),
        co_firstlineno: 68,
        co_filename: 112,
        co_name: 128,
        co_linetable: 136,
        co_code: Some(192),
        str_ascii: 40,
        str_compact: 56,
    },
    Layout {
        minor: 13,
        ts_thread_id: 152,
        ts_frame: (72, None),
        fr_previous: 8,
        fr_code: 0,
        fr_instr: 56,
        fr_entry: Some(70),
        co_firstlineno: 68,
        co_filename: 112,
        co_name: 128,
        co_linetable: 136,
        co_code: Some(200),
        str_ascii: 40,
        str_compact: 56,
    },
];

/// 3.12+: a frame owned by the C stack (the eval loop's entry shim).
const OWNED_BY_CSTACK: u8 = 3;

/// A code object once read: its id and line table.
struct Code {
    id: u32,
    first: u32,
    table: Vec<u8>,
}

/// (code object, its name, file name, first line): a code object freed
/// and another made at its address reads as a new one unless it is the
/// same function again.
type CodeKey = (u64, u64, u64, u32);

/// One frame as read: its code, its line, and whether it is the first
/// (outermost) frame of its eval loop.
#[derive(Debug, Clone, Copy)]
struct Read {
    node: Node,
    entry: bool,
}

/// The interpreter of this process, found by its symbols.
pub struct Python {
    layout: &'static Layout,
    eval: Range<u64>,
    code_type: u64,
    initialized: unsafe extern "C" fn() -> i32,
    interp_head: unsafe extern "C" fn() -> u64,
    thread_head: unsafe extern "C" fn(u64) -> u64,
    /// pthread_self → its thread state, as last found.
    states: HashMap<u64, u64>,
    codes: HashMap<CodeKey, Code>,
    read: Vec<Read>,
    /// The bytecode's addresses of the innermost frame read (3.11+).
    innermost: Option<Range<u64>>,
    /// Samples whose Python frames did not match their eval loops.
    pub mismatched: u64,
}

/// A symbol of the process (global scope).
fn symbol(name: &CStr) -> Option<u64> {
    // SAFETY: a NUL-terminated name; RTLD_DEFAULT searches the global scope.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    (!p.is_null()).then_some(p as u64)
}

unsafe extern "C" {
    fn dladdr1(addr: *const c_void, info: *mut libc::Dl_info, extra: *mut *mut c_void, flags: i32) -> i32;
}

/// The address range of the function at `start` (its ELF symbol's size).
fn function_range(start: u64) -> Option<Range<u64>> {
    const RTLD_DL_SYMENT: i32 = 1;
    // SAFETY: Dl_info is plain data; dladdr1 fills it and points `sym` at
    // the loader's own symbol entry, valid while the object is loaded.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    let mut sym: *mut c_void = std::ptr::null_mut();
    // SAFETY: valid out-pointers for the flag given.
    let ok = unsafe { dladdr1(start as *const c_void, &mut info, &mut sym, RTLD_DL_SYMENT) };
    if ok == 0 || sym.is_null() {
        return None;
    }
    // SAFETY: RTLD_DL_SYMENT makes `sym` an Elf64_Sym of the loaded object.
    let size = unsafe { (*sym.cast::<libc::Elf64_Sym>()).st_size };
    (size > 0).then(|| start..start + size)
}

/// The minor version of the Python 3 in the process.
fn minor_version() -> Option<u32> {
    if let Some(v) = symbol(c"Py_Version") {
        // SAFETY: `Py_Version` (3.11+) is a constant unsigned long.
        let hex = unsafe { *(v as *const u64) };
        return (hex >> 24 == 3).then_some(((hex >> 16) & 0xff) as u32);
    }
    let f = symbol(c"Py_GetVersion")?;
    // SAFETY: `const char *Py_GetVersion(void)`: a static string.
    let s = unsafe { std::mem::transmute::<u64, unsafe extern "C" fn() -> *const libc::c_char>(f)() };
    // SAFETY: a NUL-terminated string of the interpreter.
    let s = unsafe { CStr::from_ptr(s) }.to_str().ok()?;
    let mut parts = s.split(['.', ' ']);
    (parts.next()? == "3").then_some(())?;
    parts.next()?.parse().ok()
}

impl Python {
    /// The interpreter in this process, if there is one of a version read.
    pub fn find() -> Option<Python> {
        let eval = symbol(c"_PyEval_EvalFrameDefault")?;
        let minor = minor_version()?;
        let Some(layout) = LAYOUTS.iter().find(|l| l.minor == minor) else {
            recorder::diag::warn_once(&format!("Python 3.{minor}: its frames are not read (3.10 to 3.13 are)"));
            return None;
        };
        let eval = function_range(eval)?;
        let code_type = symbol(c"PyCode_Type")?;
        let f = |name: &CStr| symbol(name);
        let (init, head, threads) =
            (f(c"Py_IsInitialized")?, f(c"PyInterpreterState_Head")?, f(c"PyInterpreterState_ThreadHead")?);
        tracing::debug!("Python 3.{minor}: reading its frames");
        // SAFETY: the C API's functions of these names and types:
        // `int Py_IsInitialized(void)`, `PyInterpreterState
        // *PyInterpreterState_Head(void)`, `PyThreadState
        // *PyInterpreterState_ThreadHead(PyInterpreterState *)`.
        unsafe {
            Some(Python {
                layout,
                eval,
                code_type,
                initialized: std::mem::transmute::<u64, unsafe extern "C" fn() -> i32>(init),
                interp_head: std::mem::transmute::<u64, unsafe extern "C" fn() -> u64>(head),
                thread_head: std::mem::transmute::<u64, unsafe extern "C" fn(u64) -> u64>(threads),
                states: HashMap::new(),
                codes: HashMap::new(),
                read: Vec::new(),
                innermost: None,
                mismatched: 0,
            })
        }
    }

    /// Reads the Python frames of the thread `pthread` now; `define` is
    /// handed each new code object's definition. False when the thread
    /// has none (or they could not be read).
    pub fn read_thread(&mut self, pthread: u64, define: &mut dyn FnMut(raw::Definition)) -> bool {
        self.read.clear();
        self.innermost = None;
        let ok = self.read_frames(pthread, define).is_some();
        if !ok {
            self.read.clear();
        }
        ok && !self.read.is_empty()
    }

    /// The frames the last [`read_thread`](Self::read_thread) read.
    pub fn frames_read(&self) -> usize {
        self.read.len()
    }

    /// `native` (innermost first) with the frames of the last
    /// [`read_thread`](Self::read_thread) in the places of its eval loops,
    /// into `out`; only the native frames when they do not match.
    ///
    /// They do not match when the counts of eval loops differ, or when the
    /// sample was in a C function called from Python and its stack copy
    /// (`stack`) holds no pointer into the bytecode of the innermost
    /// Python frame read (3.11+): the eval loop keeps its instruction
    /// pointer in a register that the C functions it calls save on the
    /// stack, so a frame that was running at the sample leaves it there;
    /// one that started after the sample (the thread moved on between the
    /// sample and the read) does not.
    pub fn interleave(&mut self, native: &[u64], stack: &[u8], out: &mut Vec<Node>) {
        out.clear();
        let loops = native.iter().filter(|a| self.eval.contains(a)).count();
        let segments = self.read.iter().filter(|r| r.entry).count();
        let called = native.first().is_some_and(|a| !self.eval.contains(a));
        let stale = called
            && self.innermost.as_ref().is_some_and(|code| {
                !stack.chunks_exact(8).any(|w| code.contains(&u64::from_ne_bytes(w.try_into().unwrap())))
            });
        if loops == 0 || loops != segments || stale {
            if !self.read.is_empty() {
                self.mismatched += 1;
            }
            out.extend(native.iter().map(|&a| Node::Native(a)));
            return;
        }
        let mut frames = self.read.iter();
        for &a in native {
            if !self.eval.contains(&a) {
                out.push(Node::Native(a));
                continue;
            }
            for r in frames.by_ref() {
                out.push(r.node);
                if r.entry {
                    break;
                }
            }
        }
    }

    fn read_frames(&mut self, pthread: u64, define: &mut dyn FnMut(raw::Definition)) -> Option<()> {
        // SAFETY: reads `_PyRuntime.initialized`.
        if unsafe { (self.initialized)() } == 0 {
            return None;
        }
        let l = self.layout;
        let state = self.state(pthread)?;
        let mut frame = read_u64(state + l.ts_frame.0)?;
        if let Some(inner) = l.ts_frame.1 {
            frame = if frame == 0 { 0 } else { read_u64(frame + inner)? };
        }
        let mut header = [0u8; 112];
        while frame != 0 && self.read.len() < MAX_FRAMES {
            read(frame, &mut header)?;
            let word = |at: u64| u64::from_ne_bytes(header[at as usize..at as usize + 8].try_into().unwrap());
            let previous = word(l.fr_previous);
            let entry = match (l.minor, l.fr_entry) {
                (10, _) | (_, None) => true,
                (11, Some(at)) => header[at as usize] != 0,
                (_, Some(at)) if header[at as usize] == OWNED_BY_CSTACK => {
                    // The shim before an eval loop's first frame.
                    if let Some(last) = self.read.last_mut() {
                        last.entry = true;
                    }
                    frame = previous;
                    continue;
                }
                _ => false,
            };
            let code = word(l.fr_code);
            let node = self.frame(code, word(l.fr_instr), define)?;
            if self.read.is_empty() {
                self.innermost = self.bytecode(code);
            }
            self.read.push(Read { node, entry });
            frame = previous;
        }
        if let Some(last) = self.read.last_mut() {
            last.entry = true;
        }
        Some(())
    }

    /// The thread state of `pthread`, checked.
    fn state(&mut self, pthread: u64) -> Option<u64> {
        let at = self.layout.ts_thread_id;
        if let Some(&s) = self.states.get(&pthread)
            && read_u64(s + at) == Some(pthread)
        {
            return Some(s);
        }
        // SAFETY: both read a pointer of the runtime (the main interpreter
        // lives as long as the runtime is initialized, checked above).
        let mut s = unsafe { (self.thread_head)((self.interp_head)()) };
        for _ in 0..MAX_THREADS {
            if s == 0 {
                break;
            }
            if read_u64(s + at) == Some(pthread) {
                self.states.insert(pthread, s);
                return Some(s);
            }
            s = read_u64(s + 8)?;
        }
        None
    }

    /// The node of a frame running `code` at instruction `instr`.
    fn frame(&mut self, code: u64, instr: u64, define: &mut dyn FnMut(raw::Definition)) -> Option<Node> {
        let l = self.layout;
        let mut header = [0u8; 208];
        read(code, &mut header)?;
        let word = |at: u64| u64::from_ne_bytes(header[at as usize..at as usize + 8].try_into().unwrap());
        if word(8) != self.code_type {
            return None;
        }
        let first = u32::from_ne_bytes(header[l.co_firstlineno as usize..][..4].try_into().unwrap());
        let (name, file, table) = (word(l.co_name), word(l.co_filename), word(l.co_linetable));
        let key = (code, name, file, first);
        if !self.codes.contains_key(&key) {
            let id = self.codes.len() as u32 + 1;
            let table = bytes(table, 1 << 16).unwrap_or_default();
            let name = self.string(name).unwrap_or_else(|| "[unknown]".into());
            let file = self.string(file).unwrap_or_default();
            define(raw::Definition::PyCode { id, name, file, line: first });
            self.codes.insert(key, Code { id, first, table });
        }
        let c = &self.codes[&key];
        let line = match l.co_code {
            // f_lasti: instructions of 2 bytes, -1 before the first.
            None => u64::try_from(instr as u32 as i32).ok().and_then(|i| lines::line_310(&c.table, c.first, 2 * i)),
            Some(at) => instr.checked_sub(code + at).and_then(|b| lines::line_311(&c.table, c.first, b / 2)),
        };
        Some(Node::Python { code: c.id, line: line.unwrap_or(c.first) })
    }

    /// The addresses of `code`'s bytecode (3.11+: `co_code_adaptive`, of
    /// `ob_size` code units of 2 bytes).
    fn bytecode(&self, code: u64) -> Option<Range<u64>> {
        let start = code + self.layout.co_code?;
        let units = read_u64(code + 16)?.min(1 << 24);
        Some(start..start + 2 * units)
    }

    /// A `str` object's text (compact strings; up to 4 KiB).
    fn string(&self, s: u64) -> Option<String> {
        let l = self.layout;
        let mut h = [0u8; 40];
        read(s, &mut h)?;
        let length = u64::from_ne_bytes(h[16..24].try_into().unwrap()).min(4096) as usize;
        let state = u32::from_ne_bytes(h[32..36].try_into().unwrap());
        let (kind, compact, ascii) = ((state >> 2) & 7, state >> 5 & 1 == 1, state >> 6 & 1 == 1);
        if !compact {
            return None;
        }
        let at = if ascii { l.str_ascii } else { l.str_compact };
        let mut data = vec![0u8; length * kind as usize];
        read(s + at, &mut data)?;
        let chars: Option<String> = match kind {
            1 => Some(data.iter().map(|&b| char::from(b)).collect()),
            2 => data.chunks_exact(2).map(|c| char::from_u32(u32::from(u16::from_ne_bytes([c[0], c[1]])))).collect(),
            4 => data.chunks_exact(4).map(|c| char::from_u32(u32::from_ne_bytes(c.try_into().unwrap()))).collect(),
            _ => None,
        };
        chars
    }
}

/// Reads `out.len()` bytes of this process at `address`; None where any of
/// them is not mapped readable.
fn read(address: u64, out: &mut [u8]) -> Option<()> {
    if address == 0 {
        return None;
    }
    let local = libc::iovec { iov_base: out.as_mut_ptr().cast(), iov_len: out.len() };
    let remote = libc::iovec { iov_base: address as *mut c_void, iov_len: out.len() };
    // SAFETY: `local` is our buffer; the kernel reads `remote` from this
    // process's memory and fails (EFAULT) on unmapped addresses instead
    // of faulting.
    let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    (n == out.len() as isize).then_some(())
}

fn read_u64(address: u64) -> Option<u64> {
    let mut b = [0u8; 8];
    read(address, &mut b)?;
    Some(u64::from_ne_bytes(b))
}

/// A `bytes` object's contents, up to `max` bytes.
fn bytes(object: u64, max: usize) -> Option<Vec<u8>> {
    let size = read_u64(object + 16)? as usize;
    let mut data = vec![0u8; size.min(max)];
    read(object + 32, &mut data)?;
    Some(data)
}
