//! Parsing every `GPUTRACE_*` variable, in one place.
//!
//! The `gputrace` command parses strictly ([`Config::from_env`]): a bad value
//! or an unknown `GPUTRACE_` name stops it before the program starts, with
//! one line naming the variable, the value and what is allowed. Inside a
//! traced process, parsing is lenient ([`Config::from_env_lenient`]): a bad
//! value falls back to the default with a warning and never breaks the
//! program.
//!
//! The variables are one table ([`vars`]); the members of the set-valued
//! ones are enums declared once there ([`MpiGroup`], [`CudaSource`],
//! [`NcclLevel`]), which the producers test membership with. Test hooks,
//! which are no settings, are listed in [`hooks`].
//!
//! Depends on no other gputrace crate: the command, the runtime and the
//! producers all read it.

pub mod filter;
pub mod hooks;
pub mod sets;
pub mod vars;

mod error;
mod settings;
mod values;
mod window;

/// The variable by which `gputrace` tells the sampler that the processes
/// it is preloaded into were started by torchrun, which passes its whole
/// environment to its workers and has no way to pass `LD_PRELOAD` to them
/// only: `torchrun` (its one value). The sampler then samples a process
/// only if torchrun's agent made it a worker (`docs/sampling.md`, *How*).
/// gputrace's own hand-over, not a setting (hence no `GPUTRACE_` prefix).
pub const SAMPLED_LAUNCHER_VARIABLE: &str = "_GPUTRACE_SAMPLED_LAUNCHER";

pub use error::{ConfigError, SHOWN, shown};
pub use filter::Filter;
pub use sets::{Alias, EnabledSet, MemberDoc, SetMember, SetProblem, SetSpec, parse_set};
pub use settings::Config;
pub use values::{MIN_TOTAL_MEMORY, Value, parse_bool, parse_duration, parse_seconds, parse_size, parse_value};
pub use vars::{CudaSource, DEVELOPER_VARS, MpiGroup, NcclLevel, VARS, Var, VarType};
pub use window::{CaptureRange, WINDOW_ORIGIN_VARIABLE, parse_capture_range};
