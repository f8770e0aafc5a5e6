//! The command line: every variable's flag reaches the traced program as
//! the variable, and wins over the environment.

use std::collections::HashMap;
use std::process::Command;

use config::{DEVELOPER_VARS, VARS, VarType};

use crate::util::*;

#[test]
fn every_flag_sets_its_variable_for_the_traced_program() {
    let dir = fresh_dir("flags");
    let filter = scratch().join("flags.filter");
    std::fs::write(&filter, "SCOREP_REGION_NAMES_BEGIN\n  EXCLUDE MPI_Wtime\nSCOREP_REGION_NAMES_END\n").unwrap();
    let capture = scratch().join("flags-cupti");
    // What each flag is given, and what the program must see.
    let values: HashMap<&str, String> = [
        ("GPUTRACE_EXPERIMENT_DIRECTORY", dir.to_str().unwrap().to_string()),
        ("GPUTRACE_TOTAL_MEMORY", "48M".into()),
        ("GPUTRACE_FILTERING_FILE", filter.to_str().unwrap().to_string()),
        ("GPUTRACE_MPI_ENABLE_GROUPS", "p2p,coll".into()),
        ("GPUTRACE_CUDA_ENABLE", "kernel,memcpy".into()),
        ("GPUTRACE_CUDA_BUFFER", "8M".into()),
        ("GPUTRACE_NVLINK_INTERVAL", "5ms".into()),
        ("GPUTRACE_GPU_METRICS_INTERVAL", "no".into()),
        ("GPUTRACE_CUPTI_LIB", "/opt/nowhere/libcupti.so.13".into()),
        ("GPUTRACE_NCCL_ENABLE", "coll".into()),
        ("GPUTRACE_MERGE_JOBS", "3".into()),
        ("GPUTRACE_TIMER", "clock_gettime".into()),
        // Not 0 would refuse /usr/bin/env, which no MPI launcher starts.
        ("GPUTRACE_MERGE_RANKS", "0".into()),
        ("GPUTRACE_CUDA_CAPTURE", capture.to_str().unwrap().to_string()),
        ("GPUTRACE_NCCL_CAPTURE", "/tmp/never-%p.txt".into()),
        ("GPUTRACE_DELAY", "0.5".into()),
        ("GPUTRACE_DURATION", "30".into()),
        ("GPUTRACE_CAPTURE_RANGE", "nvtx:step@2-3".into()),
        // No MPI or NCCL stream ever appears: the watchdog never stops it.
        ("GPUTRACE_HANG_TIMEOUT", "600".into()),
        ("GPUTRACE_ON_HANG", "snapshot".into()),
        ("GPUTRACE_FLIGHT_RECORDER", "60".into()),
        ("GPUTRACE_SAMPLING", "10ms".into()),
        ("GPUTRACE_SAMPLING_STACK", "8k".into()),
    ]
    .into_iter()
    .collect();
    let mut cmd = Command::new(gputrace());
    let mut want: HashMap<&str, String> = HashMap::new();
    for v in VARS.iter().chain(DEVELOPER_VARS) {
        cmd.arg(v.flag);
        let value = if v.ty == VarType::Bool {
            (if v.default == "true" { "false" } else { "true" }).to_string()
        } else {
            let value = values.get(v.name).unwrap_or_else(|| panic!("{}: no value in this test", v.name));
            cmd.arg(value);
            value.clone()
        };
        want.insert(v.name, value);
        // The environment says otherwise: the flag wins.
        cmd.env(v.name, if v.ty == VarType::Bool { v.default } else { "from-the-environment" });
    }
    let out = run(cmd.arg("/usr/bin/env"));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let seen: HashMap<&str, &str> = stdout.lines().filter_map(|l| l.split_once('=')).collect();
    for (name, value) in &want {
        assert_eq!(seen.get(name), Some(&value.as_str()), "{name} as the program sees it");
    }
    assert_eq!(want.len(), VARS.len() + DEVELOPER_VARS.len());
}

#[test]
fn a_bad_flag_value_is_refused_like_the_variable() {
    for (flag, value, var) in [
        ("--cuda", "kernels", "GPUTRACE_CUDA_ENABLE"),
        ("--nccl", "", "GPUTRACE_NCCL_ENABLE"),
        ("--cuda-buffer", "1G", "GPUTRACE_CUDA_BUFFER"),
        ("--nvlink-interval", "often", "GPUTRACE_NVLINK_INTERVAL"),
        ("--gpu-metrics-interval", "fast", "GPUTRACE_GPU_METRICS_INTERVAL"),
        ("--timer", "hpet", "GPUTRACE_TIMER"),
        ("--delay", "soon", "GPUTRACE_DELAY"),
        ("--capture-range", "nvtx:", "GPUTRACE_CAPTURE_RANGE"),
    ] {
        let dir = fresh_dir("badflag");
        let out = trace(&dir, &[flag, value, "/bin/echo", "never"], &[]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag}: {err}");
        assert!(out.stdout.is_empty(), "the program must not run");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(&format!("{var}={value}: ")), "{flag}: {err}");
        assert!(!dir.exists());
    }
}

#[test]
fn help_lists_every_flag_with_its_variable() {
    let out = run(Command::new(gputrace()).arg("--help"));
    assert!(out.status.success());
    let help = text(&out.stdout);
    for v in VARS.iter().chain(DEVELOPER_VARS) {
        assert!(help.contains(v.flag), "{} missing", v.flag);
        assert!(help.contains(v.name), "{} missing", v.name);
    }
}

#[test]
fn a_bad_choice_of_format_or_matrix_is_one_line_listing_the_choices() {
    for (args, choices) in [
        (&["stats", "--format", "xml", "x"][..], "table, csv, json"),
        (&["export", "--format", "pdf", "-o", "/tmp/x.json", "x"][..], "chrome, vite-otf2"),
        (&["plot", "--matrix", "cpu", "-o", "/tmp/x.png", "x"][..], "mpi, gpu"),
    ] {
        let out = run(Command::new(gputrace()).args(args));
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("gputrace: error: invalid value") && err.contains(choices), "{err}");
    }
}

/// A merged synthetic job, for the commands that read archives.
fn small_archive() -> std::path::PathBuf {
    let (dir, _) = synthetic_job("cli-archive", 2, 20, (0, 0));
    let out = merge(&dir, false);
    assert!(out.status.success(), "{}", text(&out.stderr));
    dir
}

#[test]
fn stats_into_a_closed_pipe_ends_quietly_with_success() {
    // `gputrace stats DIR | head -1`: the reader closes the pipe before
    // the reports are written (here before anything is, which is certain).
    let dir = small_archive();
    for format in ["table", "csv", "json"] {
        let mut child = Command::new(gputrace())
            .args(["stats", "--format", format])
            .arg(&dir)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{format}: exit {:?}: {}", out.status, text(&out.stderr));
        assert_eq!(text(&out.stderr), "", "{format}");
    }
}

#[test]
fn a_near_miss_of_a_subcommand_before_an_experiment_is_not_traced() {
    let dir = small_archive();
    for (word, meant) in [("stat", "stats"), ("analyse", "analyze"), ("exprot", "export")] {
        let out = run(Command::new(gputrace()).arg(word).arg(&dir));
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{word}: {err}");
        assert!(err.contains(&format!("did you mean `gputrace {meant}`?")), "{word}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    // What follows is not an experiment: `stat` is the program traced.
    let out_dir = fresh_dir("cli-stat");
    let out = trace(&out_dir, &["stat", "/etc/hostname"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("/etc/hostname"), "{}", text(&out.stdout));
}

#[test]
fn stats_takes_nsys_report_names_and_comma_lists() {
    let dir = small_archive();
    let out = run(Command::new(gputrace())
        .args([
            "stats",
            "--format",
            "json",
            "--report",
            "cuda_gpu_kern_sum,mpi_sum",
            "--report",
            "cuda_gpu_mem_time_sum",
        ])
        .arg(&dir));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut keys: Vec<&String> = json.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["gpu_kern_sum", "gpu_mem_time_sum", "mpi_sum"]);
}

/// `stats -o PREFIX`, as `nsys stats --output`: a file per report for
/// tables and CSV, one JSON file; each the same as that report on standard
/// output; a link at a file's name replaced, its target untouched.
#[test]
fn stats_writes_a_file_per_report_with_o_prefix() {
    let dir = small_archive();
    let out_dir = fresh_dir("cli-stats-o");
    std::fs::create_dir_all(&out_dir).unwrap();
    let prefix = out_dir.join("run");
    let target = out_dir.join("precious");
    std::fs::write(&target, "keep").unwrap();
    std::os::unix::fs::symlink(&target, out_dir.join("run_mpi_sum.csv")).unwrap();
    let reports = "mpi_sum,cuda_api_sum";
    for (format, files) in [
        ("csv", &["run_mpi_sum.csv", "run_cuda_api_sum.csv"][..]),
        ("table", &["run_mpi_sum.txt", "run_cuda_api_sum.txt"][..]),
        ("json", &["run.json"][..]),
    ] {
        let out = run(Command::new(gputrace())
            .args(["stats", "--format", format, "--report", reports, "-o"])
            .arg(&prefix)
            .arg(&dir));
        assert!(out.status.success(), "{format}: {}", text(&out.stderr));
        assert_eq!(text(&out.stdout), "", "{format}: nothing on standard output");
        for file in files {
            assert!(text(&out.stderr).contains(file), "{format}: {}", text(&out.stderr));
        }
        let whole = |report: &str| {
            let out = run(Command::new(gputrace()).args(["stats", "--format", format, "--report", report]).arg(&dir));
            assert!(out.status.success(), "{}", text(&out.stderr));
            text(&out.stdout)
        };
        if format == "json" {
            assert_eq!(std::fs::read_to_string(out_dir.join(files[0])).unwrap(), whole(reports));
        } else {
            for (file, report) in files.iter().zip(["mpi_sum", "cuda_api_sum"]) {
                let written = std::fs::read_to_string(out_dir.join(file)).unwrap();
                assert_eq!(written, whole(report), "{file}");
                assert!(!written.contains("# "), "{file}: one report, no report header: {written}");
            }
        }
    }
    assert!(std::fs::symlink_metadata(out_dir.join("run_mpi_sum.csv")).unwrap().is_file());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
}

#[test]
fn analyze_writes_its_report_to_o_file() {
    let dir = small_archive();
    let out_dir = fresh_dir("cli-analyze-o");
    std::fs::create_dir_all(&out_dir).unwrap();
    for format in ["table", "json"] {
        let file = out_dir.join(format!("analysis.{format}"));
        let out = run(Command::new(gputrace()).args(["analyze", "--format", format, "-o"]).arg(&file).arg(&dir));
        assert!(out.status.success(), "{format}: {}", text(&out.stderr));
        assert_eq!(text(&out.stdout), "", "{format}");
        let stdout = run(Command::new(gputrace()).args(["analyze", "--format", format]).arg(&dir));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), text(&stdout.stdout), "{format}");
        if format == "json" {
            let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
            assert!(json.get("totals").is_some(), "{json}");
        }
    }
}

#[test]
fn o_where_a_subcommand_cannot_use_it_is_one_error_line() {
    let dir = small_archive();
    for (args, want) in [
        (vec!["merge", "--force", "-o", "/tmp/x"], "gputrace merge takes no -o"),
        (vec!["-o", "/tmp/x", "merge", "--force"], "gputrace merge takes no -o"),
        (vec!["info", "config-vars", "-o", "/tmp/x"], "gputrace info config-vars takes no -o"),
        (vec!["-o", "/tmp/a", "stats", "-o", "/tmp/b"], "-o given twice"),
        (vec!["stats", "--short", "-o", "/tmp/x"], "cannot be used with"),
    ] {
        let mut cmd = Command::new(gputrace());
        cmd.args(&args);
        if args[..2] != ["info", "config-vars"] {
            cmd.arg(&dir);
        }
        let out = run(&mut cmd);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("gputrace: error: ") && err.contains(want), "{args:?}: {err}");
    }
    assert!(dir.join("traces.otf2").is_file(), "the refused merge left the archive");
}

/// Each subcommand's --help says what its -o is.
#[test]
fn each_help_describes_o_as_its_command_uses_it() {
    for (args, want) in [
        (&["--help"][..], "Experiment directory"),
        (&["stats", "--help"][..], "PREFIX_<report>.csv"),
        (&["analyze", "--help"][..], "Write the analysis"),
        (&["export", "--help"][..], "for vite-otf2"),
        (&["plot", "--help"][..], "The PNG file to write"),
    ] {
        let out = run(Command::new(gputrace()).args(args));
        assert!(out.status.success());
        let help = text(&out.stdout);
        assert!(help.contains(want), "{args:?}: {help}");
        if args.len() > 1 {
            assert!(!help.contains("Experiment directory"), "{args:?}: {help}");
        }
    }
    for args in [&["merge", "--help"][..], &["info", "config-vars", "--help"][..]] {
        let help = text(&run(Command::new(gputrace()).args(args)).stdout);
        assert!(!help.contains("-o"), "{args:?}: {help}");
    }
}
