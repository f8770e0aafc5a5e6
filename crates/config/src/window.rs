//! The recording window's settings: what opens and closes it
//! (`GPUTRACE_CAPTURE_RANGE`), and the moment `GPUTRACE_DELAY` counts from.

/// The variable by which `gputrace` hands its processes the moment it
/// launched the job (CLOCK_REALTIME, nanoseconds), from which
/// `GPUTRACE_DELAY` counts: gputrace's own hand-over, not a setting.
pub const WINDOW_ORIGIN_VARIABLE: &str = "GPUTRACE_WINDOW_ORIGIN";

/// What opens and closes the recording window (`GPUTRACE_CAPTURE_RANGE`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum CaptureRange {
    /// Nothing: recording follows the delay and duration alone.
    #[default]
    None,
    /// Inside the `first`th to `last`th push/pop NVTX range `name` of the
    /// process (counted from 1).
    Nvtx { name: String, first: u64, last: u64 },
    /// Between cudaProfilerStart and cudaProfilerStop.
    CudaProfilerApi,
    /// MPI_Pcontrol(0) stops, any other level resumes (Score-P's convention).
    Pcontrol,
}

impl std::fmt::Display for CaptureRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CaptureRange::None => f.write_str("none"),
            CaptureRange::Nvtx { name, first, last } if first == last => write!(f, "nvtx:{name}@{first}"),
            CaptureRange::Nvtx { name, first, last } => write!(f, "nvtx:{name}@{first}-{last}"),
            CaptureRange::CudaProfilerApi => f.write_str("cudaProfilerApi"),
            CaptureRange::Pcontrol => f.write_str("pcontrol"),
        }
    }
}

/// `none`, `nvtx:NAME`, `nvtx:NAME@N`, `nvtx:NAME@N-M`, `cudaProfilerApi`,
/// `pcontrol`: what is wrong otherwise.
pub fn parse_capture_range(text: &str) -> Result<CaptureRange, &'static str> {
    let t = text.trim();
    if ["none", "no", "off", "false"].iter().any(|w| t.eq_ignore_ascii_case(w)) {
        return Ok(CaptureRange::None);
    }
    if t.eq_ignore_ascii_case("cudaProfilerApi") {
        return Ok(CaptureRange::CudaProfilerApi);
    }
    if t.eq_ignore_ascii_case("pcontrol") || t.eq_ignore_ascii_case("MPI_Pcontrol") {
        return Ok(CaptureRange::Pcontrol);
    }
    let Some(rest) = t.get(..5).filter(|p| p.eq_ignore_ascii_case("nvtx:")).map(|_| &t[5..]) else {
        return Err("unknown capture range");
    };
    // NAME@N or NAME@N-M; an @ followed by anything else is part of the name.
    let occurrences = |s: &str| -> Option<(u64, u64)> {
        let (a, b) = s.split_once('-').unwrap_or((s, s));
        let digits = |x: &str| !x.is_empty() && x.bytes().all(|c| c.is_ascii_digit());
        if !digits(a) || !digits(b) {
            return None;
        }
        Some((a.parse().ok()?, b.parse().ok()?))
    };
    let (name, (first, last)) = match rest.rsplit_once('@') {
        Some((name, n)) => match occurrences(n) {
            Some(range) => (name, range),
            None if n.bytes().next().is_some_and(|c| c.is_ascii_digit()) => {
                return Err("bad occurrences after @ (N or N-M, from 1)");
            }
            None => (rest, (1, 1)),
        },
        None => (rest, (1, 1)),
    };
    if name.is_empty() {
        return Err("no NVTX range name after nvtx:");
    }
    if first == 0 || last < first {
        return Err("bad occurrences after @ (N or N-M, from 1)");
    }
    Ok(CaptureRange::Nvtx { name: name.to_string(), first, last })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::Config;
    use crate::settings::tests::pairs;
    use crate::values::parse_seconds;

    use super::*;

    #[test]
    fn windows_parse() {
        let c = Config::from_pairs(&pairs(&[("GPUTRACE_DELAY", "2.5"), ("GPUTRACE_DURATION", "300ms")])).unwrap();
        assert_eq!((c.delay, c.duration), (Duration::from_millis(2500), Duration::from_millis(300)));
        assert!(c.windowed());
        assert_eq!(parse_seconds("1min"), Some(Duration::from_secs(60)));
        assert_eq!(parse_seconds("no"), Some(Duration::ZERO));
        for bad in ["", "-1", "2x", "1e400", "1.2.3"] {
            assert_eq!(parse_seconds(bad), None, "{bad}");
        }
        let nvtx = |name: &str, first, last| CaptureRange::Nvtx { name: name.into(), first, last };
        assert_eq!(parse_capture_range("nvtx:step"), Ok(nvtx("step", 1, 1)));
        assert_eq!(parse_capture_range("NVTX:step@3"), Ok(nvtx("step", 3, 3)));
        assert_eq!(parse_capture_range("nvtx:a@b@2-4"), Ok(nvtx("a@b", 2, 4)));
        assert_eq!(parse_capture_range("nvtx:user@host"), Ok(nvtx("user@host", 1, 1)));
        assert_eq!(parse_capture_range("cudaprofilerapi"), Ok(CaptureRange::CudaProfilerApi));
        assert_eq!(parse_capture_range("pcontrol"), Ok(CaptureRange::Pcontrol));
        assert_eq!(parse_capture_range("none"), Ok(CaptureRange::None));
        for bad in ["nvtx:", "nvtx:x@0", "nvtx:x@3-2", "nvtx:x@2-", "cuda", "nvtx:@1"] {
            assert!(parse_capture_range(bad).is_err(), "{bad}");
        }
        assert_eq!(nvtx("step", 2, 5).to_string(), "nvtx:step@2-5");
        let e = Config::from_pairs(&pairs(&[("GPUTRACE_CAPTURE_RANGE", "nvtx:x@0")])).unwrap_err();
        assert!(e[0].to_string().contains("GPUTRACE_CAPTURE_RANGE"), "{}", e[0]);
    }
}
