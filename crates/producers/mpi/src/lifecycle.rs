//! Starting and stopping: `MPI_Init`, `MPI_Init_thread`, `MPI_Finalize`,
//! `MPI_Abort`, and an exit handler for programs that never finalize.
//!
//! The recorder starts after `PMPI_Init` succeeds (the rank is known only
//! then, and nothing heavy may run at load time), in this order: check
//! that the process's MPI is our flavour (else one warning, and every call
//! goes straight to MPI), start the recorder, write the rank, register
//! `MPI_COMM_WORLD` and `MPI_COMM_SELF`, synchronize clocks, and record
//! `MPI_Init` from the time taken before `PMPI_Init`. At `MPI_Finalize`
//! the clocks are synchronized again and the stream is finished *before*
//! `PMPI_Finalize`, which may not return on every implementation: the
//! Leave of `MPI_Finalize` therefore carries the time just before
//! `PMPI_Finalize`. `MPI_Abort` finishes the stream before aborting.

use std::ffi::c_int;
use std::sync::atomic::{AtomicUsize, Ordering};

use raw::{Definition, Event, Producer};

use crate::abi::{Handle, MpiAbi};
use crate::call::{self, FnInfo, shielded};
use crate::state::{self, Phase};
use crate::{clocksync, comms, pmpi};

/// Our duplicate of `MPI_COMM_WORLD`, for clock synchronization.
static SYNC_COMM: AtomicUsize = AtomicUsize::new(0);

/// Runs `pmpi` (the library's `MPI_Init` or `MPI_Init_thread`, C or
/// Fortran) and starts recording if it succeeded.
pub fn init<A: MpiAbi>(info: &'static FnInfo, pmpi: impl FnOnce() -> c_int) -> c_int {
    let t0 = gputrace_clock::now();
    if state::phase() != Phase::BeforeInit {
        return pmpi();
    }
    let Some(_guard) = call::enter_guard() else {
        return pmpi();
    };
    if let Err(found) = A::detect() {
        state::set_phase(Phase::Disabled);
        recorder::diag::warn(&format!(
            "this library traces {} programs, but {found}; MPI calls are not recorded \
             (use the gputrace MPI library built for this MPI)",
            A::NAME
        ));
        return pmpi();
    }
    // A runtime installs its own crash handlers (Open MPI's backtrace) only
    // where it finds the default action: let it find it.
    recorder::rescue::step_aside();
    let rc = pmpi();
    recorder::rescue::step_in();
    if rc == A::SUCCESS {
        if shielded(|| start::<A>(info, t0)) != Some(true) {
            state::set_phase(Phase::Disabled);
        }
    } else {
        state::set_phase(Phase::Disabled);
    }
    rc
}

fn start<A: MpiAbi>(info: &'static FnInfo, t0: u64) -> bool {
    let Some((rec, config)) = recorder::start(Producer::Mpi) else {
        // Not recording (no stream could be created: a full disk, no
        // inode left): this rank still joins the clock synchronizations,
        // which are collective, or the ranks that record wait for it for
        // ever.
        join_clock_syncs::<A>(None);
        return false;
    };
    let rec = state::set_recorder(rec);
    state::set_groups(state::group_mask(&config.mpi_groups));
    state::set_pcontrol(config.capture_range == config::CaptureRange::Pcontrol);
    crate::callpath::PATHS.set(config.unwinding);
    if !config.flight_recorder.is_zero() {
        crate::hooks::coll::number_collectives(rec);
    }
    let Some((rank, size)) = comms::register_predefined::<A>(rec) else {
        return false;
    };
    rec.define(&Definition::MpiRank { rank, size });
    join_clock_syncs::<A>(Some(rec));
    // SAFETY: `at_exit` is an `extern "C" fn()` that never unwinds.
    unsafe { libc::atexit(at_exit) };
    state::set_phase(Phase::Active);
    record_call(info, t0);
    rec.flush_definitions();
    true
}

/// The clock synchronization at `MPI_Init`, on a duplicate of
/// `MPI_COMM_WORLD` kept for the one at `MPI_Finalize`: every rank that
/// initialized MPI under the hooks joins both, recording or not.
fn join_clock_syncs<A: MpiAbi>(rec: Option<&recorder::Recorder>) {
    let mut dup = A::comm_null();
    // SAFETY: MPI is initialized; `dup` is writable. Every rank makes this
    // call here, right after PMPI_Init.
    if unsafe { pmpi::comm_dup::<A>(A::comm_world(), &mut dup) } == A::SUCCESS {
        SYNC_COMM.store(dup.key(), Ordering::Relaxed);
        clocksync::synchronize::<A>(rec, dup);
    }
}

/// Records Enter and Leave of `info` at `t0` and now, if its group is on
/// and `t0` inside the recording window. The region is defined either way:
/// the merge tells a process that reached MPI_Finalize by it.
fn record_call(info: &'static FnInfo, t0: u64) {
    if let Some(rec) = state::recorder()
        && state::enabled(info.group)
        && let Some(region) = info.region(rec)
        && recorder::window::contains(t0)
    {
        if crate::callpath::PATHS.on()
            && let Some(frame) = crate::callpath::PATHS.here(rec, region)
        {
            rec.record(t0, &Event::CallPath { frame });
        }
        rec.record(t0, &Event::Enter { region });
        rec.record(gputrace_clock::now(), &Event::Leave { region });
    }
}

/// Runs the library's `MPI_Finalize` after finishing the stream.
pub fn finalize<A: MpiAbi>(info: &'static FnInfo, pmpi: impl FnOnce() -> c_int) -> c_int {
    let t0 = gputrace_clock::now();
    if state::phase() != Phase::Active {
        // A rank that joined the synchronization at MPI_Init without
        // recording joins this one too (see `join_clock_syncs`).
        let mut sync = A::Comm::from_key(SYNC_COMM.swap(0, Ordering::Relaxed));
        if sync.key() != 0
            && let Some(_guard) = call::enter_guard()
        {
            shielded(|| {
                clocksync::synchronize::<A>(None, sync);
                // SAFETY: our own communicator, freed once.
                unsafe { pmpi::comm_free::<A>(&mut sync) };
            });
        }
        return pmpi();
    }
    let Some(_guard) = call::enter_guard() else {
        return pmpi();
    };
    shielded(|| {
        let mut sync = A::Comm::from_key(SYNC_COMM.swap(0, Ordering::Relaxed));
        if sync.key() != 0 {
            clocksync::synchronize::<A>(state::recorder(), sync);
            // SAFETY: our own communicator, freed once.
            unsafe { pmpi::comm_free::<A>(&mut sync) };
        }
        record_call(info, t0);
        finish();
    });
    pmpi()
}

/// Runs the library's `MPI_Abort` after finishing the stream: the abort
/// kills this process and usually its peers, and nothing after it runs.
pub fn abort<A: MpiAbi>(info: &'static FnInfo, pmpi: impl FnOnce() -> c_int) -> c_int {
    let t0 = gputrace_clock::now();
    if state::phase() == Phase::Active
        && let Some(_guard) = call::enter_guard()
    {
        shielded(|| {
            record_call(info, t0);
            finish();
        });
    }
    pmpi()
}

/// Ends recording: later calls go straight to MPI, and the stream is
/// flushed and marked complete. Only the first caller does it.
pub fn finish() {
    if state::transition(Phase::Active, Phase::Finished)
        && let Some(rec) = state::recorder()
    {
        rec.finish();
    }
}

/// The exit handler: a program that exits without `MPI_Finalize` (an
/// `exit(3)` on error, say) still leaves a complete stream.
extern "C" fn at_exit() {
    shielded(finish);
}
