//! `gputrace`: run a program (usually through an MPI launcher) with
//! gputrace's producers injected into its ranks, then merge what they
//! recorded into one OTF2 archive and print a summary.

#![deny(unsafe_op_in_unsafe_fn)]

mod cli;
mod experiment;
mod info;
mod launch;
mod libs;
mod merge;
mod trace;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command, Info};

/// An error in what the user asked for: exit status 2, as for bad usage.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
        Err(e) => {
            if is_broken_pipe(&e) {
                return ExitCode::SUCCESS;
            }
            eprintln!("gputrace: error: {e:#}");
            let code = if e.is::<UsageError>() {
                2
            } else if e.is::<launch::CannotStart>() {
                127
            } else {
                1
            };
            ExitCode::from(code)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<i32> {
    let settings = cli.settings();
    match cli.command {
        None => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            cmd.print_help()?;
            Ok(2)
        }
        Some(Command::Info { what: Info::ConfigVars { full } }) => {
            let mut out = std::io::stdout().lock();
            info::config_vars(&mut out, full)?;
            out.flush()?;
            Ok(0)
        }
        Some(Command::Merge { dir, force }) => {
            let config = trace::validate(&settings)?;
            trace::merge_again(&dir, &config, force)?;
            Ok(0)
        }
        Some(Command::Run(argv)) => trace::trace(&argv, &settings),
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe))
}
