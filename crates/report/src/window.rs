//! `--from TIME --to TIME --ranks LIST`: the part of an archive a report
//! looks at, shared by `gputrace export`, `plot` and `stats`.
//!
//! Times are offsets from the archive's start (`2.5s`, `300ms`, `40us`,
//! `1500ns`), as Vampir's zoom and the reports' own time columns count
//! them. A region that crosses an edge of the window is clipped to it, as
//! Vampir's zoom shows it: an Enter at `--from` for each region open
//! there, a Leave at `--to` for each region still open there, so what a
//! report reads stays balanced (each Enter has its Leave) and a region's
//! time is the part of it inside the window. Other records (messages,
//! metric samples, collectives' ends) are kept when their time is in the
//! window, `--from` and `--to` included. A clipped Enter carries no
//! attributes (the original's are gone by the time the edge is known).
//!
//! Ranks are MPI world ranks (`0,2-5`); a process without one (a program
//! without MPI) is numbered by its place among the archive's processes.
//! A rank not in the archive is an error rather than an empty report.
//!
//! [`Cut`] is the window resolved against one archive; [`Clip`] wraps the
//! visitor of one location's read and passes on only what is inside.

use std::fmt;
use std::str::FromStr;

use otf2::reader::{Attributes, EventContext, EventVisitor};
use otf2::{CommRef, LocationRef, MetricRef, MetricValue, Paradigm, RegionRef, RmaWinRef, StringRef};

use crate::model::Model;
use crate::{Error, Result};

/// A time since the archive's start, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Offset(pub u64);

impl FromStr for Offset {
    type Err = String;

    /// `2.5s`, `300ms`, `40us` (or `40µs`), `1500ns`, `1.5min`; `0` alone
    /// needs no unit. A bare number other than 0 is refused: seconds to
    /// nsys's `--delay`, milliseconds to gputrace's other durations.
    fn from_str(text: &str) -> std::result::Result<Self, String> {
        let t = text.trim();
        let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
        let (number, unit) = (&t[..split], t[split..].trim());
        let value: f64 = number
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && !number.starts_with('.') && !number.ends_with('.'))
            .ok_or_else(|| format!("not a time since the trace's start (2.5s, 300ms, 40us, 1500ns): `{text}`"))?;
        let scale = match unit {
            "" if value == 0.0 => 0.0,
            "" => return Err(format!("`{text}` has no unit: give one (2.5s, 300ms, 40us, 1500ns)")),
            "ns" => 1.0,
            "us" | "µs" => 1e3,
            "ms" => 1e3 * 1e3,
            "s" => 1e9,
            "min" => 60e9,
            other => return Err(format!("unknown unit `{other}` in `{text}`: give s, ms, us or ns")),
        };
        let ns = (value * scale).round();
        if ns >= u64::MAX as f64 {
            return Err(format!("`{text}` is too long a time"));
        }
        Ok(Offset(ns as u64))
    }
}

impl fmt::Display for Offset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Exact, in the largest unit that divides it.
        let ns = self.0;
        match [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")].iter().find(|(d, _)| ns.is_multiple_of(*d)) {
            Some((d, unit)) if ns > 0 => write!(f, "{}{unit}", ns / d),
            _ => write!(f, "{ns}ns"),
        }
    }
}

/// MPI ranks as `0,2-5`: ranges inclusive, in any order, overlaps allowed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankList {
    /// Inclusive (first, last) ranges, as written.
    ranges: Vec<(u32, u32)>,
    text: String,
}

impl RankList {
    pub fn contains(&self, rank: u32) -> bool {
        self.ranges.iter().any(|&(a, b)| (a..=b).contains(&rank))
    }

    /// Every rank listed, ascending, each once (up to `limit` of them).
    fn members(&self, limit: usize) -> Vec<u32> {
        let mut all: Vec<u32> =
            self.ranges.iter().flat_map(|&(a, b)| a..=b.min(a.saturating_add(limit as u32))).collect();
        all.sort_unstable();
        all.dedup();
        all.truncate(limit);
        all
    }
}

impl FromStr for RankList {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Self, String> {
        let bad = |what: &str| format!("`{what}` is not a rank or a range of ranks (a list as 0,2-5)");
        let mut ranges = Vec::new();
        for part in text.split(',').map(str::trim) {
            if part.is_empty() {
                return Err(format!("an empty item in `{text}` (a list as 0,2-5)"));
            }
            let number = |s: &str| s.trim().parse::<u32>().map_err(|_| bad(part));
            let range = match part.split_once('-') {
                Some((a, b)) => (number(a)?, number(b)?),
                None => (number(part)?, number(part)?),
            };
            if range.0 > range.1 {
                return Err(format!("`{part}` runs backwards: write {}-{}", range.1, range.0));
            }
            ranges.push(range);
        }
        Ok(RankList { ranges, text: text.trim().to_owned() })
    }
}

impl fmt::Display for RankList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// What a report was asked to look at: everything by default.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Window {
    pub from: Option<Offset>,
    pub to: Option<Offset>,
    pub ranks: Option<RankList>,
}

impl Window {
    /// Whether the window is the whole archive.
    pub fn is_everything(&self) -> bool {
        self.from.is_none() && self.to.is_none() && self.ranks.is_none()
    }

    /// The window in `model`'s archive: an empty time window, one that
    /// starts after the trace ends, or a rank the archive lacks is bad
    /// input.
    pub fn resolve(&self, model: &Model) -> Result<Cut> {
        let length_ns = model.ns(model.length);
        if let (Some(from), Some(to)) = (self.from, self.to)
            && from >= to
        {
            return Err(Error::BadInput(format!("--from {from} is not before --to {to}: the window is empty")));
        }
        if let Some(from) = self.from
            && from.0 > length_ns
        {
            return Err(Error::BadInput(format!(
                "--from {from} is after the trace's end: the trace is {} long",
                crate::numbers::human_ns(length_ns)
            )));
        }
        let ranks: Vec<u32> = (0..model.processes.len()).map(|p| rank_of(model, p)).collect();
        let keep: Vec<bool> = match &self.ranks {
            None => vec![true; ranks.len()],
            Some(list) => {
                let missing: Vec<String> =
                    list.members(1 << 16).into_iter().filter(|r| !ranks.contains(r)).map(|r| r.to_string()).collect();
                if !missing.is_empty() {
                    let shown = if missing.len() > 8 {
                        format!("{} and {} more", missing[..8].join(", "), missing.len() - 8)
                    } else {
                        missing.join(", ")
                    };
                    return Err(Error::BadInput(format!(
                        "--ranks {list}: the archive has no rank {shown} (its ranks: {})",
                        describe_ranks(&ranks)
                    )));
                }
                ranks.iter().map(|&r| list.contains(r)).collect()
            }
        };
        let to_ticks = |o: Offset| {
            let ticks = u128::from(o.0) * u128::from(model.resolution) / 1_000_000_000;
            model.origin.saturating_add(u64::try_from(ticks).unwrap_or(u64::MAX))
        };
        Ok(Cut {
            start: self.from.map(to_ticks),
            end: self.to.map(to_ticks),
            processes: keep,
            start_ns: self.from.map_or(0, |o| o.0),
            end_ns: self.to.map_or(length_ns, |o| o.0.min(length_ns)),
        })
    }
}

/// The rank a process goes by in `--ranks`.
pub fn rank_of(model: &Model, process: usize) -> u32 {
    model.processes[process].rank.unwrap_or(process as u32)
}

/// `0-3, 5, 7-8`: a sorted set of ranks in ranges.
fn describe_ranks(ranks: &[u32]) -> String {
    let mut sorted = ranks.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[j] + 1 {
            j += 1;
        }
        parts.push(if i == j { sorted[i].to_string() } else { format!("{}-{}", sorted[i], sorted[j]) });
        i = j + 1;
    }
    if parts.is_empty() { "none".into() } else { parts.join(", ") }
}

/// A window resolved against one archive.
#[derive(Clone, Debug)]
pub struct Cut {
    /// The window's edges in the archive's ticks; `None`: open on that side.
    start: Option<u64>,
    end: Option<u64>,
    /// Kept or not, per process.
    processes: Vec<bool>,
    /// The edges in ns since the trace's start (the trace's own where open).
    pub start_ns: u64,
    pub end_ns: u64,
}

impl Cut {
    /// Whether the window has edges in time (else only ranks are chosen).
    pub fn is_timed(&self) -> bool {
        self.start.is_some() || self.end.is_some()
    }

    pub fn keeps_process(&self, process: usize) -> bool {
        self.processes.get(process).copied().unwrap_or(false)
    }

    /// Whether a location belongs to a kept process.
    pub fn keeps_location(&self, model: &Model, location: LocationRef) -> bool {
        model.locations.get(&location).is_some_and(|l| self.keeps_process(l.process))
    }

    /// Whether `time` (ticks) is inside the window, its edges included.
    pub fn contains(&self, time: u64) -> bool {
        self.start.is_none_or(|s| time >= s) && self.end.is_none_or(|e| time <= e)
    }

    /// The window's span in the archive's ticks, for a picture's axis.
    pub fn ticks(&self, model: &Model) -> (u64, u64) {
        let start = self.start.unwrap_or(model.origin);
        let end = self.end.unwrap_or(model.origin.saturating_add(model.length)).min(model.origin + model.length);
        (start, end.max(start + 1))
    }

    /// Reads `location` into `visitor`, through a [`Clip`] when the window
    /// has edges in time (the read stops at the first record after `--to`).
    pub fn read_location(
        &self,
        reader: &mut otf2::reader::TraceReader,
        location: LocationRef,
        visitor: &mut dyn EventVisitor,
    ) -> otf2::Result<otf2::reader::ReadSummary> {
        if !self.is_timed() {
            return reader.read_location(location, visitor);
        }
        let mut clip = Clip::new(self, visitor);
        reader.read_location(location, &mut clip)
    }
}

/// Where a record falls.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    Before,
    Inside,
    After,
}

/// Passes on the records of one location's read that are inside a
/// [`Cut`]'s time window, regions clipped at its edges.
pub struct Clip<'a> {
    cut: &'a Cut,
    inner: &'a mut dyn EventVisitor,
    /// Open regions, and whether their Enter was passed on.
    stack: Vec<(RegionRef, bool)>,
    /// Past `--to`: the regions open there are closed, nothing more passes.
    done: bool,
}

impl<'a> Clip<'a> {
    pub fn new(cut: &'a Cut, inner: &'a mut dyn EventVisitor) -> Self {
        Self { cut, inner, stack: Vec::new(), done: false }
    }

    /// Where `ev` falls; an event inside first opens at `--from` the
    /// regions that were open there, one after `--to` closes at `--to`
    /// those still open.
    fn place(&mut self, ev: &EventContext<'_>) -> Place {
        if self.done {
            return Place::After;
        }
        if self.cut.start.is_some_and(|s| ev.time < s) {
            return Place::Before;
        }
        if self.cut.end.is_some_and(|e| ev.time > e) {
            // A region open across the whole window is in it from edge to edge.
            self.open_pending(ev.location);
            let end = self.cut.end.unwrap_or(ev.time);
            for &(region, passed) in self.stack.iter().rev() {
                if passed {
                    self.inner.leave(&EventContext::new(ev.location, end, Attributes::empty()), region);
                }
            }
            self.stack.clear();
            self.done = true;
            return Place::After;
        }
        self.open_pending(ev.location);
        Place::Inside
    }

    /// Enters at `--from` the regions entered before it and not left.
    fn open_pending(&mut self, location: LocationRef) {
        let Some(start) = self.cut.start else { return };
        for (region, passed) in self.stack.iter_mut() {
            if !*passed {
                self.inner.enter(&EventContext::new(location, start, Attributes::empty()), *region);
                *passed = true;
            }
        }
    }

    fn pop(&mut self, region: RegionRef) {
        if let Some(depth) = self.stack.iter().rposition(|(r, _)| *r == region) {
            self.stack.truncate(depth);
        }
    }
}

/// Methods that pass a record on when it is inside the window.
macro_rules! inside_only {
    ($($name:ident($($arg:ident: $ty:ty),*);)*) => {
        $(
            fn $name(&mut self, ev: &EventContext<'_>, $($arg: $ty),*) {
                if self.place(ev) == Place::Inside {
                    self.inner.$name(ev, $($arg),*);
                }
            }
        )*
    };
}

impl EventVisitor for Clip<'_> {
    fn enter(&mut self, ev: &EventContext<'_>, region: RegionRef) {
        match self.place(ev) {
            Place::Before => self.stack.push((region, false)),
            Place::Inside => {
                self.inner.enter(ev, region);
                self.stack.push((region, true));
            }
            Place::After => {}
        }
    }

    fn leave(&mut self, ev: &EventContext<'_>, region: RegionRef) {
        match self.place(ev) {
            Place::Before => self.pop(region),
            Place::Inside => {
                self.inner.leave(ev, region);
                self.pop(region);
            }
            Place::After => {}
        }
    }

    inside_only! {
        mpi_send(receiver: u32, comm: CommRef, tag: u32, length: u64);
        mpi_isend(receiver: u32, comm: CommRef, tag: u32, length: u64, request_id: u64);
        mpi_isend_complete(request_id: u64);
        mpi_irecv_request(request_id: u64);
        mpi_recv(sender: u32, comm: CommRef, tag: u32, length: u64);
        mpi_irecv(sender: u32, comm: CommRef, tag: u32, length: u64, request_id: u64);
        mpi_request_test(request_id: u64);
        mpi_request_cancelled(request_id: u64);
        mpi_collective_begin();
        mpi_collective_end(collective: &otf2::Collective);
        non_blocking_collective_request(request_id: u64);
        non_blocking_collective_complete(collective: &otf2::Collective, request_id: u64);
        rma_win_create(win: RmaWinRef);
        rma_win_destroy(win: RmaWinRef);
        rma_put(win: RmaWinRef, remote: u32, bytes: u64, matching_id: u64);
        rma_get(win: RmaWinRef, remote: u32, bytes: u64, matching_id: u64);
        rma_op_complete_blocking(win: RmaWinRef, matching_id: u64);
        rma_op_complete_non_blocking(win: RmaWinRef, matching_id: u64);
        rma_op_test(win: RmaWinRef, matching_id: u64);
        metric(metric: MetricRef, values: &[MetricValue]);
        thread_fork(model: Paradigm, threads: u32);
        thread_join(model: Paradigm);
        comm_create(comm: CommRef);
        comm_destroy(comm: CommRef);
        program_begin(name: StringRef);
        program_end(status: Option<i64>);
        measurement_on_off(on: bool);
        buffer_flush(stop_time: u64);
        unknown();
    }

    fn should_stop(&self) -> bool {
        self.done || self.inner.should_stop()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_take_units_and_refuse_bare_numbers() {
        let t = |s: &str| s.parse::<Offset>().map(|o| o.0);
        assert_eq!(t("2.5s"), Ok(2_500_000_000));
        assert_eq!(t("300ms"), Ok(300_000_000));
        assert_eq!(t("40us"), Ok(40_000));
        assert_eq!(t("40µs"), Ok(40_000));
        assert_eq!(t("1500ns"), Ok(1500));
        assert_eq!(t(" 1.5min "), Ok(90_000_000_000));
        assert_eq!(t("0"), Ok(0));
        assert_eq!(t("0.001ms"), Ok(1000));
        assert!(t("5").unwrap_err().contains("has no unit"));
        assert!(t("5h").unwrap_err().contains("unknown unit `h`"));
        for bad in ["", "s", "-1s", "1.2.3s", ".5s", "5.s", "1e3s", "nan", "99999999999999999999min"] {
            assert!(t(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rank_lists_are_numbers_and_ranges() {
        let list: RankList = "0,2-5, 9".parse().unwrap();
        let kept: Vec<u32> = (0..12).filter(|&r| list.contains(r)).collect();
        assert_eq!(kept, [0, 2, 3, 4, 5, 9]);
        assert_eq!(list.members(100), [0, 2, 3, 4, 5, 9]);
        assert_eq!("3".parse::<RankList>().unwrap().members(10), [3]);
        assert!("5-2".parse::<RankList>().unwrap_err().contains("write 2-5"));
        for bad in ["", "a", "1,,2", "-1", "1-", "2-x", "1.5", "0,"] {
            assert!(bad.parse::<RankList>().is_err(), "{bad}");
        }
        assert_eq!(describe_ranks(&[3, 0, 1, 2, 5, 7, 8]), "0-3, 5, 7-8");
    }

    /// Records what passes, as (kind, region or 0, time).
    #[derive(Default)]
    struct Log(Vec<(&'static str, u32, u64)>);

    impl EventVisitor for Log {
        fn enter(&mut self, ev: &EventContext<'_>, region: RegionRef) {
            self.0.push(("enter", region.id(), ev.time));
        }
        fn leave(&mut self, ev: &EventContext<'_>, region: RegionRef) {
            self.0.push(("leave", region.id(), ev.time));
        }
        fn mpi_send(&mut self, ev: &EventContext<'_>, _: u32, _: CommRef, _: u32, _: u64) {
            self.0.push(("send", 0, ev.time));
        }
    }

    fn cut(start: Option<u64>, end: Option<u64>) -> Cut {
        Cut { start, end, processes: vec![true], start_ns: 0, end_ns: 0 }
    }

    /// Feeds `records` (kind, region, time) through a clip of `cut`.
    fn clip(cut: &Cut, records: &[(&str, u32, u64)]) -> (Vec<(&'static str, u32, u64)>, bool) {
        let mut log = Log::default();
        let mut clip = Clip::new(cut, &mut log);
        let loc = LocationRef::from_id(0);
        for &(kind, region, time) in records {
            let ev = EventContext::new(loc, time, Attributes::empty());
            let r = RegionRef::from_id(region);
            match kind {
                "enter" => clip.enter(&ev, r),
                "leave" => clip.leave(&ev, r),
                _ => clip.mpi_send(&ev, 1, CommRef::from_id(0), 0, 8),
            }
            if clip.should_stop() {
                break;
            }
        }
        let stopped = clip.done;
        (log.0, stopped)
    }

    #[test]
    fn regions_across_an_edge_are_clipped_and_stay_balanced() {
        // main [0, 100]: a call [10, 30] with a send at 20, a call [40, 60]
        // with a send at 50, a call [70, 90].
        let records = [
            ("enter", 1, 0),
            ("enter", 2, 10),
            ("send", 0, 20),
            ("leave", 2, 30),
            ("enter", 3, 40),
            ("send", 0, 50),
            ("leave", 3, 60),
            ("enter", 4, 70),
            ("leave", 4, 90),
            ("leave", 1, 100),
        ];
        let (got, stopped) = clip(&cut(Some(25), Some(55)), &records);
        assert_eq!(
            got,
            [
                ("enter", 1, 25),
                ("enter", 2, 25),
                ("leave", 2, 30),
                ("enter", 3, 40),
                ("send", 0, 50),
                ("leave", 3, 55),
                ("leave", 1, 55),
            ]
        );
        assert!(stopped, "the read stops after --to");
        // Edges are inside: a record at --from or --to passes as it is.
        let (got, _) = clip(&cut(Some(10), Some(30)), &records);
        assert_eq!(got, [("enter", 1, 10), ("enter", 2, 10), ("send", 0, 20), ("leave", 2, 30), ("leave", 1, 30)]);
        // A region around the whole window, with nothing inside it.
        let (got, _) = clip(&cut(Some(72), Some(80)), &records);
        assert_eq!(got, [("enter", 1, 72), ("enter", 4, 72), ("leave", 4, 80), ("leave", 1, 80)]);
        // Open on one side.
        let (got, stopped) = clip(&cut(Some(65), None), &records);
        assert_eq!(got, [("enter", 1, 65), ("enter", 4, 70), ("leave", 4, 90), ("leave", 1, 100)]);
        assert!(!stopped);
        let (got, _) = clip(&cut(None, Some(15)), &records);
        assert_eq!(got, [("enter", 1, 0), ("enter", 2, 10), ("leave", 2, 15), ("leave", 1, 15)]);
        // A window after the last record: nothing.
        assert_eq!(clip(&cut(Some(200), None), &records).0, []);
    }
}
