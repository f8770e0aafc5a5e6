//! Integration tests of otf2: one sample archive (see `fixture`)
//! checked by otf2-print, by OTF2's Python bindings and by this crate's
//! reader, plus the error paths. One test binary, as ripgrep does.

mod errors;
mod fixture;
mod otf2_print;
mod python;
mod read_back;
mod streaming;
mod together;
