//! Measures how fast events go through `EventWriter` into an archive, and
//! back out through the reader, on one core.
//!
//!     cargo run --release -p otf2 --example throughput -- [EVENTS] [DIR]
//!
//! Writes EVENTS (default 10 million) Enter/Leave records, every 16th enter
//! with an attribute, on one location, and reports events per second and
//! the process's peak resident memory, which stays bounded by OTF2's chunk
//! buffers however many events are written.

use std::time::Instant;

use otf2::reader::{EventContext, EventVisitor, TraceReader};
use otf2::*;

fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(f64::NAN, |kib| kib / 1024.0)
}

struct Count(u64);

impl EventVisitor for Count {
    fn enter(&mut self, _: &EventContext<'_>, _: RegionRef) {
        self.0 += 1;
    }
    fn leave(&mut self, _: &EventContext<'_>, _: RegionRef) {
        self.0 += 1;
    }
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let events: u64 = args.next().map_or(10_000_000, |n| n.parse().expect("EVENTS is a number"));
    let base = args.next().map_or_else(std::env::temp_dir, Into::into);
    let dir = base.join(format!("otf2-throughput-{}", std::process::id()));

    let mut archive = ArchiveWriter::create(&dir, "bench")?;
    let defs = archive.defs();
    let machine = defs.system_tree_node("machine", "machine", None);
    let process = defs.location_group("process", LocationGroupType::Process, machine, None);
    let thread = defs.location(0, "Master thread", LocationType::CpuThread, process)?;
    let regions: Vec<RegionRef> = (0..8)
        .map(|i| defs.region(Region::new(&format!("kernel_{i}"), RegionRole::Function, Paradigm::Cuda)))
        .collect();
    let grid = defs.attribute("grid", "", Type::U32);

    let start = Instant::now();
    let mut writer = archive.event_writer(thread)?;
    let mut t = 0;
    for i in 0..events / 2 {
        let region = regions[(i % 8) as usize];
        if i % 16 == 0 {
            writer.attribute(grid, AttributeValue::U32(i as u32))?;
        }
        writer.enter(t, region)?;
        writer.leave(t + 7, region)?;
        t += 10;
    }
    let written = writer.close()?;
    archive.close()?;
    let write_secs = start.elapsed().as_secs_f64();
    let write_rss = peak_rss_mib();

    let size: u64 = std::fs::read_dir(dir.join("bench"))
        .map_err(|source| Error::Io { path: dir.clone(), source })?
        .filter_map(|e| e.ok()?.metadata().ok())
        .map(|m| m.len())
        .sum();

    let start = Instant::now();
    let mut trace = TraceReader::open(&dir.join("bench.otf2"))?;
    let mut count = Count(0);
    trace.read_all(&mut count)?;
    let read_secs = start.elapsed().as_secs_f64();
    assert_eq!(count.0, written);

    println!(
        "wrote {written} events in {write_secs:.2} s: {:.1} M events/s, {:.1} bytes/event, peak RSS {write_rss:.0} MiB",
        written as f64 / write_secs / 1e6,
        size as f64 / written as f64,
    );
    println!(
        "read  {} events in {read_secs:.2} s: {:.1} M events/s, peak RSS {:.0} MiB",
        count.0,
        count.0 as f64 / read_secs / 1e6,
        peak_rss_mib(),
    );
    std::fs::remove_dir_all(&dir).map_err(|source| Error::Io { path: dir, source })?;
    Ok(())
}
