//! The GPU metrics the stragglers compare: each GPU's sampled SM clock and
//! power (NVML's `SM clock`, MHz, and `GPU power`, mW, on the `GPU d
//! metrics` locations), the latest [`MAX_SAMPLES`] of each, and their mean
//! over an interval.

use std::collections::VecDeque;

/// Samples kept per GPU and metric: 40 s at the default 10 ms.
pub const MAX_SAMPLES: usize = 4096;

/// Which sampled metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sampled {
    SmClock,
    Power,
}

impl Sampled {
    /// The metric a name is (`SM clock`, `GPU power`), if one of these.
    pub(crate) fn of(name: &str) -> Option<Sampled> {
        match name {
            "SM clock" => Some(Sampled::SmClock),
            "GPU power" => Some(Sampled::Power),
            _ => None,
        }
    }
}

/// Per GPU, the recent samples of its SM clock and power: (time, value).
#[derive(Default)]
pub(crate) struct GpuSamples {
    clock: Vec<VecDeque<(u64, u64)>>,
    power: Vec<VecDeque<(u64, u64)>>,
}

impl GpuSamples {
    fn series(&self, which: Sampled) -> &Vec<VecDeque<(u64, u64)>> {
        match which {
            Sampled::SmClock => &self.clock,
            Sampled::Power => &self.power,
        }
    }

    /// A sample of `gpu` at `t`.
    pub(crate) fn add(&mut self, which: Sampled, gpu: usize, t: u64, value: u64) {
        let all = match which {
            Sampled::SmClock => &mut self.clock,
            Sampled::Power => &mut self.power,
        };
        if all.len() <= gpu {
            all.resize_with(gpu + 1, VecDeque::new);
        }
        let s = &mut all[gpu];
        if s.len() >= MAX_SAMPLES {
            s.pop_front();
        }
        s.push_back((t, value));
    }

    /// The mean of `gpu`'s samples from `from` to `to`; with none in
    /// between, the last one before `from` (the value held until then).
    pub(crate) fn mean(&self, which: Sampled, gpu: usize, from: u64, to: u64) -> Option<u64> {
        let s = self.series(which).get(gpu)?;
        let (mut sum, mut n) = (0u128, 0u128);
        let mut before = None;
        for &(t, v) in s {
            if t < from {
                before = Some(v);
            } else if t <= to {
                sum += u128::from(v);
                n += 1;
            } else {
                break;
            }
        }
        if n == 0 {
            return before;
        }
        u64::try_from(sum / n).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mean_is_over_the_interval_or_the_value_held() {
        let mut s = GpuSamples::default();
        for (t, v) in [(0, 1980), (10, 1000), (20, 1200), (30, 1980)] {
            s.add(Sampled::SmClock, 1, t, v);
        }
        assert_eq!(s.mean(Sampled::SmClock, 1, 5, 25), Some(1100));
        assert_eq!(s.mean(Sampled::SmClock, 1, 11, 19), Some(1000), "none inside: the one held");
        assert_eq!(s.mean(Sampled::SmClock, 0, 0, 30), None, "a GPU without samples");
        assert_eq!(s.mean(Sampled::Power, 1, 0, 30), None);
        for t in 0..MAX_SAMPLES as u64 + 5 {
            s.add(Sampled::Power, 0, 100 + t, 7);
        }
        assert_eq!(s.series(Sampled::Power)[0].len(), MAX_SAMPLES);
        assert_eq!(Sampled::of("SM clock"), Some(Sampled::SmClock));
        assert_eq!(Sampled::of("GPU temperature"), None);
    }
}
