//! The build script's promise: where a static libotf2 exists, binaries
//! carry OTF2 inside them and run where it is not installed, so they have
//! no `DT_NEEDED` entry for the shared library.

use std::ffi::CStr;
use std::process::Command;

#[test]
fn binary_linkage_matches_the_build_script() {
    // Use the library, so that the linker cannot drop it.
    // SAFETY: accepts any code; returns a static string.
    let name = unsafe { CStr::from_ptr(otf2_sys::OTF2_Error_GetName(otf2_sys::OTF2_SUCCESS)) };
    assert!(!name.to_bytes().is_empty());

    let exe = std::env::current_exe().unwrap();
    let out = Command::new("readelf").arg("-d").arg(&exe).output().expect("readelf (binutils) is needed for this test");
    assert!(out.status.success(), "readelf failed on {}", exe.display());
    let dynamic = String::from_utf8_lossy(&out.stdout);
    let needs_otf2 = dynamic
        .lines()
        .filter(|line| line.contains("(NEEDED)"))
        .any(|line| line.contains("libopen-trace-format2") || line.contains("libotf2"));
    match env!("OTF2_SYS_LINKAGE") {
        "static" => assert!(!needs_otf2, "linked statically, yet:\n{dynamic}"),
        _ => assert!(needs_otf2, "linked dynamically, yet:\n{dynamic}"),
    }
}
