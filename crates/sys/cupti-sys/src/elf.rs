//! The SONAME of a shared library file, read from its ELF dynamic section,
//! and the CUDA major version a CUPTI SONAME carries (`libcupti.so.12` → 12,
//! `libcupti.so.11.8` → 11). CUPTI 11.8 and 12.0/12.1 report the same API
//! version (18); the SONAME is what tells them apart. It also ranks
//! discovery candidates whose file name carries no version (a year-numbered
//! `libcupti.so.2025.3.1`, a bare `libcupti.so`).
//!
//! Only 64-bit little-endian ELF is read; anything else gives `None`.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const DT_NULL: u64 = 0;
const DT_STRTAB: u64 = 5;
const DT_SONAME: u64 = 14;
/// Bound on what is read from the file, against a corrupt header.
const MAX_TABLE: u64 = 1 << 20;

/// The `DT_SONAME` of the ELF file at `path`, if it has one.
pub fn soname(path: &Path) -> Option<String> {
    let file = File::open(path).ok()?;
    let header = read(&file, 0, 64)?;
    if header[..4] != *b"\x7fELF" || header[4] != 2 || header[5] != 1 {
        return None; // not ELF, not 64-bit, or not little-endian
    }
    let phoff = u64_at(&header, 32)?;
    let phentsize = u64::from(u16_at(&header, 54)?);
    let phnum = u64::from(u16_at(&header, 56)?);
    if phentsize < 56 || phentsize * phnum > MAX_TABLE {
        return None;
    }
    let table = read(&file, phoff, phentsize * phnum)?;

    // (vaddr, offset, filesz) of each loaded segment, and the dynamic one.
    let mut loads = Vec::new();
    let mut dynamic = None;
    for entry in table.chunks_exact(usize::try_from(phentsize).ok()?) {
        let kind = u32_at(entry, 0)?;
        let (offset, vaddr, filesz) = (u64_at(entry, 8)?, u64_at(entry, 16)?, u64_at(entry, 32)?);
        match kind {
            PT_LOAD => loads.push((vaddr, offset, filesz)),
            PT_DYNAMIC => dynamic = Some((offset, filesz.min(MAX_TABLE))),
            _ => {}
        }
    }
    let (dyn_offset, dyn_size) = dynamic?;
    let entries = read(&file, dyn_offset, dyn_size)?;

    let (mut strtab, mut name) = (None, None);
    for entry in entries.chunks_exact(16) {
        let (tag, value) = (u64_at(entry, 0)?, u64_at(entry, 8)?);
        match tag {
            DT_NULL => break,
            DT_STRTAB => strtab = Some(value),
            DT_SONAME => name = Some(value),
            _ => {}
        }
    }
    // DT_STRTAB is an address; find the file offset of the segment holding it.
    let strtab = strtab?;
    let strtab_offset = loads.iter().find_map(|&(vaddr, offset, filesz)| {
        (vaddr..vaddr.checked_add(filesz)?).contains(&strtab).then(|| strtab - vaddr + offset)
    })?;
    let start = strtab_offset.checked_add(name?)?;
    let bytes = read(&file, start, 256).or_else(|| read(&file, start, 64)).or_else(|| read(&file, start, 16))?;
    let end = bytes.iter().position(|&b| b == 0)?;
    String::from_utf8(bytes[..end].to_vec()).ok()
}

/// The CUDA major version in a CUPTI library name: the first number after
/// `libcupti.so.`, if it is a plausible CUDA major (below 100; CUDA's own
/// file names use years, `libcupti.so.2025.3.1`, which say nothing).
pub fn cupti_major(name: &str) -> Option<u32> {
    let rest = name.rsplit('/').next()?.strip_prefix("libcupti.so.")?;
    let major: u32 = rest.split('.').next()?.parse().ok()?;
    (major < 100).then_some(major)
}

fn read(file: &File, offset: u64, len: u64) -> Option<Vec<u8>> {
    let mut buf = vec![0; usize::try_from(len).ok()?];
    file.read_exact_at(&mut buf, offset).ok()?;
    Some(buf)
}

fn u16_at(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(bytes.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_soname_of_the_c_library() {
        // The C library this test runs against: found through dladdr on one
        // of its functions, so the test needs no fixed path.
        let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
        // SAFETY: dladdr only writes `info`; the address is a function of
        // the C library, which is loaded.
        let found = unsafe { libc::dladdr(libc::malloc as *const libc::c_void, info.as_mut_ptr()) };
        assert_ne!(found, 0, "dladdr found no object for malloc");
        // SAFETY: dladdr succeeded, so it filled `info`.
        let info = unsafe { info.assume_init() };
        // SAFETY: dli_fname is a NUL-terminated path owned by the loader.
        let path = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
        let path = Path::new(path.to_str().unwrap());
        assert_eq!(soname(path).as_deref(), Some("libc.so.6"), "{}", path.display());
    }

    #[test]
    fn non_elf_files_have_no_soname() {
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("libcupti.so.13");
        std::fs::write(&fake, b"not an ELF file").unwrap();
        assert_eq!(soname(&fake), None);
        assert_eq!(soname(&dir.path().join("absent")), None);
        let short = dir.path().join("short");
        std::fs::write(&short, b"\x7fELF\x02\x01").unwrap();
        assert_eq!(soname(&short), None);
    }

    #[test]
    fn major_from_cupti_names() {
        assert_eq!(cupti_major("libcupti.so.12"), Some(12));
        assert_eq!(cupti_major("libcupti.so.13"), Some(13));
        assert_eq!(cupti_major("libcupti.so.11.8"), Some(11));
        assert_eq!(cupti_major("/usr/local/cuda/lib/libcupti.so.13.0.85"), Some(13));
        assert_eq!(cupti_major("libcupti.so.2025.3.1"), None);
        assert_eq!(cupti_major("libcupti.so"), None);
        assert_eq!(cupti_major("libcuda.so.1"), None);
    }
}
