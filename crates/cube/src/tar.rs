//! The POSIX tar (ustar) container of a `.cubex` file: a 512-byte header
//! per member, its bytes padded to 512, two zero blocks at the end. A
//! member too large for the header's 11 octal digits (8 GiB) gets a pax
//! extended header with its size, as CubeLib's writer does.

use std::io::{self, Write};
use std::time::{SystemTime, UNIX_EPOCH};

const BLOCK: usize = 512;

/// Largest size the ustar header's size field holds.
const USTAR_MAX: u64 = 0o77777777777;

pub struct Writer<'a, W: Write + ?Sized> {
    out: &'a mut W,
    mtime: u64,
}

impl<'a, W: Write + ?Sized> Writer<'a, W> {
    pub fn new(out: &'a mut W) -> Self {
        let mtime = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        Writer { out, mtime }
    }

    /// A whole member.
    pub fn file(&mut self, name: &str, bytes: &[u8]) -> io::Result<()> {
        let out = self.begin(name, bytes.len() as u64)?;
        out.write_all(bytes)?;
        self.end(bytes.len() as u64)
    }

    /// The header of a member of `size` bytes; its bytes follow through
    /// the returned writer, then [`end`](Self::end).
    pub fn begin(&mut self, name: &str, size: u64) -> io::Result<&mut W> {
        if size > USTAR_MAX {
            let record = pax_size_record(size);
            let pax_name = format!("PaxHeader/{name}");
            self.out.write_all(&header(&pax_name, record.len() as u64, b'x', self.mtime))?;
            self.out.write_all(&record)?;
            self.pad(record.len() as u64)?;
        }
        self.out.write_all(&header(name, size.min(USTAR_MAX), b'0', self.mtime))?;
        Ok(&mut *self.out)
    }

    /// Ends a member of `size` bytes.
    pub fn end(&mut self, size: u64) -> io::Result<()> {
        self.pad(size)
    }

    fn pad(&mut self, size: u64) -> io::Result<()> {
        let rest = (size % BLOCK as u64) as usize;
        if rest != 0 {
            self.out.write_all(&[0u8; BLOCK][..BLOCK - rest])?;
        }
        Ok(())
    }

    /// The end of the archive.
    pub fn finish(self) -> io::Result<()> {
        self.out.write_all(&[0u8; 2 * BLOCK])?;
        self.out.flush()
    }
}

/// A ustar header block.
fn header(name: &str, size: u64, typeflag: u8, mtime: u64) -> [u8; BLOCK] {
    let mut h = [0u8; BLOCK];
    let n = name.as_bytes();
    let n = &n[..n.len().min(100)];
    h[..n.len()].copy_from_slice(n);
    octal(&mut h[100..108], 0o600);
    octal(&mut h[108..116], 0);
    octal(&mut h[116..124], 0);
    octal(&mut h[124..136], size);
    octal(&mut h[136..148], mtime);
    h[156] = typeflag;
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    // The checksum is computed with its own field as spaces.
    h[148..156].fill(b' ');
    let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
    let digits = format!("{sum:06o}");
    h[148..154].copy_from_slice(digits.as_bytes());
    h[154] = 0;
    h[155] = b' ';
    h
}

/// `value` in octal, zero-padded, NUL-terminated, filling `field`.
fn octal(field: &mut [u8], value: u64) {
    let width = field.len() - 1;
    let digits = format!("{value:0width$o}");
    field[..width].copy_from_slice(&digits.as_bytes()[digits.len() - width..]);
    field[width] = 0;
}

/// The pax record `LEN size=SIZE\n`, LEN counting the whole record.
fn pax_size_record(size: u64) -> Vec<u8> {
    let body = format!(" size={size}\n");
    let mut len = body.len() + 1;
    while format!("{len}").len() + body.len() != len {
        len = format!("{len}").len() + body.len();
    }
    format!("{len}{body}").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pax_record_counts_its_own_length() {
        for size in [0u64, 9, 1 << 33, u64::MAX] {
            let r = pax_size_record(size);
            let text = String::from_utf8(r.clone()).unwrap();
            let (len, rest) = text.split_once(' ').unwrap();
            assert_eq!(len.parse::<usize>().unwrap(), r.len(), "{text:?}");
            assert_eq!(rest, format!("size={size}\n"));
        }
    }

    #[test]
    fn a_header_has_a_valid_checksum_and_octal_fields() {
        let h = header("0.data", 1234, b'0', 1_700_000_000);
        let stored = u32::from_str_radix(std::str::from_utf8(&h[148..154]).unwrap(), 8).unwrap();
        let mut copy = h;
        copy[148..156].fill(b' ');
        assert_eq!(stored, copy.iter().map(|&b| u32::from(b)).sum::<u32>());
        assert_eq!(&h[124..136], b"00000002322\0");
        assert_eq!(&h[257..265], b"ustar\x0000");
    }
}
