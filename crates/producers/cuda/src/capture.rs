//! Captured CUPTI activity buffers: the records exactly as CUPTI wrote
//! them, with the strings their pointers named, so that the agent's
//! decoding and conversion can be tested where there is no GPU.
//!
//! With `GPUTRACE_CUDA_CAPTURE=<dir>` (a developer setting, see
//! docs/testing.md) the agent writes every completed buffer it processes
//! to `<dir>/<pid>-<n>.cupti`:
//!
//! ```text
//! "GTCUPTI2" | api version u32 | library major u32 (0 = unknown) | dropped u64
//! | records u64 | per record: length u32, bytes
//! | strings u64 | per string: pointer u64, length u32, UTF-8 bytes
//! | API names u64 | per name: domain u8 (1 driver, 2 runtime), cbid u32, length u32, bytes
//! [ | copy ends u64 | per copy: correlation u32, source u64, destination u64 ]
//! ```
//!
//! The copy ends (the addresses the copy calls named, with `memory`) are
//! optional: captures made before they existed end after the API names.
//! `dropped` is what `cuptiActivityGetNumDroppedRecords` reported since
//! the previous capture (records CUPTI had no buffer for); captures of
//! the first format, "GTCUPTI1", have no such field and read as 0.
//!
//! All integers are little-endian. A binary format written by hand, not
//! serde: the records are CUPTI's bytes, kept verbatim for the decoder.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::path::Path;

use crate::records::{ApiDomain, Strings};

const MAGIC: &[u8; 8] = b"GTCUPTI2";
const MAGIC_V1: &[u8; 8] = b"GTCUPTI1";

/// The contents of one captured buffer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Capture {
    pub api_version: u32,
    pub library_major: u32,
    /// Records CUPTI dropped since the previous capture.
    pub dropped: u64,
    pub records: Vec<Vec<u8>>,
    pub strings: HashMap<u64, String>,
    pub api_names: HashMap<(ApiDomain, u32), String>,
    /// Copy correlation id → (source, destination) addresses.
    pub copy_ends: HashMap<u32, (u64, u64)>,
}

impl Strings for Capture {
    fn get(&self, ptr: u64) -> Option<String> {
        self.strings.get(&ptr).cloned()
    }
}

fn domain_code(d: ApiDomain) -> u8 {
    match d {
        ApiDomain::Driver => 1,
        ApiDomain::Runtime => 2,
    }
}

impl Capture {
    pub fn write(&self, out: &mut impl Write) -> io::Result<()> {
        out.write_all(MAGIC)?;
        out.write_all(&self.api_version.to_le_bytes())?;
        out.write_all(&self.library_major.to_le_bytes())?;
        out.write_all(&self.dropped.to_le_bytes())?;
        out.write_all(&(self.records.len() as u64).to_le_bytes())?;
        for r in &self.records {
            out.write_all(&(r.len() as u32).to_le_bytes())?;
            out.write_all(r)?;
        }
        let mut strings: Vec<_> = self.strings.iter().collect();
        strings.sort();
        out.write_all(&(strings.len() as u64).to_le_bytes())?;
        for (ptr, s) in strings {
            out.write_all(&ptr.to_le_bytes())?;
            out.write_all(&(s.len() as u32).to_le_bytes())?;
            out.write_all(s.as_bytes())?;
        }
        let mut names: Vec<_> = self.api_names.iter().map(|((d, c), n)| (domain_code(*d), *c, n)).collect();
        names.sort();
        out.write_all(&(names.len() as u64).to_le_bytes())?;
        for (d, cbid, n) in names {
            out.write_all(&[d])?;
            out.write_all(&cbid.to_le_bytes())?;
            out.write_all(&(n.len() as u32).to_le_bytes())?;
            out.write_all(n.as_bytes())?;
        }
        if !self.copy_ends.is_empty() {
            let mut ends: Vec<_> = self.copy_ends.iter().collect();
            ends.sort();
            out.write_all(&(ends.len() as u64).to_le_bytes())?;
            for (correlation, (src, dst)) in ends {
                out.write_all(&correlation.to_le_bytes())?;
                out.write_all(&src.to_le_bytes())?;
                out.write_all(&dst.to_le_bytes())?;
            }
        }
        Ok(())
    }

    pub fn read(input: &mut impl Read) -> io::Result<Capture> {
        let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, format!("bad CUPTI capture: {what}"));
        let mut magic = [0u8; 8];
        input.read_exact(&mut magic)?;
        if &magic != MAGIC && &magic != MAGIC_V1 {
            return Err(bad("no magic"));
        }
        let mut c = Capture { api_version: u32_le(input)?, library_major: u32_le(input)?, ..Capture::default() };
        if &magic == MAGIC {
            c.dropped = u64_le(input)?;
        }
        for _ in 0..u64_le(input)? {
            let n = u32_le(input)? as usize;
            if n > 1 << 20 {
                return Err(bad("record too long"));
            }
            let mut r = vec![0u8; n];
            input.read_exact(&mut r)?;
            c.records.push(r);
        }
        for _ in 0..u64_le(input)? {
            let ptr = u64_le(input)?;
            c.strings.insert(ptr, string(input)?);
        }
        for _ in 0..u64_le(input)? {
            let mut d = [0u8; 1];
            input.read_exact(&mut d)?;
            let domain = match d[0] {
                1 => ApiDomain::Driver,
                2 => ApiDomain::Runtime,
                _ => return Err(bad("unknown API domain")),
            };
            let cbid = u32_le(input)?;
            c.api_names.insert((domain, cbid), string(input)?);
        }
        // The optional section: its absence is the end of the input.
        let mut count = [0u8; 8];
        if input.read(&mut count[..1])? == 0 {
            return Ok(c);
        }
        input.read_exact(&mut count[1..])?;
        for _ in 0..u64::from_le_bytes(count) {
            let correlation = u32_le(input)?;
            c.copy_ends.insert(correlation, (u64_le(input)?, u64_le(input)?));
        }
        Ok(c)
    }

    pub fn load(path: &Path) -> io::Result<Capture> {
        Capture::read(&mut io::BufReader::new(std::fs::File::open(path)?))
    }
}

fn u32_le(r: &mut impl Read) -> io::Result<u32> {
    let mut b = [0u8; 4];
    r.read_exact(&mut b)?;
    Ok(u32::from_le_bytes(b))
}

fn u64_le(r: &mut impl Read) -> io::Result<u64> {
    let mut b = [0u8; 8];
    r.read_exact(&mut b)?;
    Ok(u64::from_le_bytes(b))
}

fn string(r: &mut impl Read) -> io::Result<String> {
    let n = u32_le(r)? as usize;
    if n > 1 << 20 {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "bad CUPTI capture: string too long"));
    }
    let mut b = vec![0u8; n];
    r.read_exact(&mut b)?;
    Ok(String::from_utf8_lossy(&b).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_round_trip() {
        let mut c = Capture { api_version: 130001, library_major: 13, ..Default::default() };
        c.records.push(vec![10, 0, 0, 0, 1, 2, 3]);
        c.strings.insert(0xdead, "_Z6kernelPf".into());
        c.api_names.insert((ApiDomain::Runtime, 211), "cudaLaunchKernel_v7000".into());
        let mut buf = Vec::new();
        c.write(&mut buf).unwrap();
        assert_eq!(Capture::read(&mut buf.as_slice()).unwrap(), c);
        assert!(Capture::read(&mut &buf[..buf.len() - 3]).is_err());
        assert!(Capture::read(&mut &b"GTCUPTI0"[..]).is_err());
        // With copy ends; cut anywhere in them, it is an error too.
        c.copy_ends.insert(7, (0x1000, 0x2000));
        let mut buf = Vec::new();
        c.write(&mut buf).unwrap();
        assert_eq!(Capture::read(&mut buf.as_slice()).unwrap(), c);
        for cut in [3, 20, 25] {
            assert!(Capture::read(&mut &buf[..buf.len() - cut]).is_err(), "cut {cut}");
        }
        // A drop count; the first format (no such field) reads as none.
        c.dropped = 1234;
        let mut buf = Vec::new();
        c.write(&mut buf).unwrap();
        assert_eq!(Capture::read(&mut buf.as_slice()).unwrap(), c);
        let mut v1 = b"GTCUPTI1".to_vec();
        v1.extend_from_slice(&buf[8..16]);
        v1.extend_from_slice(&buf[24..]);
        assert_eq!(Capture::read(&mut v1.as_slice()).unwrap(), Capture { dropped: 0, ..c });
    }
}
