//! Bounds-checked big-endian readers. Every parse path goes through these
//! (or `slice::get`) so that untrusted input can never index out of bounds.

#[inline]
pub(crate) fn u8_at(b: &[u8], off: usize) -> Option<u8> {
    b.get(off).copied()
}

#[inline]
pub(crate) fn u16_at(b: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_be_bytes(*b.get(off..)?.first_chunk::<2>()?))
}

#[inline]
pub(crate) fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_be_bytes(*b.get(off..)?.first_chunk::<4>()?))
}

#[inline]
pub(crate) fn array_at<const N: usize>(b: &[u8], off: usize) -> Option<[u8; N]> {
    let s = b.get(off..off.checked_add(N)?)?;
    let mut a = [0u8; N];
    a.copy_from_slice(s);
    Some(a)
}

/// Writes a big-endian u16 length at `at` (reserved earlier with zeros).
pub(crate) fn patch_u16(out: &mut [u8], at: usize, v: u16) {
    if let Some(s) = out.get_mut(at..at + 2) {
        s.copy_from_slice(&v.to_be_bytes());
    }
}
