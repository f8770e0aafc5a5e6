//! LEB128 variable-length integers, the building block of the raw format.
//!
//! Private to this crate: readers decode through [`crate::reader`]
//! (`Events`, `OwnedEvents`). Hand-written rather than a crate's: the
//! encoder runs on every traced call, into a mapped page, allocation-free.
//!
//! Unsigned values use plain LEB128 (7 bits a byte, low bits first); signed
//! values are zigzag-mapped first so that small negative numbers stay short.
//! Timestamps are written as zigzag deltas from the previous event, which
//! keeps a typical event at three to six bytes.
//!
//! Hand-written rather than a LEB128 crate: it is the recording hot path,
//! encoding straight into a mapped slot through [`Sink`] without a `Write`.

/// The longest encoding of a `u64`.
pub const MAX_LEN: usize = 10;

/// Where encoded bytes go: a growing `Vec`, or a mapped slot's room
/// ([`RoomSink`]), which events are encoded into directly.
pub trait Sink {
    fn push(&mut self, byte: u8);
}

impl Sink for Vec<u8> {
    #[inline]
    fn push(&mut self, byte: u8) {
        Vec::push(self, byte);
    }
}

/// Bytes written through a raw cursor into room the caller has checked:
/// the recording hot path's sink. A slice cursor would compare its
/// position with the slice's end on every byte; an events slot already
/// knows that its room holds the longest events it is given
/// (`Slot::fits`), so this one does not (debug builds still check).
#[derive(Debug)]
pub struct RoomSink<'a> {
    at: *mut u8,
    start: *mut u8,
    #[cfg(debug_assertions)]
    end: *mut u8,
    _room: std::marker::PhantomData<&'a mut [u8]>,
}

impl<'a> RoomSink<'a> {
    /// A sink writing from the start of `room`.
    ///
    /// # Safety
    /// The caller must not push more than `room.len()` bytes.
    #[inline]
    pub unsafe fn new(room: &'a mut [u8]) -> Self {
        let start = room.as_mut_ptr();
        RoomSink {
            at: start,
            start,
            #[cfg(debug_assertions)]
            // SAFETY: one past the end of `room`.
            end: unsafe { start.add(room.len()) },
            _room: std::marker::PhantomData,
        }
    }

    /// Bytes written so far.
    #[allow(clippy::len_without_is_empty)] // a cursor, not a collection
    #[inline]
    pub fn len(&self) -> usize {
        self.at as usize - self.start as usize
    }
}

impl Sink for RoomSink<'_> {
    #[inline(always)]
    fn push(&mut self, byte: u8) {
        #[cfg(debug_assertions)]
        assert!(self.at < self.end, "RoomSink written past its room");
        // SAFETY: `new`'s contract: fewer than `room.len()` bytes were
        // written before this one.
        unsafe {
            self.at.write(byte);
            self.at = self.at.add(1);
        }
    }
}

/// Appends `value` to `out` as unsigned LEB128.
#[inline]
pub fn put_u64<S: Sink + ?Sized>(out: &mut S, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Appends `value` to `out` zigzag-mapped, as LEB128.
#[inline]
pub fn put_i64<S: Sink + ?Sized>(out: &mut S, value: i64) {
    put_u64(out, zigzag(value));
}

/// Maps a signed value onto an unsigned one, small magnitudes first.
#[inline]
pub fn zigzag(value: i64) -> u64 {
    ((value << 1) ^ (value >> 63)) as u64
}

/// Inverse of [`zigzag`].
#[inline]
pub fn unzigzag(value: u64) -> i64 {
    ((value >> 1) as i64) ^ -((value & 1) as i64)
}

/// A cursor over encoded bytes; every read fails cleanly at the end of the
/// input or on an over-long encoding instead of panicking, because the input
/// may be a damaged file.
#[derive(Debug, Clone)]
pub struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

/// The input ended or held an invalid encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed;

impl<'a> Cursor<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Cursor { bytes, pos: 0 }
    }

    pub fn is_empty(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    pub fn position(&self) -> usize {
        self.pos
    }

    #[inline]
    pub fn u8(&mut self) -> Result<u8, Malformed> {
        let b = *self.bytes.get(self.pos).ok_or(Malformed)?;
        self.pos += 1;
        Ok(b)
    }

    #[inline]
    pub fn u64(&mut self) -> Result<u64, Malformed> {
        let mut value = 0u64;
        let mut shift = 0u32;
        loop {
            let b = self.u8()?;
            if shift == 63 && b > 1 {
                return Err(Malformed);
            }
            value |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(value);
            }
            shift += 7;
            if shift > 63 {
                return Err(Malformed);
            }
        }
    }

    #[inline]
    pub fn u32(&mut self) -> Result<u32, Malformed> {
        u32::try_from(self.u64()?).map_err(|_| Malformed)
    }

    #[inline]
    pub fn i64(&mut self) -> Result<i64, Malformed> {
        Ok(unzigzag(self.u64()?))
    }

    #[inline]
    pub fn i32(&mut self) -> Result<i32, Malformed> {
        i32::try_from(self.i64()?).map_err(|_| Malformed)
    }

    /// A length-prefixed byte string.
    pub fn bytes(&mut self) -> Result<&'a [u8], Malformed> {
        let len = usize::try_from(self.u64()?).map_err(|_| Malformed)?;
        let end = self.pos.checked_add(len).ok_or(Malformed)?;
        let slice = self.bytes.get(self.pos..end).ok_or(Malformed)?;
        self.pos = end;
        Ok(slice)
    }

    /// A length-prefixed string; invalid UTF-8 is replaced, not rejected.
    pub fn string(&mut self) -> Result<String, Malformed> {
        Ok(String::from_utf8_lossy(self.bytes()?).into_owned())
    }
}

/// Appends a length-prefixed byte string.
pub fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_u64(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_edge_values() {
        let values = [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX - 1, u64::MAX];
        let mut buf = Vec::new();
        for v in values {
            put_u64(&mut buf, v);
        }
        let mut c = Cursor::new(&buf);
        for v in values {
            assert_eq!(c.u64().unwrap(), v);
        }
        assert!(c.is_empty());
        assert_eq!(c.u64(), Err(Malformed));
    }

    #[test]
    fn zigzag_keeps_small_magnitudes_short() {
        for v in [-1i64, 1, -64, 63, i64::MIN, i64::MAX, 0] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
        let mut buf = Vec::new();
        put_i64(&mut buf, -3);
        assert_eq!(buf.len(), 1);
    }

    #[test]
    fn rejects_truncated_and_overlong_input() {
        assert_eq!(Cursor::new(&[0x80]).u64(), Err(Malformed));
        assert_eq!(Cursor::new(&[0xff; 11]).u64(), Err(Malformed));
        let mut buf = Vec::new();
        put_u64(&mut buf, 10);
        buf.extend_from_slice(b"abc");
        assert_eq!(Cursor::new(&buf).bytes(), Err(Malformed));
    }
}
