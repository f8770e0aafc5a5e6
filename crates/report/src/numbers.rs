//! The one set of number formatters of every report and of the run
//! summary.

/// 1234567 → "1,234,567".
pub fn thousands(n: impl Into<u128>) -> String {
    let digits = n.into().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Nanoseconds in a readable unit: "850 ns", "12.3 us", "4.56 ms", "1.23 s".
pub fn human_ns(ns: impl Into<u128>) -> String {
    let ns = ns.into();
    let v = ns as f64;
    if v >= 1e9 {
        format!("{:.2} s", v / 1e9)
    } else if v >= 1e6 {
        format!("{:.2} ms", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1} us", v / 1e3)
    } else {
        format!("{ns} ns")
    }
}

/// Bytes in binary units: "512 B", "1.5 KiB", "3.2 MiB", "1.1 GiB".
pub fn human_bytes(b: impl Into<u128>) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let b = b.into();
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 { format!("{b} B") } else { format!("{v:.1} {}", UNITS[u]) }
}

/// "" for one, `suffix` for any other count.
pub fn plural(n: impl Into<u128>, suffix: &str) -> &str {
    if n.into() == 1 { "" } else { suffix }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_well() {
        assert_eq!(thousands(1_234_567u64), "1,234,567");
        assert_eq!(thousands(999u64), "999");
        assert_eq!(thousands(1000u32), "1,000");
        assert_eq!(human_ns(850u64), "850 ns");
        assert_eq!(human_ns(1500u64), "1.5 us");
        assert_eq!(human_ns(4_560_000u64), "4.56 ms");
        assert_eq!(human_ns(1_230_000_000u64), "1.23 s");
        assert_eq!(human_bytes(1536u64), "1.5 KiB");
        assert_eq!(human_bytes(10u64), "10 B");
        assert_eq!(plural(1u8, "es"), "");
        assert_eq!(plural(2u8, "es"), "es");
    }
}
