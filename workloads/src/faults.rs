//! A fault storm: first-touch minor faults with no memory pressure, the
//! page-fault path's hot loop (what a tracer on that path costs shows
//! here first). A small anonymous buffer is written one byte per page,
//! then its pages are dropped with MADV_DONTNEED, pass after pass: every
//! write is a fresh first-touch fault, and the buffer stays small so that
//! the host's memory behaviour (freed pages going back to a hypervisor)
//! does not swamp the measurement.

use std::io;

use crate::memhog::PAGE;

/// What a run did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Pages written (each one a first-touch fault).
    pub touches: u64,
}

/// `passes` passes of first-touch writes over `mib` MiB.
pub fn run(mib: usize, passes: usize) -> io::Result<Stats> {
    let len = mib
        .checked_mul(1 << 20)
        .filter(|&l| l > 0)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "buffer size out of range"))?;
    // SAFETY: a fresh private anonymous mapping, unmapped below.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    let mut stats = Stats::default();
    let mut result = Ok(());
    for pass in 0..passes {
        for off in (0..len).step_by(PAGE) {
            // SAFETY: within the mapping; volatile so that every page is
            // really written.
            unsafe { std::ptr::write_volatile((base as *mut u8).add(off), pass as u8 | 1) };
            stats.touches += 1;
        }
        // SAFETY: drops the pages of our own mapping; the next pass faults
        // them in again as zero pages.
        if unsafe { libc::madvise(base, len, libc::MADV_DONTNEED) } != 0 {
            result = Err(io::Error::last_os_error());
            break;
        }
    }
    // SAFETY: the mapping made above, no longer used.
    unsafe { libc::munmap(base, len) };
    result.map(|()| stats)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn minor_faults() -> i64 {
        // SAFETY: zeroed rusage is a valid out-parameter.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: valid pointer to our own struct.
        unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
        ru.ru_minflt
    }

    #[test]
    fn every_touch_is_a_fault() {
        let before = minor_faults();
        let stats = run(1, 8).expect("runs");
        let faults = minor_faults() - before;
        assert_eq!(stats.touches, 8 * 256);
        // Each touch faults; a few more may come from the test harness.
        assert!(
            faults >= stats.touches as i64 && faults < stats.touches as i64 + 64,
            "{faults} faults for {} touches",
            stats.touches
        );
    }

    #[test]
    fn zero_size_is_refused() {
        assert!(run(0, 1).is_err());
    }
}
