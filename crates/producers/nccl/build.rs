//! Marks the shared library "nodelete": NCCL dlcloses its profiler plugin
//! when the last communicator is destroyed, but the plugin leaves a flusher
//! thread and an exit handler behind (and a later communicator would load
//! a fresh copy that cannot reopen this process's stream). With
//! `-z nodelete` the library stays mapped, with its state, until exit.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-z,nodelete");
}
