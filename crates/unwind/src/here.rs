//! Unwinding the calling thread's own stack (the MPI hooks' call paths,
//! `GPUTRACE_UNWINDING`): the registers are read where the walk starts,
//! the stack is read in place, between the stack pointer and the top of
//! the thread's stack, and the frames of this crate's own module (the
//! walk, the wrapper that called it) are left out.

use std::cell::Cell;

use framehop::x86_64::UnwindRegsX86_64;

use crate::Unwinder;

thread_local! {
    /// The top (highest address) of the calling thread's stack; 0 until
    /// looked up.
    static TOP: Cell<u64> = const { Cell::new(0) };
}

/// An address of this module's code.
pub(crate) fn address() -> u64 {
    address as fn() -> u64 as usize as u64
}

/// The top of the calling thread's stack, from the thread's attributes
/// (for the main thread the C library reads its mapping once); 0 if
/// unknown.
fn stack_top() -> u64 {
    TOP.try_with(|top| {
        if top.get() == 0 {
            top.set(look_up_top());
        }
        top.get()
    })
    .unwrap_or(0)
}

fn look_up_top() -> u64 {
    let mut attr = std::mem::MaybeUninit::<libc::pthread_attr_t>::uninit();
    // SAFETY: `attr` is written by pthread_getattr_np before it is read,
    // and destroyed after.
    unsafe {
        if libc::pthread_getattr_np(libc::pthread_self(), attr.as_mut_ptr()) != 0 {
            return 0;
        }
        let (mut addr, mut size) = (std::ptr::null_mut(), 0usize);
        let rc = libc::pthread_attr_getstack(attr.as_ptr(), &mut addr, &mut size);
        libc::pthread_attr_destroy(attr.as_mut_ptr());
        if rc != 0 { 0 } else { addr as u64 + size as u64 }
    }
}

impl Unwinder {
    /// The calling thread's call stack where it called into this crate's
    /// module (the MPI call's caller first), innermost first, as lookup
    /// addresses (return addresses minus one); empty if the stack could
    /// not be unwound out of the module.
    #[inline(never)]
    pub fn unwind_here(&mut self, out: &mut Vec<u64>) {
        let (ip, sp, bp): (u64, u64, u64);
        // SAFETY: reads three registers into outputs; touches no memory
        // and not the stack.
        unsafe {
            std::arch::asm!(
                "lea {ip}, [rip]",
                "mov {sp}, rsp",
                "mov {bp}, rbp",
                ip = out(reg) ip,
                sp = out(reg) sp,
                bp = out(reg) bp,
                options(nomem, nostack, preserves_flags),
            );
        }
        let top = stack_top();
        let mut read = |addr: u64| -> Result<u64, ()> {
            if addr < sp || addr.checked_add(8).is_none_or(|end| end > top) || !addr.is_multiple_of(8) {
                return Err(());
            }
            // SAFETY: an aligned word between this frame's stack pointer
            // and the top of the thread's stack: mapped, and only read.
            Ok(unsafe { std::ptr::read_volatile(addr as *const u64) })
        };
        self.walk(UnwindRegsX86_64::new(ip, sp, bp), ip, &mut read, out);
        let own = self.own.clone().unwrap_or(0..0);
        let inside = out.iter().take_while(|a| own.contains(a)).count();
        if inside == out.len() {
            out.clear();
        } else {
            out.drain(..inside);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[inline(never)]
    fn inner(u: &mut Unwinder, out: &mut Vec<u64>) {
        u.unwind_here(out);
        std::hint::black_box(out);
    }

    #[test]
    fn the_own_stack_unwinds_through_the_callers() {
        let mut u = Unwinder::default();
        assert!(!u.scan().is_empty());
        // The test binary is this crate's module: keep its frames.
        u.own = None;
        let mut out = Vec::new();
        inner(&mut u, &mut out);
        assert!(out.len() >= 4, "{out:x?}");
        assert!(out.iter().all(|&a| u.knows(a)), "{out:x?}");
        // The walk ends at the thread's start, not before: the same
        // depth twice, one frame deeper from one more call.
        let mut again = Vec::new();
        inner(&mut u, &mut again);
        assert_eq!(out.len(), again.len());
        let deeper = |u: &mut Unwinder, out: &mut Vec<u64>| inner(u, out);
        deeper(&mut u, &mut again);
        assert!(again.len() >= out.len(), "{again:x?} vs {out:x?}");
        // With the module's own frames left out, what is left is the
        // C library's start of the test's thread.
        u.own = u.known.iter().find(|r| r.contains(&address())).cloned();
        inner(&mut u, &mut out);
        let own = u.own.clone().unwrap();
        assert!(out.len() <= 3 && out.iter().all(|a| !own.contains(a)), "{out:x?}");
    }
}
