//! Transparent huge pages for the lookup arrays. A random lookup touches
//! three arrays of a few MiB each; with 4 KiB pages nearly every access also
//! misses the first-level TLB, which costs about as much as the cache miss.
//! On Linux with THP in `madvise` mode (Debian's default) the arrays are
//! marked `MADV_HUGEPAGE`; elsewhere this does nothing.

/// Size of a transparent huge page on x86_64 and aarch64 (4 KiB base pages).
const HUGE: usize = 2 << 20;

/// Marks the 2 MiB-aligned pages lying wholly inside `s`'s allocation
/// (capacity included) as candidates for huge pages. Advisory only: errors
/// are ignored, contents are unchanged.
pub(crate) fn advise<T>(s: &Vec<T>) {
    let start = s.as_ptr() as usize;
    let end = start.saturating_add(s.capacity().saturating_mul(std::mem::size_of::<T>()));
    let lo = start.saturating_add(HUGE - 1) & !(HUGE - 1);
    let hi = end & !(HUGE - 1);
    if hi <= lo {
        return;
    }
    #[cfg(target_os = "linux")]
    // SAFETY: madvise(MADV_HUGEPAGE) on pages of our own live allocation
    // only changes how the kernel backs them, never their contents or
    // validity; the range is page-aligned and inside the allocation.
    unsafe {
        libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE);
    }
}
