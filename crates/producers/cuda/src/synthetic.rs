//! CUPTI records built by hand from the bindings' structs, for tests that
//! need records no captured buffer holds (or exact values to check).

/// The bytes of a record of struct `T`, all zero but what `fill` sets.
///
/// # Safety
///
/// `T` must be one of the bindings' activity record structs (`cupti_sys`'s
/// `CUpti_Activity*`): plain integers and pointers, for which all-zero
/// bytes are a valid value, aligned to at most 8 bytes; `fill` sets fields
/// (never the whole struct, which would leave padding undefined).
pub unsafe fn record<T>(fill: impl FnOnce(&mut T)) -> Vec<u8> {
    let size = std::mem::size_of::<T>();
    assert!(std::mem::align_of::<T>() <= 8, "record structs are aligned to at most 8 bytes");
    let mut words = vec![0u64; size.div_ceil(8)];
    // SAFETY: `words` is 8-aligned, zeroed and at least `size` bytes long;
    // all-zero bytes are a valid `T` (the caller's promise). Fields are set
    // in place, so padding bytes stay zero and the bytes read below are
    // all initialized.
    unsafe {
        fill(&mut *words.as_mut_ptr().cast::<T>());
        std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), size).to_vec()
    }
}
