//! A memory hog that creates real reclaim and swap traffic in a small box,
//! in ordinary heap memory or (`thp`) in a 2 MiB-aligned anonymous
//! mapping marked MADV_HUGEPAGE, so that its first touches are THP faults
//! whenever /sys/kernel/mm/transparent_hugepage/enabled is not `never`.

use std::ptr::NonNull;

/// xorshift64*: fast, deterministic, never yields 0 from a non-zero state.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        // splitmix64 spreads nearby seeds apart; `| 1` avoids the all-zero
        // state, which xorshift never leaves.
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Rng((z ^ (z >> 31)) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform enough in [0, n) for n > 0.
    pub fn below(&mut self, n: usize) -> usize {
        (((self.next_u64() >> 32) * n as u64) >> 32) as usize
    }
}

pub const PAGE: usize = 4096;
const WORDS_PER_PAGE: usize = PAGE / 8;

/// What a run did, for the caller to check or print.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub pages: usize,
    pub touches: usize,
    /// XOR of every word read back: keeps the reads from being optimised
    /// out, and makes runs with the same seed comparable.
    pub checksum: u64,
}

/// The size and alignment of a PMD-mapped THP on x86-64 and arm64 (4 KiB
/// pages).
pub const HUGE: usize = 2 << 20;

/// An anonymous mapping of whole 2 MiB huge-page frames, aligned to
/// 2 MiB and marked MADV_HUGEPAGE; unmapped on drop.
pub struct HugeBuffer {
    map: NonNull<libc::c_void>,
    map_len: usize,
    words: NonNull<u64>,
    len: usize,
}

impl HugeBuffer {
    /// `mib` MiB (rounded up to 2 MiB); None when mmap fails. A failed
    /// madvise (THP not built in) leaves an ordinary mapping.
    pub fn new(mib: usize) -> Option<HugeBuffer> {
        let bytes = (mib << 20).div_ceil(HUGE) * HUGE;
        let map_len = bytes + HUGE;
        // SAFETY: a fresh private anonymous mapping, no file.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return None;
        }
        let map = NonNull::new(p)?;
        let start = (p as usize).next_multiple_of(HUGE);
        // SAFETY: [start, start + bytes) lies inside the mapping.
        unsafe { libc::madvise(start as *mut libc::c_void, bytes, libc::MADV_HUGEPAGE) };
        Some(HugeBuffer {
            map,
            map_len,
            words: NonNull::new(start as *mut u64)?,
            len: bytes / 8,
        })
    }

    pub fn as_mut_slice(&mut self) -> &mut [u64] {
        // SAFETY: `len` words from `words` lie inside the mapping, which is
        // readable, writable and only this buffer's.
        unsafe { std::slice::from_raw_parts_mut(self.words.as_ptr(), self.len) }
    }
}

impl Drop for HugeBuffer {
    fn drop(&mut self) {
        // SAFETY: the mapping this buffer made, unmapped once.
        unsafe { libc::munmap(self.map.as_ptr(), self.map_len) };
    }
}

/// Fills `mib` MiB with random non-zero words, then makes `passes` passes
/// of random page touches (one read and one write per touch, as many
/// touches per pass as there are pages). With `thp`, in a [`HugeBuffer`]
/// (None when it cannot be mapped).
pub fn run(mib: usize, passes: usize, seed: u64, thp: bool) -> Option<Stats> {
    if thp {
        let mut buf = HugeBuffer::new(mib)?;
        Some(run_in(buf.as_mut_slice(), passes, seed))
    } else {
        Some(run_in(&mut vec![0u64; mib * (1 << 20) / 8], passes, seed))
    }
}

/// [`run`] in `threads` threads of this process at once, seeds `seed`,
/// `seed + 1`, ...: pages and touches add up, checksums are xored.
pub fn run_threads(threads: u32, mib: usize, passes: usize, seed: u64, thp: bool) -> Option<Stats> {
    if threads <= 1 {
        return run(mib, passes, seed, thp);
    }
    let all: Vec<Option<Stats>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|i| s.spawn(move || run(mib, passes, seed.wrapping_add(u64::from(i)), thp)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().ok().flatten())
            .collect()
    });
    all.into_iter().try_fold(Stats::default(), |mut sum, one| {
        let one = one?;
        sum.pages += one.pages;
        sum.touches += one.touches;
        sum.checksum ^= one.checksum;
        Some(sum)
    })
}

fn run_in(buf: &mut [u64], passes: usize, seed: u64) -> Stats {
    let pages = buf.len() / WORDS_PER_PAGE;
    let mut rng = Rng::new(seed);
    for w in buf.iter_mut() {
        *w = rng.next_u64() | 1;
    }
    let mut stats = Stats {
        pages,
        ..Default::default()
    };
    for _ in 0..passes {
        for _ in 0..pages {
            let page = rng.below(pages);
            let word = page * WORDS_PER_PAGE + rng.below(WORDS_PER_PAGE);
            stats.checksum ^= buf[word];
            buf[word] = rng.next_u64() | 1;
            stats.touches += 1;
        }
    }
    stats.checksum ^= std::hint::black_box(&*buf)
        .iter()
        .step_by(WORDS_PER_PAGE)
        .fold(0, |a, w| a ^ w);
    stats
}

/// Reads `path` (a file or a block device) through a private read-only
/// mapping, one byte of every page, in order: each page the page cache
/// lacks is read from disk (filemap_fault, under readahead). Returns
/// the pages read and the sum of the bytes (so the reads stay).
pub fn read_mapped(path: &std::path::Path) -> std::io::Result<(usize, u64)> {
    use std::io::{Seek, SeekFrom};
    use std::os::fd::AsRawFd;
    let mut f = std::fs::File::open(path)?;
    // A block device's length is its end, not its metadata's.
    let len = usize::try_from(f.seek(SeekFrom::End(0))?)
        .map_err(|_| std::io::Error::other("too large to map"))?;
    if len == 0 {
        return Ok((0, 0));
    }
    // SAFETY: a fresh read-only private mapping of an open file; it is
    // only read through below and unmapped before return.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_PRIVATE,
            f.as_raw_fd(),
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    let mut sum = 0u64;
    let pages = len.div_ceil(PAGE);
    for i in 0..pages {
        // SAFETY: i * PAGE < len, inside the mapping; volatile so that
        // every page is touched.
        sum += u64::from(unsafe { std::ptr::read_volatile((p as *const u8).add(i * PAGE)) });
    }
    // SAFETY: the mapping made above, not used after.
    unsafe { libc::munmap(p, len) };
    Ok((pages, sum))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rng_never_returns_zero_words_and_is_deterministic() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        for _ in 0..10_000 {
            let x = a.next_u64();
            assert_eq!(x, b.next_u64());
            assert_ne!(x | 1, 0);
        }
        let mut r = Rng::new(0);
        for _ in 0..10_000 {
            assert!(r.below(13) < 13);
        }
    }

    #[test]
    fn threads_add_up_to_their_single_runs() {
        let both = run_threads(2, 2, 1, 5, false).expect("heap");
        let (a, b) = (
            run(2, 1, 5, false).expect("heap"),
            run(2, 1, 6, false).expect("heap"),
        );
        assert_eq!(both.pages, a.pages + b.pages);
        assert_eq!(both.touches, a.touches + b.touches);
        assert_eq!(both.checksum, a.checksum ^ b.checksum);
    }

    #[test]
    fn same_seed_same_run() {
        let a = run(2, 2, 42, false).expect("heap");
        assert_eq!(Some(a.clone()), run(2, 2, 42, false));
        assert_eq!(a.pages, 512);
        assert_eq!(a.touches, 1024);
        assert_ne!(a.checksum, run(2, 2, 43, false).expect("heap").checksum);
        // The huge-page buffer holds the same data: the same run.
        assert_eq!(run(2, 2, 42, true), Some(a));
        let mut h = HugeBuffer::new(3).expect("mapped");
        let s = h.as_mut_slice();
        assert_eq!(s.len(), (4 << 20) / 8);
        assert_eq!(s.as_ptr() as usize % HUGE, 0);
    }

    #[test]
    fn read_mapped_touches_every_page_of_the_file() {
        let dir = std::env::temp_dir().join(format!("memhog-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        // Three pages and a bit: 4 pages, each starting with its number.
        let mut data = vec![0u8; 3 * PAGE + 10];
        for (i, page) in data.chunks_mut(PAGE).enumerate() {
            page[0] = i as u8 + 1;
        }
        std::fs::write(&path, &data).unwrap();
        assert_eq!(read_mapped(&path).unwrap(), (4, 1 + 2 + 3 + 4));
        std::fs::write(&path, b"").unwrap();
        assert_eq!(read_mapped(&path).unwrap(), (0, 0));
        assert!(read_mapped(&dir.join("missing")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
