//! CUDA without a GPU: CUPTI activity buffers captured on the GPU machine
//! (tests/fixtures/cupti) replayed through the agent's decoding and
//! conversion into a raw stream, merged by `gputrace merge`, and checked
//! with the Python reader against what the program printed.

use std::path::{Path, PathBuf};
use std::process::Command;

use gputrace_cuda::capture::Capture;
use gputrace_cuda::convert::Enabled;
use gputrace_cuda::gpu_metrics::{GpuTrack, Reading, Readings};
use gputrace_cuda::records::Record;

use crate::util::*;

pub(crate) fn fixture(name: &str) -> (Vec<Capture>, String) {
    let dir = workspace().join("tests/fixtures/cupti").join(name);
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    let captures = files
        .iter()
        .filter(|p| p.extension().is_some_and(|x| x == "cupti"))
        .map(|p| Capture::load(p).unwrap())
        .collect();
    (captures, std::fs::read_to_string(dir.join("expected.txt")).unwrap())
}

pub(crate) fn all() -> Enabled {
    Enabled::from_set(&config::Config::from_pairs(&[]).unwrap().cuda_enable)
}

/// The layout tests/gpu/check_archives.py reads: exp-<name>/ and <name>.out.
pub(crate) fn replay_and_merge(results: &Path, name: &str, enabled: Enabled) {
    let (captures, expected) = fixture("cuda_basic");
    let exp = results.join(format!("exp-{name}"));
    let samples = gpu_metric_samples(&captures);
    gputrace_cuda::replay::replay_then(&captures, &exp, gpu_node_header(468, "cuda_basic"), enabled, |rec| {
        // GPU metrics as the agent's sampler writes them (NVML answers
        // stood for by their values: the GPU tests check real ones).
        let mut track = GpuTrack::new(samples.device);
        for (t, readings) in &samples.rounds {
            track.sample(rec, readings, *t);
        }
        track.write(rec);
    })
    .unwrap();
    std::fs::write(results.join(format!("{name}.out")), expected).unwrap();
    let mut cmd = Command::new(gputrace());
    let out = run(cmd.arg("merge").arg(&exp));
    assert!(out.status.success(), "{}", text(&out.stderr));
    // The summary, as run.sh keeps a traced run's stderr.
    std::fs::write(results.join(format!("{name}.err")), &out.stderr).unwrap();
}

/// GPU metric samples for a replayed fixture: `ROUNDS` rounds spread over
/// its kernels' time, on the device they ran on; temperature unsupported.
struct MetricSamples {
    device: u32,
    rounds: Vec<(u64, Readings)>,
}

const ROUNDS: u64 = 5;

fn gpu_metric_samples(captures: &[Capture]) -> MetricSamples {
    let spans: Vec<_> = captures
        .iter()
        .flat_map(|c| gputrace_cuda::replay::decode(c).unwrap())
        .filter_map(|r| if let Record::Kernel { span, .. } = r { Some(span) } else { None })
        .collect();
    let (start, end) = (spans.iter().map(|s| s.start).min().unwrap(), spans.iter().map(|s| s.end).max().unwrap());
    let rounds = (0..ROUNDS)
        .map(|i| {
            let t = start + (end - start) * i / (ROUNDS - 1);
            let readings = Readings([
                Reading::Value(10 * (i + 1)),       // GPU utilization: 10..50 %
                Reading::Value(i),                  // memory utilization: 0..4 %
                Reading::Value((512 + i) << 20),    // memory used
                Reading::Value(1980 - 10 * i),      // SM clock, MHz
                Reading::Value(300_000 + 1000 * i), // power, mW
                Reading::Unsupported,               // temperature: not on this GPU
            ]);
            (t, readings)
        })
        .collect();
    MetricSamples { device: spans[0].device, rounds }
}

#[test]
fn captured_records_decode_to_what_the_program_did() {
    let (captures, expected) = fixture("cuda_basic");
    let records: Vec<Record> = captures.iter().flat_map(|c| gputrace_cuda::replay::decode(c).unwrap()).collect();
    let kernels = records.iter().filter(|r| matches!(r, Record::Kernel { .. })).count();
    assert!(expected.contains(&format!("expect kernels {kernels}\n")), "{kernels} kernels\n{expected}");
    let memsets = records.iter().filter(|r| matches!(r, Record::Memset { .. })).count();
    assert!(expected.contains(&format!("expect memsets {memsets}\n")), "{memsets} memsets");
    assert!(records.iter().any(|r| matches!(r, Record::Device { .. })));
    assert!(records.iter().any(|r| matches!(r, Record::Api { .. })));
}

#[test]
fn captured_buffers_merge_into_an_archive_the_python_reader_checks() {
    let results = fresh_dir("cuda-results");
    std::fs::create_dir_all(&results).unwrap();
    replay_and_merge(&results, "basic", all());
    let report = check_archives(&results);
    assert!(report.contains("ok   basic: kernel count equals launches"), "{report}");
    assert!(report.contains("ok   basic: every kernel inside its launch"), "{report}");
    assert!(report.contains("ok   basic: the summary's event count is the archive's"), "{report}");
    assert!(report.contains("ok   basic: contexts and streams named by their process"), "{report}");
    assert!(report.contains("ok   basic: GPU 0 metrics@Process 0: GPU power > 0 mW"), "{report}");
}

#[test]
fn cuda_enable_chooses_what_is_recorded() {
    let results = fresh_dir("cuda-subset");
    std::fs::create_dir_all(&results).unwrap();
    use config::CudaSource::{Driver, Kernel, Memcpy};
    let set = config::EnabledSet::of(&[Driver, Kernel, Memcpy]);
    replay_and_merge(&results, "subset", Enabled::from_set(&set));
    std::fs::copy(results.join("subset.out"), results.join("basic.out")).unwrap();
    let report = check_archives(&results);
    assert!(report.contains("ok   subset: no runtime API calls"), "{report}");
}

/// The summary's "N events" is the archive's event count, as both
/// independent readers count it: a copy is four events there (Enter, an
/// RMA get or put, its completion, Leave) though the raw stream holds two.
#[test]
fn the_summary_counts_the_events_of_the_archive() {
    if !required("otf2-print", have("otf2-print")) {
        return;
    }
    let results = fresh_dir("cuda-events");
    std::fs::create_dir_all(&results).unwrap();
    replay_and_merge(&results, "basic", all());
    let exp = results.join("exp-basic");
    let summary = std::fs::read_to_string(exp.join("summary.txt")).unwrap();
    let said: u64 = summary
        .split(" locations, ")
        .nth(1)
        .and_then(|rest| rest.split(" events").next())
        .map(|n| n.replace(',', "").parse().unwrap())
        .unwrap_or_else(|| panic!("no event count in\n{summary}"));
    let anchor = exp.join("traces.otf2");
    let printed: usize = otf2_print_counts(&anchor).values().sum();
    let f = facts(&anchor);
    let read: u64 = f["locations"].as_object().unwrap().values().map(|l| l["events"].as_u64().unwrap()).sum();
    let rma = ["RmaGet", "RmaPut", "RmaOpCompleteBlocking"]
        .iter()
        .map(|ty| f["counts"].as_object().unwrap().values().map(|c| c[*ty].as_u64().unwrap_or(0)).sum::<u64>())
        .sum::<u64>();
    assert!(rma > 0, "the fixture's copies are RMA operations in the archive");
    assert_eq!((said, said), (read, printed as u64), "summary vs the Python reader and otf2-print\n{summary}");
}

/// Two processes on one GPU have the same context and stream ids; their
/// location groups and streams are named by process.
#[test]
fn processes_sharing_a_gpu_have_their_own_context_and_stream_names() {
    let (captures, _) = fixture("cuda_basic");
    let exp = fresh_dir("cuda-shared-gpu");
    for pid in [468, 469] {
        gputrace_cuda::replay::replay(&captures, &exp, gpu_node_header(pid, "cuda_basic"), all()).unwrap();
    }
    let out = run(Command::new(gputrace()).arg("merge").arg(&exp));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let f = facts(&exp.join("traces.otf2"));
    let mut streams: Vec<(String, String)> = f["locations"]
        .as_object()
        .unwrap()
        .values()
        .filter(|l| l["name"].as_str().unwrap().starts_with("CUDA["))
        .map(|l| (l["name"].as_str().unwrap().to_string(), l["group"].as_str().unwrap().to_string()))
        .collect();
    streams.sort();
    assert!(streams.len() >= 2, "{streams:?}");
    let mut names: Vec<&String> = streams.iter().map(|(n, _)| n).collect();
    names.dedup();
    assert_eq!(names.len(), streams.len(), "stream names repeat: {streams:?}");
    for p in 0..2 {
        let own: Vec<_> = streams.iter().filter(|(n, _)| n.ends_with(&format!("] process {p}"))).collect();
        assert_eq!(own.len(), streams.len() / 2, "{streams:?}");
        assert!(own.iter().all(|(_, g)| *g == format!("CUDA Context 1 of process {p}")), "{streams:?}");
    }
}

/// tests/programs/cuda/cuda_init.c, built once: it does what the CUDA
/// driver does at cuInit with CUDA_INJECTION64_PATH set (loads the
/// library, calls InitializeInjection), so the real agent starts here,
/// where no CUPTI can be loaded.
fn cuda_init() -> Option<PathBuf> {
    if !required("a C compiler (cc)", have("cc")) {
        return None;
    }
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    Some(
        BUILT
            .get_or_init(|| {
                let exe = scratch().join("cuda_init");
                let src = workspace().join("tests/programs/cuda/cuda_init.c");
                let out = Command::new("cc").arg("-O1").arg("-o").arg(&exe).arg(&src).arg("-ldl").output().unwrap();
                assert!(out.status.success(), "cc cuda_init.c: {}", text(&out.stderr));
                exe
            })
            .clone(),
    )
}

const NO_CUPTI: &str = "GPUTRACE_CUPTI_LIB=/nonexistent/libcupti.so: cannot open shared object file: No such file or \
                        directory";

/// CUDA initialized but CUPTI could not be loaded: the last line says
/// that, not that the program did no GPU work, and names the library once.
#[test]
fn when_cupti_cannot_be_loaded_the_summary_says_so() {
    let Some(program) = cuda_init() else { return };
    let dir = fresh_dir("cuda-no-cupti").join("exp");
    let out = trace(&dir, &[program.to_str().unwrap()], &[("GPUTRACE_CUPTI_LIB", "/nonexistent/libcupti.so")]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(text(&out.stdout).contains("InitializeInjection returned 1"), "{}", text(&out.stdout));
    assert!(
        err.contains(&format!("[gputrace] warning: CUDA is not traced: CUPTI could not be loaded: {NO_CUPTI}\n")),
        "{err}"
    );
    let last = err.lines().last().unwrap_or_default();
    assert_eq!(
        last,
        format!(
            "[gputrace] warning: nothing was recorded in {}: CUDA was not traced (CUPTI could not be loaded: \
             {NO_CUPTI}) and the program made no MPI call",
            dir.join("raw").display()
        ),
        "{err}"
    );
    assert!(!err.contains("did no GPU work"), "{err}");
    assert!(!dir.exists(), "an experiment directory with nothing in it is removed");
}

/// The agent's fact is in the experiment directory: `gputrace merge`
/// later says the same (exit 2, nothing to merge).
#[test]
fn the_agent_leaves_why_it_did_not_trace_in_the_raw_directory() {
    let Some(program) = cuda_init() else { return };
    let dir = fresh_dir("cuda-untraced-stream");
    let agent = gputrace().with_file_name("libgputrace_cuda.so");
    let out = run(Command::new(&program)
        .env("CUDA_INJECTION64_PATH", &agent)
        .env("GPUTRACE_EXPERIMENT_DIRECTORY", &dir)
        .env("GPUTRACE_CUPTI_LIB", "/nonexistent/libcupti.so"));
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Beside the stream, at most this host's TSC map (the agent ran
    // without the command's map: docs/architecture.md, "The clock").
    let entries = || -> Vec<String> {
        std::fs::read_dir(dir.join("raw")).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect()
    };
    let (streams, others): (Vec<_>, Vec<_>) = entries().into_iter().partition(|n| n.ends_with(".gtr"));
    assert!(streams.len() == 1 && streams[0].ends_with(".cuda.gtr"), "one CUDA stream holding the fact: {streams:?}");
    assert!(others.iter().all(|n| n.starts_with("timer-") && n.ends_with(".tsc")), "{others:?}");
    let out = merge(&dir, false);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("CUDA was not traced (CUPTI could not be loaded: {NO_CUPTI})")), "{err}");
    assert!(
        entries().iter().filter(|n| n.ends_with(".gtr")).count() == 1,
        "`gputrace merge` leaves the raw streams as they are"
    );
}

/// A process whose CUDA was not traced, beside one whose was: one process
/// in the archive (no empty one for the other), and the summary names
/// what was not traced.
#[test]
fn a_process_without_cupti_beside_a_traced_one_is_named_not_phantom() {
    let Some(program) = cuda_init() else { return };
    let (captures, _) = fixture("cuda_basic");
    let dir = fresh_dir("cuda-one-untraced");
    gputrace_cuda::replay::replay(&captures, &dir, gpu_node_header(468, "cuda_basic"), all()).unwrap();
    let agent = gputrace().with_file_name("libgputrace_cuda.so");
    let out = run(Command::new(&program)
        .env("CUDA_INJECTION64_PATH", &agent)
        .env("GPUTRACE_EXPERIMENT_DIRECTORY", &dir)
        .env("GPUTRACE_CUPTI_LIB", "/nonexistent/libcupti.so"));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = merge(&dir, false);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let summary = std::fs::read_to_string(dir.join("summary.txt")).unwrap();
    assert!(summary.starts_with("1 process on 1 host"), "{summary}");
    assert!(
        summary.contains(&format!("\nnot traced: CUDA in 1 process (CUPTI could not be loaded: {NO_CUPTI})\n")),
        "{summary}"
    );
    // The archive's process groups, as the Python reader sees them.
    let f = facts(&dir.join("traces.otf2"));
    assert_eq!(f["ranks"], serde_json::json!([0]), "one process group");
}

/// GPUTRACE_CUDA_ENABLE=no: gputrace itself knows CUDA is not traced.
#[test]
fn with_cuda_switched_off_nothing_recorded_says_so() {
    let Some(program) = cuda_init() else { return };
    let dir = fresh_dir("cuda-off").join("exp");
    let out = trace(&dir, &[program.to_str().unwrap()], &[("GPUTRACE_CUDA_ENABLE", "no")]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(text(&out.stdout).contains("no CUDA_INJECTION64_PATH"), "the agent is not injected");
    assert!(
        err.contains(": CUDA was not traced (GPUTRACE_CUDA_ENABLE=no) and the program made no MPI call\n"),
        "{err}"
    );
    assert!(!dir.exists());
}

/// `gputrace stats` shows kernels by base name in the terminal and by
/// their full demangled name in CSV and JSON.
#[test]
fn kernel_tables_show_base_names_and_export_full_names() {
    let results = fresh_dir("cuda-names");
    std::fs::create_dir_all(&results).unwrap();
    replay_and_merge(&results, "basic", all());
    let exp = results.join("exp-basic");
    let stats = |format: &str| {
        let out =
            run(Command::new(gputrace()).args(["stats", "--report", "gpu_kern_sum", "--format", format]).arg(&exp));
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let table = stats("table");
    assert!(table.lines().any(|l| l.ends_with("  axpy")), "{table}");
    assert!(!table.contains("axpy<float>") && !table.contains("(float"), "{table}");
    let csv = stats("csv");
    assert!(csv.contains("\"void axpy<float>(float*, float const*, float, int)\""), "{csv}");
    let json = stats("json");
    assert!(json.contains("\"void axpy<float>(float*, float const*, float, int)\""), "{json}");
    // The run summary's short tables too.
    let summary = std::fs::read_to_string(exp.join("summary.txt")).unwrap();
    assert!(summary.lines().any(|l| l.ends_with("  axpy")) && !summary.contains("axpy<float>"), "{summary}");
}

/// GPU metrics written by the agent's code merge into OTF2 metrics on a
/// `GPU d metrics` location that the Python reader reads with their
/// names, units and values; an unsupported metric is not defined; and
/// `gputrace stats` sums them per GPU; `gputrace plot --metrics` draws them.
#[test]
fn gpu_metrics_merge_into_otf2_metrics_and_the_stats_report() {
    let results = fresh_dir("cuda-gpu-metrics");
    std::fs::create_dir_all(&results).unwrap();
    replay_and_merge(&results, "basic", all());
    let anchor = results.join("exp-basic/traces.otf2");
    let script = r#"
import json, sys, otf2
from otf2.events import Metric
out = {}
with otf2.reader.open(sys.argv[1]) as t:
    for loc, ev in t.events:
        if isinstance(ev, Metric):
            m = ev.metric.members[0]
            e = out.setdefault(loc.name, {}).setdefault(m.name, {"unit": m.unit, "values": [], "times": []})
            e["values"].append(int(ev.values[0]))
            e["times"].append(int(ev.time))
print(json.dumps(out))
"#;
    let out = Command::new("/usr/bin/python3").arg("-c").arg(script).arg(&anchor).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let got: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let locations: Vec<&String> = got.as_object().unwrap().keys().collect();
    assert_eq!(locations, ["GPU 0 metrics"], "one metric location, named for the GPU");
    let m = &got["GPU 0 metrics"];
    let want = [
        ("GPU utilization", "%", vec![10, 20, 30, 40, 50]),
        ("GPU memory utilization", "%", vec![0, 1, 2, 3, 4]),
        ("GPU memory used", "bytes", (0..5).map(|i| (512 + i) << 20).collect()),
        ("SM clock", "MHz", vec![1980, 1970, 1960, 1950, 1940]),
        ("GPU power", "mW", vec![300_000, 301_000, 302_000, 303_000, 304_000]),
    ];
    assert_eq!(m.as_object().unwrap().len(), want.len(), "temperature, unsupported, is not defined: {m}");
    for (name, unit, values) in want {
        assert_eq!(m[name]["unit"], unit, "{name}");
        let v: Vec<u64> = m[name]["values"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect();
        assert_eq!(v, values, "{name}");
        let t: Vec<u64> = m[name]["times"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect();
        assert!(t.windows(2).all(|w| w[0] < w[1]), "{name}: {t:?}");
    }
    // The stats report, as JSON.
    let out =
        run(Command::new(gputrace()).args(["stats", "--report", "gpu_metrics_sum", "--format", "json"]).arg(&anchor));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = j["gpu_metrics_sum"]["rows"].as_array().unwrap();
    let row = |metric: &str| {
        let r = rows.iter().find(|r| r["Metric"] == metric).unwrap_or_else(|| panic!("no {metric} in {j}"));
        (
            r["GPU"].clone(),
            r["Unit"].clone(),
            r["Samples"].clone(),
            r["Min"].clone(),
            r["Mean"].clone(),
            r["Max"].clone(),
        )
    };
    use serde_json::json;
    assert_eq!(
        row("GPU utilization"),
        (json!("CUDA Device 0"), json!("%"), json!(5), json!(10), json!(30.0), json!(50))
    );
    assert_eq!(
        row("SM clock"),
        (json!("CUDA Device 0"), json!("MHz"), json!(5), json!(1940), json!(1960.0), json!(1980))
    );
    assert_eq!(rows.len(), 5, "temperature, unsupported, has no row: {j}");
    // And in the default set of `gputrace stats`, in the terminal.
    let out = run(Command::new(gputrace()).arg("stats").arg(&anchor));
    let table = text(&out.stdout);
    assert!(table.contains("GPU Metrics Summary") && table.contains("GPU power"), "{table}");
    // The line plot: a panel per metric (5: temperature is undefined),
    // the GPU's line in the first colour.
    let png = anchor.with_file_name("metrics.png");
    let out = run(Command::new(gputrace()).args(["plot", "--metrics", "-o"]).arg(&png).arg(&anchor));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut reader =
        png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&png).unwrap())).read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (1600, 40 + 220 * 5));
    let line = buf[..info.buffer_size()].chunks(3).filter(|c| c == &[31, 119, 180]).count();
    assert!(line > 1000, "{line} pixels of the GPU's line");
}

/// Names a program gives CUDA objects through NVTX (nvtxNameCudaStream,
/// nvtxNameCuContext, nvtxNameCudaDevice: handles, as the NVTX library
/// writes them) reach the locations the CUDA agent's handles tie them to:
/// the stream and the context are renamed, the GPU gets an `NVTX name`
/// property; a name for a handle never seen created is dropped.
#[test]
fn nvtx_names_of_cuda_objects_name_their_locations() {
    use raw::{CudaObject, Definition};
    let (captures, _) = fixture("cuda_basic");
    let exp = fresh_dir("cuda-names").join("exp");
    let (stream, context, unknown) = (0x7f00_1234_5600u64, 0x55aa_0000u64, 0x7f00_dead_0000u64);
    gputrace_cuda::replay::replay_then(&captures, &exp, gpu_node_header(468, "cuda_basic"), all(), |rec| {
        // What the agent notes at creation (CUPTI context 1, its stream 13)...
        rec.define(&Definition::CudaHandle { kind: CudaObject::Context, handle: context, context: 1, stream: 0 });
        rec.define(&Definition::CudaHandle { kind: CudaObject::Stream, handle: stream, context: 1, stream: 13 });
        // ... and what NVTX records (the last name counts).
        for (kind, handle, name) in [
            (CudaObject::Stream, stream, "first name"),
            (CudaObject::Stream, stream, "copies"),
            (CudaObject::Context, context, "training"),
            (CudaObject::Device, 0, "main GPU"),
            (CudaObject::Stream, unknown, "never created"),
        ] {
            rec.define(&Definition::CudaName { kind, handle, name: name.into() });
        }
    })
    .unwrap();
    let out = merge(&exp, false);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let script = r#"
import sys, otf2
with otf2.reader.open(sys.argv[1]) as t:
    d = t.definitions
    for loc in d.locations:
        print("location", loc.name, "|", loc.group.name)
    for p in d.system_tree_node_properties:
        print("property", p.system_tree_node.name, "|", p.name, "|", p.value)
"#;
    let out = Command::new("/usr/bin/python3").arg("-c").arg(script).arg(exp.join("traces.otf2")).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let seen = text(&out.stdout);
    assert!(seen.contains("location copies (CUDA[0:13] process 0) | training (CUDA Context 1 of process 0)"), "{seen}");
    assert!(seen.contains("location CUDA[0:7] process 0 | training (CUDA Context 1 of process 0)"), "{seen}");
    assert!(seen.contains("property CUDA Device 0 | NVTX name | main GPU"), "{seen}");
    assert!(!seen.contains("never created") && !seen.contains("first name"), "{seen}");
}

/// A kernel launched again with the same configuration carries its grid,
/// block, registers and shared memory once per stream (docs/otf2-mapping.md,
/// "Attributes written once"); the correlation id is on every kernel, and
/// the Chrome export gives every kernel its configuration back.
#[test]
fn repeating_launch_configurations_are_written_once() {
    let results = fresh_dir("cuda-once");
    std::fs::create_dir_all(&results).unwrap();
    replay_and_merge(&results, "basic", all());
    let anchor = results.join("exp-basic/traces.otf2");
    let script = r#"
import sys, otf2
from collections import Counter
from otf2.events import Enter
grid, corr, kernels = Counter(), Counter(), Counter()
with otf2.reader.open(sys.argv[1]) as t:
    for loc, ev in t.events:
        if isinstance(ev, Enter) and ev.region.name.startswith("scale("):
            names = {a.name for a in (ev.attributes or {})}
            key = loc.name
            kernels[key] += 1
            grid[key] += "grid x" in names
            corr[key] += "CUDA correlation id" in names
for k in sorted(kernels):
    print(k, kernels[k], grid[k], corr[k])
"#;
    let out = Command::new("/usr/bin/python3").arg("-c").arg(script).arg(&anchor).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows: Vec<Vec<String>> =
        text(&out.stdout).lines().map(|l| l.rsplitn(4, ' ').map(str::to_string).collect()).collect();
    let total: u64 = rows.iter().map(|r| r[2].parse::<u64>().unwrap()).sum();
    assert_eq!(total, 20, "the fixture's 20 scale kernels: {rows:?}");
    for r in &rows {
        // rsplitn: [correlation ids, with grid, kernels, location]
        assert_eq!(r[1], "1", "configuration written once on {}: {rows:?}", r[3]);
        assert_eq!(r[0], r[2], "a correlation id on every kernel: {rows:?}");
    }
    let json = results.join("trace.json");
    let out = run(Command::new(gputrace()).args(["export", "--format", "chrome", "-o"]).arg(&json).arg(&anchor));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let trace: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let scale: Vec<&serde_json::Value> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X" && e["name"].as_str().is_some_and(|n| n.starts_with("scale(")))
        .collect();
    assert_eq!(scale.len(), 20);
    assert!(scale.iter().all(|e| e["args"]["grid x"] == 4096 && e["args"]["block x"] == 256), "{scale:?}");
}
