//! What each wrapped function does besides calling PMPI, by family.
//!
//! A hook is a function called before the PMPI call with the arguments it
//! needs (as `&mut` where it substitutes one, like a status the program
//! ignores) and returning a value whose [`Post`](crate::call::Post)
//! implementation runs after the call. The signature list in
//! [`functions`](crate::functions) names one hook per MPI function.

pub mod cg;
pub mod coll;
pub mod p2p;
pub mod wait;

/// `MPI_Pcontrol`: with `--capture-range pcontrol`, recording's switch
/// (Score-P's convention: level 0 pauses, any other level resumes).
pub mod perf {
    use std::ffi::c_int;

    use crate::abi::MpiAbi;
    use crate::call::Call;
    use crate::state;

    /// Before the call: a pause takes effect after this call's Enter (its
    /// Leave is recorded too), a resume before the next call.
    #[inline]
    pub fn pcontrol<A: MpiAbi>(_: &Call, level: c_int) {
        if state::pcontrol() {
            recorder::window::set(recorder::window::RANGE_CLOSED, level == 0);
        }
    }
}

/// Functions recorded as a region and nothing else.
pub mod plain {
    use crate::abi::MpiAbi;
    use crate::call::Call;

    /// No events besides Enter and Leave.
    #[inline]
    pub fn region<A: MpiAbi>(_: &Call) {}
}
