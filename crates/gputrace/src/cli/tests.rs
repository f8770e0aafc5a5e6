use super::*;
use clap::CommandFactory;

#[test]
fn near_misses_of_a_subcommand_are_named() {
    assert_eq!(edit_distance("stat", "stats"), 1);
    assert_eq!(edit_distance("analyse", "analyze"), 1);
    assert_eq!(edit_distance("exprot", "export"), 1);
    assert_eq!(edit_distance("mpirun", "merge"), 4);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("traces.otf2"), b"").unwrap();
    let guess = |w: &str, next: &std::path::Path| did_you_mean(w.as_ref(), Some(next.as_os_str()));
    assert_eq!(guess("stat", dir.path()).as_deref(), Some("stats"));
    assert_eq!(guess("analyse", &dir.path().join("traces.otf2")).as_deref(), Some("analyze"));
    assert_eq!(guess("plots", dir.path()).as_deref(), Some("plot"));
    // Not an experiment after it, a path, or far from every name: a
    // program to trace.
    assert_eq!(guess("stat", std::path::Path::new("/etc/hostname")), None);
    assert_eq!(guess("./stat", dir.path()), None);
    assert_eq!(guess("mpirun", dir.path()), None);
    assert_eq!(did_you_mean("stat".as_ref(), None), None);
}
use config::{DEVELOPER_VARS, VARS, Var, VarType};

/// A value of `v`'s type, not its default.
fn sample(v: &Var) -> &'static str {
    match v.ty {
        VarType::Bool => "",
        VarType::Size => "48M",
        VarType::Path => "/some where/x",
        VarType::Duration => "3ms",
        VarType::Count => "3",
        VarType::Seconds => "2.5",
        VarType::CaptureRange => "nvtx:step@2-4",
        VarType::Set(spec) => spec.members[1].name,
        VarType::Choice(values) => values[1].0,
    }
}

fn all_vars() -> impl Iterator<Item = &'static Var> {
    VARS.iter().chain(DEVELOPER_VARS)
}

#[test]
fn every_variable_has_a_flag_that_sets_it() {
    for v in all_vars() {
        let mut args = vec!["gputrace", v.flag];
        let want = match v.ty {
            VarType::Bool => {
                if v.default == "true" {
                    "false"
                } else {
                    "true"
                }
            }
            _ => {
                args.push(sample(v));
                sample(v)
            }
        };
        args.push("prog");
        let cli = Cli::try_parse_from(&args).unwrap_or_else(|e| panic!("{}: {e}", v.flag));
        let env = vec![(v.name.to_string(), "from the environment".to_string())];
        let settings = cli.settings_over(env);
        assert_eq!(settings, [(v.name.to_string(), want.to_string())], "{}", v.flag);
        assert!(matches!(cli.command, Some(Command::Run(_))));
    }
    // Without flags, the environment stays as it is.
    let cli = Cli::try_parse_from(["gputrace", "prog"]).unwrap();
    let env = vec![("GPUTRACE_CUDA_ENABLE".to_string(), "kernel".to_string())];
    assert_eq!(cli.settings_over(env.clone()), env);
    // Exactly the table's variables have a flag.
    let mut set: Vec<&str> = Cli::try_parse_from(flag_line()).unwrap().flags().iter().map(|(n, _)| *n).collect();
    let mut names: Vec<&str> = all_vars().map(|v| v.name).collect();
    set.sort();
    names.sort();
    assert_eq!(set, names);
}

/// Every flag at once.
fn flag_line() -> Vec<&'static str> {
    let mut args = vec!["gputrace"];
    for v in all_vars() {
        args.push(v.flag);
        if v.ty != VarType::Bool {
            args.push(sample(v));
        }
    }
    args.push("prog");
    args
}

#[test]
fn help_documents_every_flag_with_its_variable() {
    let cmd = Cli::command();
    for v in all_vars() {
        let long = v.flag.trim_start_matches("--");
        let arg = cmd.get_arguments().find(|a| a.get_long() == Some(long)).unwrap_or_else(|| panic!("{}", v.flag));
        let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
        assert!(help.contains(v.name), "{}: {help}", v.flag);
    }
    let help = Cli::command().render_long_help().to_string();
    for v in all_vars() {
        assert!(help.contains(v.flag) && help.contains(v.name), "{}", v.flag);
    }
}

#[test]
fn a_set_flag_is_passed_on_as_written() {
    // The variable's parser judges it, with its own message.
    let cli = Cli::try_parse_from(["gputrace", "--cuda", "kernels", "prog"]).unwrap();
    assert_eq!(cli.settings_over(vec![]), [("GPUTRACE_CUDA_ENABLE".to_string(), "kernels".to_string())]);
    let err = config::Config::from_pairs(&cli.settings_over(vec![])).unwrap_err();
    assert!(err[0].to_string().starts_with("GPUTRACE_CUDA_ENABLE=kernels: unknown value"), "{}", err[0]);
}

#[test]
fn formats_and_matrices_are_enums() {
    let stats = |args: &[&str]| Cli::try_parse_from(args).map(|c| c.command);
    match stats(&["gputrace", "stats", "d"]).unwrap() {
        Some(Command::Stats { format: StatsFormat::Table, .. }) => {}
        other => panic!("{other:?}"),
    }
    match stats(&["gputrace", "stats", "--format", "json", "d"]).unwrap() {
        Some(Command::Stats { format, .. }) => {
            assert_eq!(format.table_format(), report::table::Format::Json)
        }
        other => panic!("{other:?}"),
    }
    let err = stats(&["gputrace", "stats", "--format", "xml", "d"]).unwrap_err().to_string();
    assert!(err.contains("invalid value 'xml'") && err.contains("table, csv, json"), "{err}");
    for (name, want) in
        [("chrome", ExportFormat::Chrome), ("vite-otf2", ExportFormat::ViteOtf2), ("vite", ExportFormat::ViteOtf2)]
    {
        match stats(&["gputrace", "export", "--format", name, "d"]).unwrap() {
            Some(Command::Export { format, .. }) => assert_eq!(format, want),
            other => panic!("{other:?}"),
        }
    }
    assert!(stats(&["gputrace", "export", "--format", "svg", "d"]).is_err());
    for m in [Matrix::Mpi, Matrix::Gpu] {
        match stats(&["gputrace", "plot", "--matrix", m.name(), "d"]).unwrap() {
            Some(Command::Plot { matrix, .. }) => assert_eq!(matrix, Some(m)),
            other => panic!("{other:?}"),
        }
    }
    let err = stats(&["gputrace", "plot", "--matrix", "cpu", "d"]).unwrap_err().to_string();
    assert!(err.contains("mpi, gpu"), "{err}");
    match stats(&["gputrace", "analyze", "--format", "json", "--gap-threshold", "2ms", "d"]).unwrap() {
        Some(Command::Analyze { format: AnalyzeFormat::Json, gap_threshold, sync_min_calls: 10, .. }) => {
            assert_eq!(gap_threshold, "2ms");
        }
        other => panic!("{other:?}"),
    }
    match stats(&["gputrace", "analyze", "d"]).unwrap() {
        Some(Command::Analyze { format: AnalyzeFormat::Table, gap_threshold, short_kernel_min: 10, .. }) => {
            assert_eq!(config::parse_duration(&gap_threshold), Some(std::time::Duration::from_millis(500)));
        }
        other => panic!("{other:?}"),
    }
    let err = stats(&["gputrace", "analyze", "--format", "csv", "d"]).unwrap_err().to_string();
    assert!(err.contains("table, json"), "{err}");
    let help = Cli::command().find_subcommand("analyze").unwrap().clone().render_long_help().to_string();
    for word in ["Late Sender", "Wait at NxN", "Early Reduce", "--gap-threshold", "--format"] {
        assert!(help.contains(word), "{word}: {help}");
    }
    // As gputrace reports it: one line with the allowed values.
    let line = one_line(&stats(&["gputrace", "stats", "--format", "xml", "d"]).unwrap_err());
    assert_eq!(line, "invalid value 'xml' for '--format <FORMAT>' [possible values: table, csv, json]");
}
