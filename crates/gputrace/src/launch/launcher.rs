//! Recognising the launcher in a command line and rewriting it so that the
//! ranks, and only the ranks, get gputrace's environment.
//!
//! `LD_PRELOAD` must never reach the launcher itself (mpirun, srun,
//! torchrun): each launcher has its own way to pass a variable to the
//! processes it starts, and that is what we use. Torchrun has none: it
//! gets the sampler's library only, which stays dormant in it.

use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::process::Command;

use raw::Producer;

/// The launchers gputrace knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launcher {
    /// Open MPI's `mpirun`/`mpiexec`: `-x NAME=VALUE` per variable.
    OpenMpi,
    /// MPICH's Hydra (`mpiexec.hydra`, MPICH and Intel MPI `mpirun`):
    /// forwards the environment; `-genv NAME VALUE` for LD_PRELOAD.
    Hydra,
    /// Slurm's `srun`: `--export=ALL,NAME=VALUE`.
    Srun,
    /// PyTorch's `torchrun`: workers inherit its environment.
    Torchrun,
    /// No launcher: the command is the program.
    None,
}

/// Which MPI ABI the ranks use, so that the matching hooks are preloaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MpiFlavor {
    OpenMpi,
    Mpich,
}

impl Launcher {
    /// Recognises the launcher of `argv0`, asking a generic `mpirun` or
    /// `mpiexec` for its version to tell Open MPI from Hydra.
    pub fn detect(argv0: &OsStr) -> Launcher {
        let name = Path::new(argv0).file_name().and_then(|n| n.to_str()).unwrap_or("");
        match name {
            "orterun" | "prterun" | "mpirun.openmpi" | "mpiexec.openmpi" => Launcher::OpenMpi,
            "mpiexec.hydra" | "mpirun.mpich" | "mpiexec.mpich" | "mpiexec.intel" => Launcher::Hydra,
            "srun" => Launcher::Srun,
            "torchrun" => Launcher::Torchrun,
            "mpirun" | "mpiexec" => Self::ask_version(argv0),
            _ => Launcher::None,
        }
    }

    fn ask_version(argv0: &OsStr) -> Launcher {
        let Ok(out) = Command::new(argv0).arg("--version").output() else {
            return Launcher::OpenMpi;
        };
        let text = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
        Self::from_version_text(&text)
    }

    pub fn from_version_text(text: &str) -> Launcher {
        if text.contains("Open MPI") || text.contains("OpenRTE") || text.contains("PRRTE") {
            Launcher::OpenMpi
        } else if text.contains("HYDRA") || text.contains("Intel(R) MPI") || text.contains("MPICH") {
            Launcher::Hydra
        } else {
            Launcher::OpenMpi
        }
    }

    /// Options of this launcher that take a value (so the value is not
    /// mistaken for the program), and those that take two.
    fn options_with_values(self) -> (&'static [&'static str], &'static [&'static str]) {
        match self {
            Launcher::OpenMpi => (
                &[
                    "-np",
                    "-n",
                    "--np",
                    "-c",
                    "-H",
                    "--host",
                    "-host",
                    "--hostfile",
                    "-hostfile",
                    "--machinefile",
                    "-machinefile",
                    "--default-hostfile",
                    "-x",
                    "--map-by",
                    "-map-by",
                    "--rank-by",
                    "-rank-by",
                    "--bind-to",
                    "-bind-to",
                    "-wdir",
                    "--wdir",
                    "-wd",
                    "--wd",
                    "-npernode",
                    "--npernode",
                    "-npersocket",
                    "--npersocket",
                    "-N",
                    "--output-filename",
                    "-output-filename",
                    "--prefix",
                    "-am",
                    "--am",
                    "--tune",
                    "-tune",
                    "--path",
                    "-path",
                    "--preload-files",
                    "--personality",
                    "--timeout",
                    "--report-bindings-file",
                    "-s",
                    "--stdin",
                    "-stdin",
                    "--cpus-per-proc",
                    "--cpus-per-rank",
                    "--use-hwthread-cpus-file",
                ],
                &["-mca", "--mca", "-gmca", "--gmca"],
            ),
            Launcher::Hydra => (
                &[
                    "-n",
                    "-np",
                    "-f",
                    "-hostfile",
                    "-machinefile",
                    "-hosts",
                    "-host",
                    "-ppn",
                    "-genvlist",
                    "-envlist",
                    "-wdir",
                    "-dir",
                    "-configfile",
                    "-launcher",
                    "-bootstrap",
                    "-rmk",
                    "-iface",
                    "-bind-to",
                    "-map-by",
                    "-binding",
                    "-errfile-pattern",
                    "-outfile-pattern",
                    "-launcher-exec",
                    "-bootstrap-exec",
                    "-demux",
                    "-prepend-pattern",
                ],
                &["-genv", "-env"],
            ),
            Launcher::Srun => (
                &[
                    "-n",
                    "-N",
                    "-c",
                    "-p",
                    "-t",
                    "-A",
                    "-J",
                    "-o",
                    "-e",
                    "-i",
                    "-w",
                    "-x",
                    "-D",
                    "-q",
                    "-G",
                    "-m",
                    "-r",
                    "-d",
                    "-C",
                    "-L",
                    "-M",
                    "-W",
                    "-S",
                    "--ntasks",
                    "--nodes",
                    "--cpus-per-task",
                    "--partition",
                    "--time",
                    "--account",
                    "--job-name",
                    "--output",
                    "--error",
                    "--gpus",
                    "--gres",
                    "--mem",
                    "--export",
                    "--mpi",
                    "--qos",
                ],
                &[],
            ),
            Launcher::Torchrun => (
                &[
                    "--nproc-per-node",
                    "--nproc_per_node",
                    "--nnodes",
                    "--node-rank",
                    "--node_rank",
                    "--master-addr",
                    "--master_addr",
                    "--master-port",
                    "--master_port",
                    "--rdzv-backend",
                    "--rdzv_backend",
                    "--rdzv-endpoint",
                    "--rdzv_endpoint",
                    "--rdzv-id",
                    "--rdzv_id",
                    "--rdzv-conf",
                    "--rdzv_conf",
                    "--max-restarts",
                    "--max_restarts",
                    "--monitor-interval",
                    "--log-dir",
                    "--log_dir",
                    "-r",
                    "--redirects",
                    "-t",
                    "--tee",
                    "--role",
                    "--local-addr",
                    "--logs-specs",
                    "--start-method",
                ],
                &[],
            ),
            Launcher::None => (&[], &[]),
        }
    }

    /// The index in `argv` of the program the launcher starts (`argv[0]`
    /// itself when there is no launcher).
    pub fn program_index(self, argv: &[OsString]) -> Option<usize> {
        if self == Launcher::None {
            return (!argv.is_empty()).then_some(0);
        }
        let (one, two) = self.options_with_values();
        let mut i = 1;
        while i < argv.len() {
            let a = argv[i].to_string_lossy();
            if a == "--" {
                return (i + 1 < argv.len()).then_some(i + 1);
            }
            if !a.starts_with('-') || a == "-" {
                return Some(i);
            }
            if a.contains('=') {
                i += 1;
            } else if two.contains(&a.as_ref()) {
                i += 3;
            } else if one.contains(&a.as_ref()) {
                i += 2;
            } else {
                i += 1;
            }
        }
        None
    }

    /// The launcher's options of the job that the merge as an MPI job
    /// (`--merge-ranks`) must be started with too: for srun, the PMI
    /// (`--mpi`: Open MPI's ranks need `pmix`, MPICH's `pmi2`, and the
    /// merge's library is chosen from it) and where the job may run
    /// (partition, account, QOS). None for the other launchers: the MPI of
    /// their ranks is the launcher's own.
    pub fn merge_job_options(self, argv: &[OsString]) -> Vec<OsString> {
        if self != Launcher::Srun {
            return Vec::new();
        }
        const CARRIED: [(&str, &str); 4] = [("--mpi", ""), ("--partition", "-p"), ("--account", "-A"), ("--qos", "-q")];
        let end = self.program_index(argv).unwrap_or(argv.len());
        let mut out = Vec::new();
        let mut i = 1;
        while i < end {
            let a = argv[i].to_string_lossy();
            if a == "--" {
                break;
            }
            let (name, inline) = match a.split_once('=') {
                Some((n, _)) if n.starts_with("--") => (n, true),
                _ => (a.as_ref(), false),
            };
            let carried = CARRIED.iter().any(|(long, short)| name == *long || (!short.is_empty() && name == *short));
            let takes_value = !inline && self.options_with_values().0.contains(&name);
            if carried {
                out.push(argv[i].clone());
                if takes_value && let Some(v) = argv.get(i + 1) {
                    out.push(v.clone());
                }
            }
            i += if takes_value { 2 } else { 1 };
        }
        out
    }

    /// The name to put in the experiment directory: the program, or for
    /// `python script.py` / `python -m module`, the script or module.
    pub fn program_name(self, argv: &[OsString]) -> String {
        let Some(i) = self.program_index(argv) else {
            return file_name(&argv[0]);
        };
        let prog = file_name(&argv[i]);
        if !prog.starts_with("python") {
            return prog;
        }
        let mut j = i + 1;
        while j < argv.len() {
            let a = argv[j].to_string_lossy();
            if a == "-m" || a == "-c" {
                return argv.get(j + 1).filter(|_| a == "-m").map(|m| file_name(m)).unwrap_or(prog);
            }
            if !a.starts_with('-') {
                return file_name(&argv[j]).trim_end_matches(".py").to_string();
            }
            j += 1;
        }
        prog
    }

    /// Rewrites `argv` so that the processes the launcher starts get `env`,
    /// and returns the variables to set on the launcher itself. The
    /// variables that [`rank_only`] names never reach the launcher (it would load
    /// gputrace's libraries too: Open MPI's mpirun initializes CUDA), except
    /// where no launcher stands between us and the ranks — and through
    /// torchrun, which passes its environment to its workers and has no
    /// other way; it creates no CUDA context and loads no NCCL, and of
    /// `LD_PRELOAD` it gets the sampler only (never the MPI hooks), told by
    /// [`config::SAMPLED_LAUNCHER_VARIABLE`] to stay dormant outside
    /// torchrun's workers, so it leaves no trace.
    pub fn inject(self, argv: &[OsString], env: &[(String, OsString)]) -> (Vec<OsString>, Vec<(String, OsString)>) {
        let (rank_only, rest): (Vec<_>, Vec<_>) = env.iter().cloned().partition(|(k, _)| rank_only(k));
        let mut out: Vec<OsString> = vec![argv[0].clone()];
        match self {
            Launcher::None => return (argv.to_vec(), env.to_vec()),
            Launcher::OpenMpi => {
                for (k, v) in env {
                    out.push("-x".into());
                    out.push(assignment(k, v));
                }
            }
            Launcher::Hydra => {
                for (k, v) in &rank_only {
                    out.push("-genv".into());
                    out.push(k.into());
                    out.push(v.clone());
                }
            }
            Launcher::Srun => {
                let mut export = OsString::from("--export=ALL");
                for (k, v) in &rank_only {
                    export.push(",");
                    export.push(assignment(k, v));
                }
                out.push(export);
            }
            Launcher::Torchrun => {
                let mut env = rest;
                for (k, v) in rank_only {
                    if k != "LD_PRELOAD" {
                        env.push((k, v));
                    } else if let Some(v) = sampler_only(&v) {
                        env.push((k, v));
                        env.push((config::SAMPLED_LAUNCHER_VARIABLE.into(), "torchrun".into()));
                    }
                }
                out.extend(argv[1..].iter().cloned());
                return (out, env);
            }
        }
        out.extend(argv[1..].iter().cloned());
        (out, rest)
    }
}

/// Whether `var` is for the ranks only, never for a launcher: the
/// variables that load gputrace's libraries.
fn rank_only(var: &str) -> bool {
    raw::source::loader_variables().any(|v| v == var)
}

/// The `LD_PRELOAD` that may pass through torchrun: the call-stack
/// sampler's library and the user's own, none of gputrace's other
/// libraries; `None` without the sampler (torchrun then passes on the
/// user's `LD_PRELOAD` as it found it).
fn sampler_only(preload: &OsStr) -> Option<OsString> {
    let sampler = raw::source::source(Producer::Sampling).and_then(|s| s.library)?;
    let paths = std::env::split_paths(preload)
        .filter(|p| {
            let name = file_name(p.as_os_str());
            name == sampler || !name.starts_with("libgputrace")
        })
        .collect::<Vec<_>>();
    if !paths.iter().any(|p| file_name(p.as_os_str()) == sampler) {
        return None;
    }
    std::env::join_paths(paths).ok()
}

fn assignment(k: &str, v: &OsStr) -> OsString {
    let mut s = OsString::from(k);
    s.push("=");
    s.push(v);
    s
}

fn file_name(s: &OsStr) -> String {
    Path::new(s).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| s.to_string_lossy().into())
}

/// Guesses the MPI a program uses from the libraries its ELF file names
/// (programs linked against `libmpich`/`libmpi_abi`-style MPICH use the
/// MPICH ABI); scripts and unknown files get Open MPI, the default here.
pub fn guess_flavor(program: &Path) -> MpiFlavor {
    let Ok(bytes) = std::fs::read(program) else {
        return MpiFlavor::OpenMpi;
    };
    if !bytes.starts_with(b"\x7fELF") {
        return MpiFlavor::OpenMpi;
    }
    let has = |needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
    if has(b"libmpich.so") || has(b"libmpi_intel") || has(b"libmpicxx.so") {
        MpiFlavor::Mpich
    } else {
        MpiFlavor::OpenMpi
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<OsString> {
        s.split_whitespace().map(OsString::from).collect()
    }

    #[test]
    fn finds_the_program_after_launcher_options() {
        let a = argv("mpirun --oversubscribe -np 4 --mca btl self,tcp -x FOO ./app -n 3");
        assert_eq!(Launcher::OpenMpi.program_index(&a), Some(9));
        assert_eq!(Launcher::OpenMpi.program_name(&a), "app");
        let a = argv("mpiexec.mpich -n 2 -genv A B python3 -u train.py --lr 1");
        assert_eq!(Launcher::Hydra.program_name(&a), "train");
        let a = argv("torchrun --nproc-per-node 2 --master_port=29500 train.py");
        assert_eq!(Launcher::Torchrun.program_name(&a), "train.py");
        let a = argv("srun -n 8 --ntasks-per-node=4 ./solver");
        assert_eq!(Launcher::Srun.program_name(&a), "solver");
        assert_eq!(Launcher::None.program_name(&argv("/bin/echo hi")), "echo");
        assert_eq!(Launcher::Hydra.program_name(&argv("mpiexec -n 2 python -m mypkg.run")), "mypkg.run");
    }

    #[test]
    fn the_merge_job_gets_the_programs_pmi_and_partition() {
        let a = argv("srun --mpi=pmix -p debug -n 8 --account proj -q high --export=ALL ./app --mpi=no -p x");
        assert_eq!(Launcher::Srun.merge_job_options(&a), argv("--mpi=pmix -p debug --account proj -q high"));
        let a = argv("srun --mpi pmi2 -n 2 ./app");
        assert_eq!(Launcher::Srun.program_name(&a), "app");
        assert_eq!(Launcher::Srun.merge_job_options(&a), argv("--mpi pmi2"));
        assert!(Launcher::Srun.merge_job_options(&argv("srun -n 2 ./a")).is_empty());
        assert!(Launcher::OpenMpi.merge_job_options(&argv("mpirun --mca pml ob1 -np 2 ./a")).is_empty());
    }

    #[test]
    fn ld_preload_goes_to_the_ranks_only() {
        let env = vec![
            ("LD_PRELOAD".to_string(), OsString::from("/x/libgputrace_mpi.so")),
            ("GPUTRACE_EXPERIMENT_DIRECTORY".to_string(), OsString::from("/tmp/e")),
        ];
        let (args, launcher_env) = Launcher::OpenMpi.inject(&argv("mpirun -np 2 ./a"), &env);
        assert_eq!(
            args,
            argv("mpirun -x LD_PRELOAD=/x/libgputrace_mpi.so -x GPUTRACE_EXPERIMENT_DIRECTORY=/tmp/e -np 2 ./a")
        );
        assert!(launcher_env.iter().all(|(k, _)| k != "LD_PRELOAD"));
        let (args, launcher_env) = Launcher::Hydra.inject(&argv("mpiexec -n 2 ./a"), &env);
        assert_eq!(args, argv("mpiexec -genv LD_PRELOAD /x/libgputrace_mpi.so -n 2 ./a"));
        assert_eq!(launcher_env.len(), 1);
        let (args, _) = Launcher::Srun.inject(&argv("srun -n 2 ./a"), &env);
        assert_eq!(args, argv("srun --export=ALL,LD_PRELOAD=/x/libgputrace_mpi.so -n 2 ./a"));
        let cuda = vec![("CUDA_INJECTION64_PATH".to_string(), OsString::from("/x/libgputrace_cuda.so"))];
        let (_, torch_env) = Launcher::Torchrun.inject(&argv("torchrun --nproc-per-node 2 t.py"), &cuda);
        assert_eq!(torch_env, cuda);
        // Of LD_PRELOAD, torchrun passes the sampler on (dormant outside its
        // workers) and the user's libraries, never the MPI hooks.
        let (_, torch_env) = Launcher::Torchrun.inject(&argv("torchrun t.py"), &env);
        assert!(torch_env.iter().all(|(k, _)| k != "LD_PRELOAD" && k != config::SAMPLED_LAUNCHER_VARIABLE));
        let sampled = vec![(
            "LD_PRELOAD".to_string(),
            OsString::from("/x/libgputrace_mpi.so:/x/libgputrace_sampling.so:/u/libmine.so"),
        )];
        let (args, torch_env) = Launcher::Torchrun.inject(&argv("torchrun --nproc-per-node 2 t.py"), &sampled);
        assert_eq!(args, argv("torchrun --nproc-per-node 2 t.py"));
        assert_eq!(
            torch_env,
            vec![
                ("LD_PRELOAD".to_string(), OsString::from("/x/libgputrace_sampling.so:/u/libmine.so")),
                (config::SAMPLED_LAUNCHER_VARIABLE.to_string(), OsString::from("torchrun")),
            ]
        );
        let (args, launcher_env) = Launcher::Hydra.inject(&argv("mpiexec -n 2 ./a"), &cuda);
        assert_eq!(args, argv("mpiexec -genv CUDA_INJECTION64_PATH /x/libgputrace_cuda.so -n 2 ./a"));
        assert!(launcher_env.is_empty());
        let (args, plain_env) = Launcher::None.inject(&argv("./a"), &env);
        assert_eq!(args, argv("./a"));
        assert_eq!(plain_env.len(), 2);
    }

    #[test]
    fn version_texts_tell_the_launchers_apart() {
        assert_eq!(Launcher::from_version_text("mpirun (Open MPI) 4.1.4"), Launcher::OpenMpi);
        assert_eq!(Launcher::from_version_text("HYDRA build details:\n Version: 4.0.2"), Launcher::Hydra);
    }
}
