//! The process's modules as the loader lists them (`dl_iterate_phdr`:
//! each one's executable addresses, load bias, path and build id) and
//! their unwind sections (`.eh_frame_hdr`, `.eh_frame`, `.text`), mapped
//! from their files for framehop.

use std::ffi::CStr;
use std::ops::{Deref, Range};
use std::sync::Arc;

use object::{Object, ObjectSection};

/// A section of a mapped module file.
pub struct Section {
    map: Arc<memmap2::Mmap>,
    range: Range<usize>,
}

impl Deref for Section {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.map[self.range.clone()]
    }
}

/// A loaded object as `dl_iterate_phdr` shows it.
pub(crate) struct Loaded {
    pub(crate) name: String,
    pub(crate) bias: u64,
    /// Executable segments' addresses, as the file states them.
    pub(crate) exec: Option<Range<u64>>,
    pub(crate) build_id: Vec<u8>,
}

/// The unwind sections of the file at `path`, mapped.
pub(crate) fn sections(path: &str) -> Option<framehop::ExplicitModuleSectionInfo<Section>> {
    let file = std::fs::File::open(path).ok()?;
    // SAFETY: a read-only private mapping of a module file; a file
    // changed under a running program would break the program first.
    let map = Arc::new(unsafe { memmap2::Mmap::map(&file) }.ok()?);
    let elf = object::File::parse(&map[..]).ok()?;
    let mut info = framehop::ExplicitModuleSectionInfo {
        base_svma: 0,
        text_svma: None,
        text: None,
        stubs_svma: None,
        stub_helper_svma: None,
        got_svma: None,
        unwind_info: None,
        eh_frame_svma: None,
        eh_frame: None,
        eh_frame_hdr_svma: None,
        eh_frame_hdr: None,
        debug_frame: None,
        text_segment_svma: None,
        text_segment: None,
    };
    let take = |name: &str| -> Option<(Range<u64>, Section)> {
        let s = elf.section_by_name(name)?;
        let (offset, size) = s.file_range()?;
        let range = offset as usize..(offset + size) as usize;
        Some((s.address()..s.address() + s.size(), Section { map: map.clone(), range }))
    };
    if let Some((svma, data)) = take(".eh_frame") {
        (info.eh_frame_svma, info.eh_frame) = (Some(svma), Some(data));
    }
    if let Some((svma, data)) = take(".eh_frame_hdr") {
        (info.eh_frame_hdr_svma, info.eh_frame_hdr) = (Some(svma), Some(data));
    }
    if let Some((svma, data)) = take(".text") {
        (info.text_svma, info.text) = (Some(svma), Some(data));
    }
    info.got_svma = take(".got").map(|(svma, _)| svma);
    info.debug_frame = take(".debug_frame").map(|(_, data)| data);
    Some(info)
}

/// Every object loaded now.
pub(crate) fn loaded() -> Vec<Loaded> {
    unsafe extern "C" fn each(info: *mut libc::dl_phdr_info, _: usize, out: *mut libc::c_void) -> libc::c_int {
        // SAFETY: the loader passes a valid info for the call's duration;
        // `out` is the vector passed below.
        let (info, out) = unsafe { (&*info, &mut *out.cast::<Vec<Loaded>>()) };
        let name = if info.dlpi_name.is_null() {
            String::new()
        } else {
            // SAFETY: a NUL-terminated name owned by the loader.
            unsafe { CStr::from_ptr(info.dlpi_name) }.to_string_lossy().into_owned()
        };
        let phdrs = if info.dlpi_phdr.is_null() {
            &[][..]
        } else {
            // SAFETY: `dlpi_phnum` headers at `dlpi_phdr`.
            unsafe { std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) }
        };
        let bias = info.dlpi_addr;
        let mut exec: Option<Range<u64>> = None;
        let mut build_id = Vec::new();
        for h in phdrs {
            if h.p_type == libc::PT_LOAD && h.p_flags & libc::PF_X != 0 {
                let r = h.p_vaddr..h.p_vaddr + h.p_memsz;
                exec = Some(exec.map_or(r.clone(), |e| e.start.min(r.start)..e.end.max(r.end)));
            } else if h.p_type == libc::PT_NOTE && build_id.is_empty() {
                // SAFETY: a loaded note segment is mapped readable.
                let notes = unsafe { std::slice::from_raw_parts((bias + h.p_vaddr) as *const u8, h.p_memsz as usize) };
                build_id = gnu_build_id(notes).unwrap_or_default();
            }
        }
        out.push(Loaded { name, bias, exec, build_id });
        0
    }
    let mut out: Vec<Loaded> = Vec::new();
    // SAFETY: `each` matches the callback type and only uses `out`.
    unsafe { libc::dl_iterate_phdr(Some(each), (&mut out as *mut Vec<Loaded>).cast()) };
    out
}

/// The GNU build id among ELF notes (type 3, name "GNU").
fn gnu_build_id(mut notes: &[u8]) -> Option<Vec<u8>> {
    let word = |b: &[u8], at: usize| b.get(at..at + 4).map(|w| u32::from_ne_bytes(w.try_into().unwrap()) as usize);
    while notes.len() >= 12 {
        let (namesz, descsz, ty) = (word(notes, 0)?, word(notes, 4)?, word(notes, 8)?);
        let name_end = 12 + namesz.next_multiple_of(4);
        let desc_end = name_end + descsz.next_multiple_of(4);
        if ty == 3 && notes.get(12..12 + namesz)? == b"GNU\0" {
            return notes.get(name_end..name_end + descsz).map(<[u8]>::to_vec);
        }
        notes = notes.get(desc_end..)?;
    }
    None
}

/// The loader's count of objects loaded plus unloaded so far: a scan
/// is due when it changed.
pub(crate) fn loads() -> u64 {
    unsafe extern "C" fn first(info: *mut libc::dl_phdr_info, _: usize, out: *mut libc::c_void) -> libc::c_int {
        // SAFETY: the loader passes a valid info for the call's duration;
        // `out` is the u64 passed below.
        let (info, out) = unsafe { (&*info, &mut *out.cast::<u64>()) };
        *out = info.dlpi_adds.wrapping_add(info.dlpi_subs);
        1
    }
    let mut n = 0u64;
    // SAFETY: `first` matches the callback type and only writes `n`.
    unsafe { libc::dl_iterate_phdr(Some(first), (&mut n as *mut u64).cast()) };
    n
}
