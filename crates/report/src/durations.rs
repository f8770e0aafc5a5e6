//! Statistics of many values per name — durations in ns, or sizes in
//! bytes — with an exact median in bounded memory.
//!
//! Count, total, minimum, maximum, mean and standard deviation are
//! streaming (Welford's update). The median needs the values: each name
//! keeps them, 4 bytes each while they fit in `u32` (below 4.29 s or
//! 4 GiB; larger ones go to a separate `u64` list, all of whose values are
//! larger, so the k-th smallest is found in one list or the other). A
//! [`Table`] shares one budget of stored values between all its names
//! (16 Mi values, 64 MiB, by default): when it runs out, the name holding
//! the most values gives them up for a log-linear histogram of 512
//! sub-buckets per power of two, and its median from then on is an
//! estimate within 0.1 % ([`Stats::median_is_exact`] says which). Traces
//! of up to 16 million regions — far beyond what the terminal reports
//! are for — get exact medians everywhere.

use std::collections::BTreeMap;

/// Values stored exactly, over all names of a table, before the largest
/// name switches to a histogram.
pub const DEFAULT_BUDGET: usize = 16 << 20;

/// Mantissa bits of the histogram: 2^(P-1) sub-buckets per octave.
const P: u32 = 10;

/// The values of one name.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    count: u64,
    total: u128,
    min: u64,
    max: u64,
    mean: f64,
    m2: f64,
    store: Store,
}

#[derive(Clone, Debug)]
enum Store {
    Exact { small: Vec<u32>, large: Vec<u64> },
    Histogram(BTreeMap<u32, u64>),
}

impl Default for Store {
    fn default() -> Self {
        Store::Exact { small: Vec::new(), large: Vec::new() }
    }
}

impl Stats {
    fn add(&mut self, v: u64) -> bool {
        self.count += 1;
        self.total += u128::from(v);
        if self.count == 1 {
            self.min = v;
            self.max = v;
        } else {
            self.min = self.min.min(v);
            self.max = self.max.max(v);
        }
        let x = v as f64;
        let delta = x - self.mean;
        self.mean += delta / self.count as f64;
        self.m2 += delta * (x - self.mean);
        match &mut self.store {
            Store::Exact { small, large } => {
                match u32::try_from(v) {
                    Ok(s) => small.push(s),
                    Err(_) => large.push(v),
                }
                true
            }
            Store::Histogram(h) => {
                *h.entry(bucket(v)).or_insert(0) += 1;
                false
            }
        }
    }

    fn stored(&self) -> usize {
        match &self.store {
            Store::Exact { small, large } => small.len() + large.len(),
            Store::Histogram(_) => 0,
        }
    }

    /// Gives up the exact values for a histogram; returns how many were freed.
    fn make_histogram(&mut self) -> usize {
        let freed = self.stored();
        if let Store::Exact { small, large } = &self.store {
            let mut h = BTreeMap::new();
            for v in small.iter().map(|&s| u64::from(s)).chain(large.iter().copied()) {
                *h.entry(bucket(v)).or_insert(0) += 1;
            }
            self.store = Store::Histogram(h);
        }
        freed
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn total(&self) -> u128 {
        self.total
    }

    pub fn min(&self) -> u64 {
        self.min
    }

    pub fn max(&self) -> u64 {
        self.max
    }

    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// Sample standard deviation (n − 1), as nsys reports; 0 for one value.
    pub fn stddev(&self) -> f64 {
        if self.count < 2 { 0.0 } else { (self.m2 / (self.count - 1) as f64).max(0.0).sqrt() }
    }

    /// Whether [`median`](Self::median) is exact.
    pub fn median_is_exact(&self) -> bool {
        matches!(self.store, Store::Exact { .. })
    }

    /// The median: the middle value, or the mean of the two middle values
    /// for an even count.
    pub fn median(&mut self) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let n = self.count;
        let (lo, hi) = ((n - 1) / 2, n / 2);
        if lo == hi { self.kth(lo) as f64 } else { (self.kth(lo) as f64 + self.kth(hi) as f64) / 2.0 }
    }

    /// The k-th smallest value (0-based); a bucket's midpoint once the
    /// values became a histogram.
    fn kth(&mut self, k: u64) -> u64 {
        match &mut self.store {
            Store::Exact { small, large } => {
                let k = k as usize;
                if k < small.len() {
                    u64::from(*small.select_nth_unstable(k).1)
                } else {
                    *large.select_nth_unstable(k - small.len()).1
                }
            }
            Store::Histogram(h) => {
                let mut seen = 0;
                for (&b, &c) in h.iter() {
                    seen += c;
                    if seen > k {
                        return bucket_mid(b).clamp(self.min, self.max);
                    }
                }
                self.max
            }
        }
    }
}

/// The histogram bucket of `v`: exact below 2^P, then 2^(P-1) buckets per
/// power of two.
fn bucket(v: u64) -> u32 {
    if v < (1 << P) {
        return v as u32;
    }
    let e = 63 - v.leading_zeros();
    let shift = e - (P - 1);
    shift * (1 << (P - 1)) + (v >> shift) as u32
}

/// The middle of bucket `b`'s range.
fn bucket_mid(b: u32) -> u64 {
    if b < (1 << P) {
        return u64::from(b);
    }
    let half = 1u32 << (P - 1);
    let shift = b / half - 1;
    let m = u64::from(b - shift * half);
    let low = m << shift;
    low + ((1u64 << shift) >> 1)
}

/// Statistics for many names sharing one budget of stored values.
#[derive(Clone, Debug)]
pub struct Table {
    entries: Vec<Stats>,
    budget: usize,
    stored: usize,
}

impl Default for Table {
    fn default() -> Self {
        Self::with_budget(DEFAULT_BUDGET)
    }
}

impl Table {
    pub fn with_budget(budget: usize) -> Self {
        Self { entries: Vec::new(), budget, stored: 0 }
    }

    /// A new name's slot.
    pub fn slot(&mut self) -> usize {
        self.entries.push(Stats::default());
        self.entries.len() - 1
    }

    pub fn add(&mut self, slot: usize, v: u64) {
        if self.entries[slot].add(v) {
            self.stored += 1;
            if self.stored > self.budget {
                self.shrink();
            }
        }
    }

    /// The name holding the most values switches to a histogram.
    fn shrink(&mut self) {
        if let Some(big) = self.entries.iter_mut().max_by_key(|s| s.stored()) {
            self.stored -= big.make_histogram();
        }
    }

    pub fn get_mut(&mut self, slot: usize) -> &mut Stats {
        &mut self.entries[slot]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_statistics() {
        let mut t = Table::default();
        let s = t.slot();
        for v in [5, 1, 9, 3, 5_000_000_000, 7] {
            t.add(s, v);
        }
        let st = t.get_mut(s);
        assert_eq!((st.count(), st.min(), st.max()), (6, 1, 5_000_000_000));
        assert_eq!(st.total(), 5_000_000_025);
        assert_eq!(st.median(), 6.0); // (5 + 7) / 2
        assert!(st.median_is_exact());
        let mut one = Table::default();
        let s = one.slot();
        one.add(s, 42);
        assert_eq!((one.get_mut(s).median(), one.get_mut(s).stddev()), (42.0, 0.0));
    }

    #[test]
    fn stddev_is_the_sample_one() {
        let mut t = Table::default();
        let s = t.slot();
        for v in [2, 4, 4, 4, 5, 5, 7, 9] {
            t.add(s, v);
        }
        assert!((t.get_mut(s).stddev() - 2.138_089_935).abs() < 1e-6);
    }

    #[test]
    fn over_budget_the_largest_name_becomes_a_close_estimate() {
        let mut t = Table::with_budget(1000);
        let (big, small) = (t.slot(), t.slot());
        for v in 0..5000u64 {
            t.add(big, 1_000_000 + v * 997);
        }
        for v in 0..10 {
            t.add(small, v);
        }
        assert!(!t.get_mut(big).median_is_exact());
        assert!(t.get_mut(small).median_is_exact());
        let exact = 1_000_000.0 + 2499.5 * 997.0;
        let m = t.get_mut(big).median();
        assert!((m - exact).abs() / exact < 0.002, "{m} vs {exact}");
        assert_eq!(t.get_mut(small).median(), 4.5);
        assert_eq!(t.get_mut(big).count(), 5000);
    }

    #[test]
    fn buckets_are_monotonic_and_close() {
        let mut last = 0;
        for v in (0..200_000u64).chain([u64::MAX / 3, u64::MAX]) {
            let b = bucket(v);
            assert!(b >= last);
            last = b;
            let mid = bucket_mid(b) as f64;
            assert!((mid - v as f64).abs() <= (v as f64) / 500.0 + 1.0, "{v} -> {mid}");
        }
    }
}
