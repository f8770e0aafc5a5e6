//! The MPI calls of gputrace's MPI merge (`gputrace merge --mpi`), from the
//! MPI library of the job, loaded with `dlopen` when the merge starts: the
//! `gputrace` binary links no MPI, and runs under Open MPI or MPICH alike.
//!
//! The two ABIs differ in their handles: Open MPI's `MPI_Comm` and
//! `MPI_Datatype` are pointers to objects of the library
//! (`&ompi_mpi_comm_world`, `&ompi_mpi_byte`), MPICH's are `int`s with
//! fixed values (`0x44000000`, `0x4c00010d`: the values of
//! crates/producers/mpi/mpich/src/abi.rs, checked against `mpi.h` there).
//! Each function is typed with its flavor's handle type ([`Fns`]), so every
//! call passes exactly the C types of its library.
//!
//! Only what the merge needs: initialization, rank and size of
//! `MPI_COMM_WORLD`, barrier, broadcast, gather(v), scatter(v) of bytes,
//! abort and finalize.

#![deny(unsafe_op_in_unsafe_fn)]

use std::ffi::{CStr, c_char, c_int, c_void};

/// An MPI implementation, by its ABI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    OpenMpi,
    Mpich,
}

impl Flavor {
    /// The MPI whose launcher started this process, from the variables
    /// launchers set: Open MPI's `mpirun` (`OMPI_COMM_WORLD_SIZE`), Hydra
    /// (`PMI_RANK`, `PMI_SIZE`), or Slurm's `srun` (with PMIx: Open MPI;
    /// with PMI-2: MPICH). `None`: no MPI launcher started it.
    pub fn from_env() -> Option<Flavor> {
        let has = |k: &str| std::env::var_os(k).is_some();
        if has("OMPI_COMM_WORLD_SIZE") || has("OMPI_COMM_WORLD_RANK") {
            Some(Flavor::OpenMpi)
        } else if has("PMI_RANK") || has("PMI_SIZE") || has("MPI_LOCALNRANKS") {
            Some(Flavor::Mpich)
        } else if has("PMIX_RANK") {
            Some(Flavor::OpenMpi)
        } else if has("SLURM_PROCID") && has("SLURM_NTASKS") {
            // srun without a PMI the library can use: Open MPI's if it is
            // installed, else MPICH's.
            Some(if Library::exists(Flavor::OpenMpi) { Flavor::OpenMpi } else { Flavor::Mpich })
        } else {
            None
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Flavor::OpenMpi => "Open MPI",
            Flavor::Mpich => "MPICH",
        }
    }

    /// The library names tried, in order.
    pub fn libraries(self) -> &'static [&'static str] {
        match self {
            Flavor::OpenMpi => &["libmpi.so.40", "libmpi.so"],
            Flavor::Mpich => &["libmpich.so.12", "libmpi.so.12", "libmpich.so"],
        }
    }
}

/// What went wrong.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the {flavor} library was not found (tried {tried}): {why}")]
    NotFound { flavor: &'static str, tried: String, why: String },
    #[error("the {flavor} library {library} lacks {symbol}")]
    Missing { flavor: &'static str, library: &'static str, symbol: &'static str },
    #[error("{call} failed (MPI error {code})")]
    Call { call: &'static str, code: c_int },
}

/// The functions of one flavor, `H` its handle type.
struct Fns<H> {
    initialized: unsafe extern "C" fn(*mut c_int) -> c_int,
    init: unsafe extern "C" fn(*mut c_int, *mut *mut *mut c_char) -> c_int,
    finalize: unsafe extern "C" fn() -> c_int,
    abort: unsafe extern "C" fn(H, c_int) -> c_int,
    comm_rank: unsafe extern "C" fn(H, *mut c_int) -> c_int,
    comm_size: unsafe extern "C" fn(H, *mut c_int) -> c_int,
    barrier: unsafe extern "C" fn(H) -> c_int,
    bcast: unsafe extern "C" fn(*mut c_void, c_int, H, c_int, H) -> c_int,
    gather: unsafe extern "C" fn(*const c_void, c_int, H, *mut c_void, c_int, H, c_int, H) -> c_int,
    gatherv:
        unsafe extern "C" fn(*const c_void, c_int, H, *mut c_void, *const c_int, *const c_int, H, c_int, H) -> c_int,
    scatter: unsafe extern "C" fn(*const c_void, c_int, H, *mut c_void, c_int, H, c_int, H) -> c_int,
    scatterv:
        unsafe extern "C" fn(*const c_void, *const c_int, *const c_int, H, *mut c_void, c_int, H, c_int, H) -> c_int,
    world: H,
    byte: H,
}

enum Api {
    OpenMpi(Fns<*mut c_void>),
    Mpich(Fns<c_int>),
}

/// Runs `$body` with `$f` the flavor's functions.
macro_rules! with {
    ($api:expr, $f:ident => $body:expr) => {
        match $api {
            Api::OpenMpi($f) => $body,
            Api::Mpich($f) => $body,
        }
    };
}

struct Library;

impl Library {
    fn exists(flavor: Flavor) -> bool {
        flavor.libraries().iter().any(|name| {
            let c = std::ffi::CString::new(*name).expect("no NUL");
            // SAFETY: dlopen by name and, when it opened, dlclose of the
            // handle it returned.
            unsafe {
                let h = libc::dlopen(c.as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL);
                if h.is_null() {
                    false
                } else {
                    libc::dlclose(h);
                    true
                }
            }
        })
    }
}

/// The job's MPI, initialized: `MPI_COMM_WORLD` of the merge's ranks.
pub struct Mpi {
    api: Api,
    flavor: Flavor,
    rank: u32,
    size: u32,
}

// SAFETY: the merge makes its MPI calls from one thread at a time (the
// collective calls are made by the thread that writes the archive's
// definitions; the event-writing threads make none); MPI_Init's default
// thread level, MPI_THREAD_SINGLE in practice MPI_THREAD_FUNNELED, is
// enough for calls serialized that way.
unsafe impl Send for Mpi {}
// SAFETY: as for Send.
unsafe impl Sync for Mpi {}

fn sym<T: Copy>(handle: *mut c_void, flavor: Flavor, library: &'static str, name: &'static CStr) -> Result<T, Error> {
    // SAFETY: a live handle and a NUL-terminated name.
    let p = unsafe { libc::dlsym(handle, name.as_ptr()) };
    if p.is_null() {
        return Err(Error::Missing { flavor: flavor.name(), library, symbol: name.to_str().unwrap_or("?") });
    }
    debug_assert_eq!(std::mem::size_of::<T>(), std::mem::size_of::<*mut c_void>());
    // SAFETY: `T` is the function pointer type of the symbol `name` in
    // this flavor's ABI (the `Fns` field it is stored in), as large as a
    // pointer.
    Ok(unsafe { std::mem::transmute_copy::<*mut c_void, T>(&p) })
}

macro_rules! fns {
    ($h:expr, $flavor:expr, $lib:expr, $world:expr, $byte:expr) => {
        Fns {
            initialized: sym($h, $flavor, $lib, c"MPI_Initialized")?,
            init: sym($h, $flavor, $lib, c"MPI_Init")?,
            finalize: sym($h, $flavor, $lib, c"MPI_Finalize")?,
            abort: sym($h, $flavor, $lib, c"MPI_Abort")?,
            comm_rank: sym($h, $flavor, $lib, c"MPI_Comm_rank")?,
            comm_size: sym($h, $flavor, $lib, c"MPI_Comm_size")?,
            barrier: sym($h, $flavor, $lib, c"MPI_Barrier")?,
            bcast: sym($h, $flavor, $lib, c"MPI_Bcast")?,
            gather: sym($h, $flavor, $lib, c"MPI_Gather")?,
            gatherv: sym($h, $flavor, $lib, c"MPI_Gatherv")?,
            scatter: sym($h, $flavor, $lib, c"MPI_Scatter")?,
            scatterv: sym($h, $flavor, $lib, c"MPI_Scatterv")?,
            world: $world,
            byte: $byte,
        }
    };
}

/// MPICH's predefined handles (mpi.h of MPICH 3 and 4).
const MPICH_COMM_WORLD: c_int = 0x4400_0000;
const MPICH_BYTE: c_int = 0x4c00_010d;

impl Mpi {
    /// Loads `flavor`'s library and initializes MPI (`MPI_Init`).
    ///
    /// # Errors
    ///
    /// The library is not there or lacks a function; `MPI_Init` failed.
    pub fn init(flavor: Flavor) -> Result<Mpi, Error> {
        let mut why = String::new();
        let mut found = None;
        for &name in flavor.libraries() {
            let c = std::ffi::CString::new(name).expect("no NUL");
            // SAFETY: dlopen of a library by name; RTLD_GLOBAL because
            // Open MPI's components, which it opens itself, resolve their
            // references to libmpi in the global scope.
            let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
            if !h.is_null() {
                found = Some((h, name));
                break;
            }
            // SAFETY: dlerror returns null or a NUL-terminated message.
            let e = unsafe { libc::dlerror() };
            if !e.is_null() && why.is_empty() {
                // SAFETY: as above.
                why = unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned();
            }
        }
        let Some((h, library)) = found else {
            return Err(Error::NotFound { flavor: flavor.name(), tried: flavor.libraries().join(", "), why });
        };
        let api = match flavor {
            Flavor::OpenMpi => {
                let world: *mut c_void = sym(h, flavor, library, c"ompi_mpi_comm_world")?;
                let byte: *mut c_void = sym(h, flavor, library, c"ompi_mpi_byte")?;
                Api::OpenMpi(fns!(h, flavor, library, world, byte))
            }
            Flavor::Mpich => Api::Mpich(fns!(h, flavor, library, MPICH_COMM_WORLD, MPICH_BYTE)),
        };
        let mut mpi = Mpi { api, flavor, rank: 0, size: 1 };
        let mut done: c_int = 0;
        // SAFETY: MPI_Initialized may be called at any time; `done` is a
        // live local.
        mpi.check("MPI_Initialized", with!(&mpi.api, f => unsafe { (f.initialized)(&mut done) }))?;
        if done == 0 {
            // SAFETY: MPI_Init accepts null argc and argv.
            let code = with!(&mpi.api, f => unsafe { (f.init)(std::ptr::null_mut(), std::ptr::null_mut()) });
            mpi.check("MPI_Init", code)?;
        }
        let (mut rank, mut size): (c_int, c_int) = (0, 0);
        // SAFETY: MPI is initialized; the outputs are live locals.
        mpi.check("MPI_Comm_rank", with!(&mpi.api, f => unsafe { (f.comm_rank)(f.world, &mut rank) }))?;
        // SAFETY: as above.
        mpi.check("MPI_Comm_size", with!(&mpi.api, f => unsafe { (f.comm_size)(f.world, &mut size) }))?;
        mpi.rank = rank as u32;
        mpi.size = size as u32;
        Ok(mpi)
    }

    fn check(&self, call: &'static str, code: c_int) -> Result<(), Error> {
        if code == 0 { Ok(()) } else { Err(Error::Call { call, code }) }
    }

    pub fn flavor(&self) -> Flavor {
        self.flavor
    }

    pub fn rank(&self) -> u32 {
        self.rank
    }

    pub fn size(&self) -> u32 {
        self.size
    }

    /// Ends every process of the job (`MPI_Abort`) with `code`.
    pub fn abort(&self, code: i32) -> ! {
        // SAFETY: MPI is initialized; MPI_Abort takes the world
        // communicator and an exit code.
        with!(&self.api, f => unsafe { (f.abort)(f.world, code) });
        // MPI_Abort does not return; should it, exit anyway.
        std::process::exit(code)
    }

    /// `MPI_Finalize`.
    pub fn finalize(self) -> Result<(), Error> {
        // SAFETY: MPI is initialized and finalized once (self is consumed).
        let code = with!(&self.api, f => unsafe { (f.finalize)() });
        self.check("MPI_Finalize", code)
    }

    pub fn barrier(&self) -> bool {
        // SAFETY: MPI is initialized.
        with!(&self.api, f => unsafe { (f.barrier)(f.world) }) == 0
    }

    pub fn bcast(&self, data: &mut [u8], root: u32) -> bool {
        let Ok(n) = c_int::try_from(data.len()) else { return false };
        // SAFETY: `data` holds `n` bytes on every rank (the caller's
        // contract of a broadcast).
        with!(&self.api, f => unsafe { (f.bcast)(data.as_mut_ptr().cast(), n, f.byte, root as c_int, f.world) }) == 0
    }

    /// `output` (at `root`: `size()` times `input`'s length) gets every
    /// rank's `input`.
    pub fn gather(&self, input: &[u8], output: &mut [u8], root: u32) -> bool {
        let Ok(n) = c_int::try_from(input.len()) else { return false };
        if self.rank == root && output.len() < input.len() * self.size as usize {
            return false;
        }
        // SAFETY: `input` holds `n` bytes; at the root `output` holds
        // `size` times as many (checked above); elsewhere it is not read.
        with!(&self.api, f => unsafe {
            (f.gather)(input.as_ptr().cast(), n, f.byte, output.as_mut_ptr().cast(), n, f.byte, root as c_int, f.world)
        }) == 0
    }

    /// As [`gather`](Self::gather), `counts[r]` bytes from rank `r`
    /// (`counts` at the root only).
    pub fn gatherv(&self, input: &[u8], output: &mut [u8], counts: &[usize], root: u32) -> bool {
        let Ok(n) = c_int::try_from(input.len()) else { return false };
        let Some((counts, displs)) = self.layout(counts, output.len(), root) else { return false };
        // SAFETY: `input` holds `n` bytes; at the root `output` holds the
        // sum of `counts`, placed at `displs` (checked by `layout`).
        with!(&self.api, f => unsafe {
            (f.gatherv)(
                input.as_ptr().cast(), n, f.byte, output.as_mut_ptr().cast(),
                counts.as_ptr(), displs.as_ptr(), f.byte, root as c_int, f.world,
            )
        }) == 0
    }

    /// `input` (at the root: `size()` pieces of `output`'s length) cut
    /// among the ranks.
    pub fn scatter(&self, input: &[u8], output: &mut [u8], root: u32) -> bool {
        let Ok(n) = c_int::try_from(output.len()) else { return false };
        if self.rank == root && input.len() < output.len() * self.size as usize {
            return false;
        }
        // SAFETY: as for gather, the other way round.
        with!(&self.api, f => unsafe {
            (f.scatter)(input.as_ptr().cast(), n, f.byte, output.as_mut_ptr().cast(), n, f.byte, root as c_int, f.world)
        }) == 0
    }

    /// As [`scatter`](Self::scatter), `counts[r]` bytes to rank `r`.
    pub fn scatterv(&self, input: &[u8], counts: &[usize], output: &mut [u8], root: u32) -> bool {
        let Ok(n) = c_int::try_from(output.len()) else { return false };
        let Some((counts, displs)) = self.layout(counts, input.len(), root) else { return false };
        // SAFETY: as for gatherv, the other way round.
        with!(&self.api, f => unsafe {
            (f.scatterv)(
                input.as_ptr().cast(), counts.as_ptr(), displs.as_ptr(), f.byte,
                output.as_mut_ptr().cast(), n, f.byte, root as c_int, f.world,
            )
        }) == 0
    }

    /// The counts and displacements of a v-collective at the root (whose
    /// buffer has `room` bytes); empty ones elsewhere. `None`: they do not
    /// fit the buffer or a C int.
    fn layout(&self, counts: &[usize], room: usize, root: u32) -> Option<(Vec<c_int>, Vec<c_int>)> {
        if self.rank != root {
            return Some((Vec::new(), Vec::new()));
        }
        if counts.len() != self.size as usize {
            return None;
        }
        let mut displs = Vec::with_capacity(counts.len());
        let mut at = 0usize;
        let mut out = Vec::with_capacity(counts.len());
        for &c in counts {
            displs.push(c_int::try_from(at).ok()?);
            out.push(c_int::try_from(c).ok()?);
            at += c;
        }
        (at <= room).then_some((out, displs))
    }
}
