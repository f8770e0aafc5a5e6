//! Marks the shared library "nodelete": every NVTX instance in a process
//! (each library or program compiled with the NVTX headers) dlopens the
//! injection library, and one whose initialization was refused dlcloses
//! it; the library keeps process-wide state (the recorder, its flusher
//! thread, an exit handler) that must outlive any one instance. With
//! `-z nodelete` it stays mapped until exit.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-z,nodelete");
}
