//! qsbench: fill an array of ints from the C library's rand() and
//! quicksort it, the benchmark of the 2001 "VM: qsbench numbers" mails.
//! Sized past the memory it runs in, the sort's sweeps over the array make
//! the VM swap hard; the same seed gives the same data, so the same memory
//! traffic, run after run and kernel after kernel.

use std::{ffi::CString, io, ptr::NonNull, time::Duration};

use anyhow::{Context, Result, bail};

/// glibc's rand(): the default TYPE_3 additive feedback generator
/// (x[i] = x[i-3] + x[i-31] mod 2^32, output x >> 1), seeded by srand()'s
/// Park-Miller sequence and run 310 steps before the first output.
/// Reproduced so that a seed gives the data the C qsbench sorts.
#[derive(Clone, Debug)]
pub struct GlibcRand {
    state: [u32; 31],
    front: usize,
    rear: usize,
}

impl GlibcRand {
    pub fn new(seed: u32) -> GlibcRand {
        let mut state = [0u32; 31];
        // srandom_r: a seed of 0 becomes 1; the seed is taken as int32.
        let mut word: i64 = if seed == 0 { 1 } else { seed as i32 as i64 };
        state[0] = word as u32;
        for s in state.iter_mut().skip(1) {
            // 16807 * word % (2^31 - 1) without overflow (Schrage), as C
            // does it: division truncating toward zero.
            let hi = word / 127_773;
            let lo = word % 127_773;
            word = 16_807 * lo - 2_836 * hi;
            if word < 0 {
                word += 2_147_483_647;
            }
            *s = word as u32;
        }
        let mut r = GlibcRand {
            state,
            front: 3,
            rear: 0,
        };
        for _ in 0..310 {
            r.next_u31();
        }
        r
    }

    /// The next rand() value, 0..=RAND_MAX (2^31 - 1).
    #[inline]
    pub fn next_u31(&mut self) -> i32 {
        let v = self.state[self.front].wrapping_add(self.state[self.rear]);
        self.state[self.front] = v;
        self.front = if self.front == 30 { 0 } else { self.front + 1 };
        self.rear = if self.rear == 30 { 0 } else { self.rear + 1 };
        (v >> 1) as i32
    }
}

/// Sorts in place: recursive quicksort with a median-of-three pivot (of the
/// first, middle and last element) and a Hoare-style partition, as qsbench
/// does. Recursion goes into the smaller part and loops on the larger, so
/// the stack stays O(log n) whatever the data.
pub fn quicksort(mut a: &mut [i32]) {
    loop {
        let n = a.len();
        if n < 2 {
            return;
        }
        let (l, m, r) = (0, (n - 1) / 2, n - 1);
        // Median of three: afterwards a[l] <= a[m] <= a[r].
        if a[m] < a[l] {
            a.swap(m, l);
        }
        if a[r] < a[l] {
            a.swap(r, l);
        }
        if a[r] < a[m] {
            a.swap(r, m);
        }
        if n <= 3 {
            return;
        }
        // Pivot to r-1; a[l] <= v and a[r] >= v are the sentinels that stop
        // the scans below without a bounds test.
        a.swap(m, r - 1);
        let v = a[r - 1];
        let (mut i, mut j) = (l, r - 1);
        let p = a.as_mut_ptr();
        loop {
            // SAFETY: i starts at l and stops at the latest at r - 1 (a[r-1]
            // is v itself) or r (a[r] >= v); j starts at r - 1 and stops at
            // the latest at l (a[l] <= v). Both stay inside 0..n.
            unsafe {
                i += 1;
                while *p.add(i) < v {
                    i += 1;
                }
                j -= 1;
                while *p.add(j) > v {
                    j -= 1;
                }
            }
            if i >= j {
                break;
            }
            // SAFETY: i < j, both inside 0..n (see above); only `p` is used
            // to touch the array until the loop ends.
            unsafe { std::ptr::swap(p.add(i), p.add(j)) };
        }
        a.swap(i, r - 1);
        let (left, rest) = std::mem::take(&mut a).split_at_mut(i);
        let right = &mut rest[1..];
        if left.len() < right.len() {
            quicksort(left);
            a = right;
        } else {
            quicksort(right);
            a = left;
        }
    }
}

/// Where the array lives.
pub enum Backing {
    /// Anonymous memory: goes to swap under pressure.
    Anon,
    /// An unlinked temporary file in this directory, mapped MAP_SHARED:
    /// file pages and writeback instead of swap.
    File(std::path::PathBuf),
}

/// A mapped array of `n` ints, unmapped on drop.
pub struct Array {
    ptr: NonNull<i32>,
    len: usize,
}

impl Array {
    pub fn map(n: usize, backing: &Backing) -> Result<Array> {
        let bytes = n.checked_mul(4).context("array size overflows")?.max(4);
        let (flags, fd) = match backing {
            Backing::Anon => (libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1),
            Backing::File(dir) => (libc::MAP_SHARED, temp_file(dir, bytes)?),
        };
        // SAFETY: a fresh mapping of `bytes`; fd is -1 or a file we own.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                fd,
                0,
            )
        };
        if fd >= 0 {
            // SAFETY: the mapping keeps the file alive; the fd is ours.
            unsafe { libc::close(fd) };
        }
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error()).context("mmap of the array failed");
        }
        let ptr = NonNull::new(p.cast::<i32>()).context("mmap returned NULL")?;
        Ok(Array { ptr, len: n })
    }

    pub fn as_mut_slice(&mut self) -> &mut [i32] {
        // SAFETY: the mapping is len * 4 bytes, readable and writable, and
        // only this Array refers to it.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for Array {
    fn drop(&mut self) {
        // SAFETY: unmapping the mapping created in `map`.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), (self.len * 4).max(4)) };
    }
}

/// An unlinked file of `bytes` in `dir` (O_TMPFILE, else create + unlink).
fn temp_file(dir: &std::path::Path, bytes: usize) -> Result<i32> {
    let c = CString::new(dir.as_os_str().as_encoded_bytes())?;
    // SAFETY: a valid path; O_TMPFILE creates an unnamed file in it.
    let mut fd = unsafe { libc::open(c.as_ptr(), libc::O_TMPFILE | libc::O_RDWR, 0o600) };
    if fd < 0 {
        let name = dir.join(format!("qsbench-{}.tmp", std::process::id()));
        let c = CString::new(name.as_os_str().as_encoded_bytes())?;
        // SAFETY: a valid path; the file is unlinked right after.
        fd = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_CREAT | libc::O_EXCL | libc::O_RDWR,
                0o600,
            )
        };
        if fd >= 0 {
            // SAFETY: as above.
            unsafe { libc::unlink(c.as_ptr()) };
        }
    }
    if fd < 0 {
        return Err(io::Error::last_os_error())
            .with_context(|| format!("cannot create a temporary file in {}", dir.display()));
    }
    // SAFETY: sizing the file we just created.
    if unsafe { libc::ftruncate(fd, bytes as libc::off_t) } != 0 {
        let e = io::Error::last_os_error();
        // SAFETY: closing our own fd.
        unsafe { libc::close(fd) };
        return Err(e).context("cannot size the temporary file");
    }
    Ok(fd)
}

/// What one sorter process does: fill from `seed`, sort, verify.
/// Returns the number of out-of-order positions (0 when sorted); each is
/// reported on stderr as `ERROR: i = N`.
pub fn fill_sort_verify(a: &mut [i32], seed: u32, pause: Duration) -> u64 {
    let mut rng = GlibcRand::new(seed);
    for x in a.iter_mut() {
        *x = rng.next_u31();
    }
    quicksort(a);
    let mut errors = 0;
    for i in 1..a.len() {
        if a[i - 1] > a[i] {
            eprintln!("ERROR: i = {i}");
            errors += 1;
        }
    }
    if errors > 0 {
        eprintln!(" *** WARNING ***  {errors} errors.");
    }
    if !pause.is_zero() {
        std::thread::sleep(pause);
    }
    errors
}

/// Most sorter processes `-p` starts, as in the original.
pub const MAX_PROCS: usize = 1024;

/// Runs `procs` sorters over arrays of `n` ints (one process: in this
/// one; more: forked, each with its own array and the same seed).
pub fn run(n: usize, procs: usize, seed: u32, backing: &Backing, pause: Duration) -> Result<u64> {
    if procs == 0 {
        bail!("-p must be at least 1");
    }
    let procs = procs.min(MAX_PROCS);
    if procs == 1 {
        let mut a = Array::map(n, backing)?;
        return Ok(fill_sort_verify(a.as_mut_slice(), seed, pause));
    }
    let mut children = Vec::new();
    for _ in 0..procs {
        // SAFETY: qsbench is single-threaded here; the child only sorts
        // and leaves with _exit.
        match unsafe { libc::fork() } {
            -1 => return Err(io::Error::last_os_error()).context("fork failed"),
            0 => {
                let code = match Array::map(n, backing) {
                    Ok(mut a) => (fill_sort_verify(a.as_mut_slice(), seed, pause) > 0) as i32,
                    Err(e) => {
                        eprintln!("qsbench: {e:#}");
                        2
                    }
                };
                // SAFETY: leaving the forked child without running the
                // parent's destructors.
                unsafe { libc::_exit(code) };
            }
            pid => children.push(pid),
        }
    }
    let mut failed = 0;
    for pid in children {
        let mut status = 0;
        // SAFETY: waiting for our own children.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
            failed += 1;
        }
    }
    Ok(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    unsafe extern "C" {
        fn srand(seed: u32);
        fn rand() -> i32;
    }

    #[test]
    fn same_sequence_as_the_c_library() {
        // rand() keeps global state: this is the only test that calls it.
        for seed in [1u32, 0, 2, 42, 140_175_100, u32::MAX, 1 << 31] {
            let mut ours = GlibcRand::new(seed);
            // SAFETY: srand/rand have no preconditions.
            unsafe { srand(seed) };
            for k in 0..100_000 {
                // SAFETY: as above.
                let theirs = unsafe { rand() };
                assert_eq!(ours.next_u31(), theirs, "seed {seed}, value {k}");
            }
        }
    }

    #[test]
    fn sorts_random_sorted_reversed_and_equal_data() {
        let mut rng = GlibcRand::new(7);
        let inputs: Vec<Vec<i32>> = vec![
            vec![],
            vec![5],
            vec![2, 1],
            vec![3, 1, 2],
            (0..10_000).map(|_| rng.next_u31()).collect(),
            (0..10_000).collect(),
            (0..10_000).rev().collect(),
            vec![4; 1000],
            (0..10_000).map(|i| i % 7).collect(),
        ];
        for mut v in inputs {
            let mut want = v.clone();
            want.sort_unstable();
            quicksort(&mut v);
            assert_eq!(v, want);
        }
    }

    #[test]
    fn fills_sorts_and_verifies_anon_and_file_backed() {
        for backing in [Backing::Anon, Backing::File(std::env::temp_dir())] {
            let mut a = Array::map(50_000, &backing).expect("map");
            assert_eq!(fill_sort_verify(a.as_mut_slice(), 3, Duration::ZERO), 0);
            let s = a.as_mut_slice();
            assert!(s.windows(2).all(|w| w[0] <= w[1]));
            // Same seed, same data: the first value is the smallest rand().
            let mut first = GlibcRand::new(3);
            let min = (0..50_000).map(|_| first.next_u31()).min();
            assert_eq!(Some(s[0]), min);
        }
    }

    #[test]
    fn forks_sorters() {
        // Two children sort 20k ints each and both succeed.
        assert_eq!(
            run(20_000, 2, 9, &Backing::Anon, Duration::ZERO).expect("run"),
            0
        );
    }
}
