//! Nothing lost silently: what CUPTI or NCCL (or gputrace on their way)
//! lost before it became events is counted in the process's raw stream,
//! and reaches the run summary (`lost:` lines), the archive (the process's
//! `GPUTRACE::LOST::<KIND>` location-group properties, read here by
//! `otf2-print` and the Python `otf2` module) and `gputrace stats`
//! (`lost_sum`), with the exact counts.

use std::path::{Path, PathBuf};
use std::process::Command;

use raw::SourceLoss;

use crate::cuda::{all, fixture};
use crate::util::*;

/// A count of each kind, all different.
const LOSSES: [(SourceLoss, u64); 7] = [
    (SourceLoss::CuptiDropped, 1234),
    (SourceLoss::CuptiUndecodable, 5),
    (SourceLoss::CudaEarlyOverflow, 1_048_577),
    (SourceLoss::CudaSyncWithoutCall, 3),
    (SourceLoss::NcclThreadExit, 2),
    (SourceLoss::NcclThreadGone, 7),
    (SourceLoss::SamplesLost, 11),
];

/// The cuda_basic fixture replayed into a fresh experiment, with `losses`
/// noted on its stream as the agent's loss sites note them.
fn replayed(name: &str, losses: &[(SourceLoss, u64)]) -> PathBuf {
    let (captures, _) = fixture("cuda_basic");
    let exp = fresh_dir(name);
    gputrace_cuda::replay::replay_then(&captures, &exp, gpu_node_header(468, "cuda_basic"), all(), |rec| {
        for (what, n) in losses {
            // In two steps: the stream holds running totals.
            rec.note_lost(*what, n / 2);
            rec.flush_definitions();
            rec.note_lost(*what, n - n / 2);
        }
    })
    .unwrap();
    exp
}

fn stats(anchor: &Path, args: &[&str]) -> String {
    let out = run(Command::new(gputrace()).arg("stats").args(args).arg(anchor));
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
}

#[test]
fn losses_of_every_kind_reach_the_summary_the_archive_and_stats() {
    let exp = replayed("lost", &LOSSES);
    let out = merge(&exp, false);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    let line = "lost: rank 0 (pid 468 on gpu-node): 1,234 CUDA activity records dropped by CUPTI (buffers full: \
                raise GPUTRACE_CUDA_BUFFER); 5 CUDA activity records the agent could not decode (a CUPTI newer \
                than the agent?); 1,048,577 CUDA API records dropped before the first GPU work (more than a million \
                held); 3 CUDA synchronizations dropped: their API call was never reported; 2 NCCL calls lost in \
                a group left open when its thread exited; 7 NCCL events lost (reported while their thread was being torn down); \
                11 call-stack samples lost (a full ring: raise GPUTRACE_SAMPLING; or a stack off its thread's)\n";
    assert!(stderr.contains(line), "{stderr}");
    assert_eq!(stderr.matches("lost: ").count(), 1, "{stderr}");
    let anchor = exp.join("traces.otf2");

    // otf2-print lists the process's properties among the global definitions.
    let out = run(Command::new("otf2-print").arg("-G").arg(&anchor));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let printed: Vec<String> = text(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("LOCATION_GROUP_PROPERTY") && l.contains("GPUTRACE::LOST::"))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(printed.len(), LOSSES.len(), "{printed:#?}");
    for (what, n) in LOSSES {
        let name = format!("\"GPUTRACE::LOST::{}\"", what.key());
        assert!(
            printed.iter().any(|l| l.contains("\"Process 0\"") && l.contains(&name) && l.contains(&format!("{n}"))),
            "{name} = {n} not in\n{printed:#?}"
        );
    }

    // The Python reader: (group, property, type, value).
    let script = r#"
import sys, otf2
with otf2.reader.open(sys.argv[1]) as t:
    for p in t.definitions.location_group_properties:
        print(p.location_group.name, p.name, p.type, p.value, sep="|")
"#;
    let out = run(Command::new("/usr/bin/python3").args(["-c", script]).arg(&anchor));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut seen: Vec<String> = text(&out.stdout).lines().map(str::to_string).collect();
    seen.sort();
    let mut want: Vec<String> =
        LOSSES.iter().map(|(what, n)| format!("Process 0|GPUTRACE::LOST::{}|Type.UINT64|{n}", what.key())).collect();
    want.sort();
    assert_eq!(seen, want);

    // gputrace stats: the report asked for, as CSV, and in the default set.
    let csv = stats(&anchor, &["--report", "lost_sum", "--format", "csv"]);
    for (what, n) in LOSSES {
        let row = format!("Process 0,gpu-node,{},{n},", what.key());
        assert!(csv.lines().any(|l| l.starts_with(&row)), "{row} not in\n{csv}");
    }
    assert!(stats(&anchor, &[]).contains("lost_sum"), "lost_sum is in the default set when not empty");
}

/// Records CUPTI really dropped (buffers refused on the 4-GPU machine,
/// tests/fixtures/cupti/cuda_basic_lost): the replay of the captured
/// buffers says what the live run said, in the summary, the archive and
/// `gputrace stats`.
#[test]
fn records_cupti_dropped_on_the_gpu_machine_are_counted_as_the_live_run_counted_them() {
    let (captures, expected) = fixture("cuda_basic_lost");
    let live = expected.lines().find(|l| l.starts_with("lost: ")).expect("the live run's line");
    let dropped: u64 = captures.iter().map(|c| c.dropped).sum();
    assert_eq!(dropped, 25, "the captures' drop counts");
    let exp = fresh_dir("lost-real");
    gputrace_cuda::replay::replay(&captures, &exp, gpu_node_header(12157, "cuda_basic"), all()).unwrap();
    let out = merge(&exp, false);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    // The same line but for the host's name in the replay's header.
    assert!(stderr.contains(&live.replace(" on vm)", " on gpu-node)")), "{live}\nnot in\n{stderr}");
    let anchor = exp.join("traces.otf2");
    let csv = stats(&anchor, &["--report", "lost_sum", "--format", "csv"]);
    let row = format!("Process 0,gpu-node,{},{dropped},", SourceLoss::CuptiDropped.key());
    assert!(csv.lines().any(|l| l.starts_with(&row)), "{row} not in\n{csv}");
    let printed = text(&run(Command::new("otf2-print").arg("-G").arg(&anchor)).stdout);
    assert!(printed.lines().any(|l| l.contains("GPUTRACE::LOST::CUPTI_DROPPED") && l.contains("25")), "{printed}");
}

/// Without losses: no line, no property, no report unless asked for.
#[test]
fn a_trace_that_lost_nothing_says_nothing_of_it() {
    let exp = replayed("lost-nothing", &[]);
    let out = merge(&exp, false);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!text(&out.stderr).contains("lost:"), "{}", text(&out.stderr));
    let anchor = exp.join("traces.otf2");
    let printed = text(&run(Command::new("otf2-print").arg("-G").arg(&anchor)).stdout);
    assert!(!printed.contains("GPUTRACE::LOST::"), "{printed}");
    assert!(!stats(&anchor, &[]).contains("lost_sum"));
    let csv = stats(&anchor, &["--report", "lost_sum", "--format", "csv"]);
    assert_eq!(csv.lines().filter(|l| !l.trim().is_empty()).count(), 1, "a header only:\n{csv}");
}

/// A stream written before SourceLost existed (format version 4: its
/// chunks' version bytes) still merges, and says nothing of losses.
#[test]
fn a_stream_from_before_the_loss_records_still_merges() {
    let exp = replayed("lost-v4", &[]);
    let raw_dir = exp.join("raw");
    for entry in std::fs::read_dir(&raw_dir).unwrap() {
        let path = entry.unwrap().path();
        let mut bytes = std::fs::read(&path).unwrap();
        let mut patched = 0;
        for at in 0..bytes.len().saturating_sub(raw::chunk::HEADER_LEN) {
            if bytes[at..at + 4] != raw::chunk::MAGIC {
                continue;
            }
            let h: &[u8; raw::chunk::HEADER_LEN] = bytes[at..at + raw::chunk::HEADER_LEN].try_into().unwrap();
            if let Ok(mut header) = raw::ChunkHeader::decode(h) {
                assert_eq!(header.version, raw::chunk::FORMAT_VERSION);
                header.version = 4;
                let old = header.encode();
                // The reserved word after the header's checksum stays as it was.
                bytes[at..at + 44].copy_from_slice(&old[..44]);
                patched += 1;
            }
        }
        assert!(patched >= 3, "{}: {patched} chunk headers", path.display());
        std::fs::write(&path, bytes).unwrap();
        let file = raw::RawFile::open(&path).unwrap();
        assert!(file.problems.is_empty(), "{:?}", file.problems);
    }
    let out = merge(&exp, false);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("lost:") && !stderr.contains("warning"), "{stderr}");
    let counts = otf2_print_counts(&exp.join("traces.otf2"));
    assert!(counts.get("ENTER").copied().unwrap_or(0) > 100, "{counts:?}");
}
