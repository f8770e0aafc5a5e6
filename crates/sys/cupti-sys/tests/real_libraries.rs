//! Loads real CUPTI libraries when `CUPTI_SYS_TEST_LIBS` lists them, as
//! `path=expected` pairs separated by `;`, where `expected` is the CUDA
//! release `cuptiGetVersion` should map to (`13.0`), `too-old`, or
//! `no-version` (the library loads but `cuptiGetVersion` fails, as CUPTI
//! 13.3 to 13.5 do where no driver is installed; 13.2.86 crashes there
//! instead, which fails the test). The libraries from NVIDIA's pip wheels
//! need no GPU: scripts/setup.sh fetches those of CUDA 12.9 and 13.0 and
//! scripts/test.sh sets the variable. Without it the test is skipped with
//! a note, except under `CI=true`, where it fails.
//!
//! ```text
//! CUPTI_SYS_TEST_LIBS='/w/cupti_cu12-12.0/.../libcupti.so.12=12.0;/w/cupti-13.0/.../libcupti.so.13=13.0' \
//!     cargo test -p cupti-sys --test real_libraries -- --nocapture
//! ```
//!
//! Each library is opened in a child process (this test binary re-run), so
//! that several CUPTI copies never share one process.

use std::process::Command;

use cupti_sys::{Cupti, LoadError, UnsupportedVersion};

const CHILD: &str = "CUPTI_SYS_TEST_CHILD";

#[test]
fn real_libraries_report_the_expected_versions() {
    if let Ok(library) = std::env::var(CHILD) {
        return child(&library);
    }
    let list = std::env::var("CUPTI_SYS_TEST_LIBS").unwrap_or_default();
    let entries: Vec<&str> = list.split(';').filter(|e| !e.is_empty()).collect();
    if entries.is_empty() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CUPTI_SYS_TEST_LIBS is unset or empty (scripts/test.sh sets it); under CI=true that fails the test"
        );
        eprintln!("note: CUPTI_SYS_TEST_LIBS unset (scripts/test.sh sets it): no real library checked, test skipped");
        return;
    }
    for entry in entries {
        let (library, expected) = entry.rsplit_once('=').expect("path=expected");
        let output = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "real_libraries_report_the_expected_versions", "--nocapture"])
            .env(CHILD, library)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let outcome = stdout
            .lines()
            .find_map(|l| l.strip_prefix("OUTCOME "))
            .unwrap_or_else(|| panic!("{library}: no outcome\n{stdout}{}", String::from_utf8_lossy(&output.stderr)));
        println!("{library}: {outcome}");
        let safe = stdout.lines().find_map(|l| l.strip_prefix("SAFE ")).unwrap_or_default();
        assert!(safe.starts_with("cuptiActivityEnable failed: CUPTI_ERROR_"), "{library}: {safe}");
        let got = outcome.split(' ').next().unwrap();
        assert_eq!(got, expected, "{library}: {outcome}");
    }
}

/// Loads one library and prints `OUTCOME <release|too-old|no-version> <details>`.
fn child(library: &str) {
    match Cupti::load(library) {
        Ok(cupti) => {
            let version = cupti.version();
            let (major, minor) = version.cuda();
            // The library answers a second call, through the table.
            let mut now = 0;
            // SAFETY: writes one u64 to a valid pointer.
            let ok = cupti.check("cuptiGetTimestamp", unsafe { (cupti.get_timestamp)(&mut now) });
            let invalid = cupti.result_string(cupti_sys::CUPTI_ERROR_INVALID_KIND);
            // The safe calls: a kind no release has is refused, as an
            // error naming the call.
            // (Without a driver CUPTI answers CUPTI_ERROR_UNKNOWN.)
            match cupti.enable_kind(0x7fff_0000) {
                Ok(()) => println!("SAFE accepted a bogus kind"),
                Err(e) => println!("SAFE {e}"),
            }
            println!(
                "OUTCOME {major}.{minor} {version} layout={:?} path={} timestamp={ok:?} name(21)={invalid:?} timestamp_callback={} driver_api={}",
                version.layout(),
                cupti.path().display(),
                cupti.activity_register_timestamp_callback.is_some(),
                cupti.activity_enable_driver_api.is_some(),
            );
        }
        Err(LoadError::Unsupported { source: UnsupportedVersion::TooOld { api, cuda }, .. }) => {
            println!("OUTCOME too-old API {api} = CUDA {cuda}");
        }
        Err(LoadError::Version { source, .. }) => println!("OUTCOME no-version {source}"),
        Err(other) => println!("OUTCOME error {other}"),
    }
}
