//! CPython's line tables: from a frame's instruction offset to its source
//! line, in the two formats of the versions read (3.10's address/line
//! pairs, 3.11's location table, kept by 3.12 and 3.13).

/// The line of byte offset `at` in a 3.10 `co_linetable`: pairs of
/// (bytes advanced, signed line delta), a delta of -128 for "no line"
/// (the running line is kept); lines start at `first`.
pub fn line_310(table: &[u8], first: u32, at: u64) -> Option<u32> {
    let (mut line, mut addr) = (i64::from(first), 0u64);
    for pair in table.chunks_exact(2) {
        let (advance, delta) = (u64::from(pair[0]), pair[1] as i8);
        let this = if delta == -128 {
            None
        } else {
            line += i64::from(delta);
            Some(line)
        };
        if (addr..addr + advance).contains(&at) {
            return this.and_then(|l| u32::try_from(l).ok());
        }
        addr += advance;
    }
    None
}

/// The line of code unit `at` in a 3.11+ location table: entries whose
/// first byte is `1 code(4) length-1(3)`; code 15 has no location, 14 a
/// line delta (signed varint) then end line, column and end column
/// (varints), 13 a line delta alone, 10 to 12 a line delta of code − 10
/// and two column bytes, 0 to 9 the same line and one column byte.
pub fn line_311(table: &[u8], first: u32, at: u64) -> Option<u32> {
    let (mut line, mut addr, mut i) = (i64::from(first), 0u64, 0usize);
    while i < table.len() {
        let b = table[i];
        if b & 0x80 == 0 {
            return None;
        }
        i += 1;
        let (code, length) = ((b >> 3) & 15, u64::from(b & 7) + 1);
        let mut known = true;
        match code {
            15 => known = false,
            14 => {
                line += signed(varint(table, &mut i)?);
                for _ in 0..3 {
                    varint(table, &mut i)?;
                }
            }
            13 => line += signed(varint(table, &mut i)?),
            10..=12 => {
                line += i64::from(code) - 10;
                i += 2;
            }
            _ => i += 1,
        }
        if (addr..addr + length).contains(&at) {
            return known.then(|| u32::try_from(line).ok()).flatten();
        }
        addr += length;
    }
    None
}

/// A location table's varint: 6 bits a byte, bit 6 set when more follow.
fn varint(table: &[u8], i: &mut usize) -> Option<u64> {
    let (mut value, mut shift) = (0u64, 0u32);
    loop {
        let b = *table.get(*i)?;
        *i += 1;
        value |= u64::from(b & 63).checked_shl(shift)?;
        if b & 64 == 0 {
            return Some(value);
        }
        shift += 6;
    }
}

/// A signed varint: the sign in the lowest bit.
fn signed(v: u64) -> i64 {
    if v & 1 == 1 { -((v >> 1) as i64) } else { (v >> 1) as i64 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_310_table_gives_the_line_of_each_offset() {
        // 4 bytes at first+1, 6 at first+3, 2 with no line, 2 at first+2.
        let table = [4, 1, 6, 2, 2, 0x80, 2, 0xff];
        assert_eq!(line_310(&table, 10, 0), Some(11));
        assert_eq!(line_310(&table, 10, 9), Some(13));
        assert_eq!(line_310(&table, 10, 10), None);
        assert_eq!(line_310(&table, 10, 12), Some(12));
        assert_eq!(line_310(&table, 10, 14), None);
    }

    #[test]
    fn a_311_table_gives_the_line_of_each_code_unit() {
        let table = [
            0x80 | (13 << 3) | 1, // 2 units, no column: line + 1 (svarint 2)
            2,
            0x80 | (11 << 3) | 2, // 3 units, one line: + 1, two column bytes
            4,
            9,
            0x80 | (15 << 3),     // 1 unit, no location
            0x80 | (14 << 3) | 3, // 4 units, long form: - 2 (svarint 5), end line, columns
            5,
            0,
            1,
            70,
            1,        // 70 = 64 | 6: a varint of two bytes (6 + 1 << 6)
            0x80 | 3, // 4 units, short form: same line
            7,
        ];
        assert_eq!(line_311(&table, 20, 0), Some(21));
        assert_eq!(line_311(&table, 20, 1), Some(21));
        assert_eq!(line_311(&table, 20, 4), Some(22));
        assert_eq!(line_311(&table, 20, 5), None);
        assert_eq!(line_311(&table, 20, 6), Some(20));
        assert_eq!(line_311(&table, 20, 12), Some(20));
        assert_eq!(line_311(&table, 20, 13), Some(20));
        assert_eq!(line_311(&table, 20, 14), None);
    }
}
