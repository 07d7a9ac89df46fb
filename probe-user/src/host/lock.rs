//! vmtrace's run-time state directory (/run/vmtrace) and the locks in
//! it. The directory is root's alone: created 0700 whatever the umask,
//! and checked (a real directory, owned by us, writable by no one else)
//! before anything in it is opened; every file in it is opened with
//! O_NOFOLLOW relative to that checked directory and refused unless it is
//! a plain file of ours that no one else can write. Nothing in it is
//! trusted otherwise.
//!
//! Locks are `flock`s on files there: around changing or restoring a
//! sysctl, and around mounting tracefs to attach (one vmtrace must not
//! unmount it while another reads it). A wait is bounded (30 s, then a
//! one-line error naming the lock and its holder) and ends at once on
//! SIGINT, SIGTERM or SIGHUP. Each vmtrace also holds `live-PID.lock`
//! for its whole life: another vmtrace takes a pid for a dead vmtrace's
//! only when it can take that lock, whatever the program is called;
//! a leftover named `vmtrace-<pid>` (a cgroup, a swapfile, a state file)
//! is stale by that test (`owner_is_gone`).

use std::{
    fs::File,
    io::{self, Read},
    os::fd::{AsRawFd, FromRawFd, OwnedFd},
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use anyhow::{Result, bail};

use crate::model::report::signal_name;

/// Where vmtrace keeps its run-time state (a tmpfs).
pub const STATE_DIR: &str = "/run/vmtrace";

/// How long a lock is waited for before vmtrace gives up.
pub const LOCK_TIMEOUT: Duration = Duration::from_secs(30);

/// The signals that stop vmtrace (also while it waits for a lock).
pub const STOP_SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// A stop signal arrived while vmtrace waited for a lock: vmtrace exits
/// with 128 + the signal, after what it set up is removed.
#[derive(Debug)]
pub struct Interrupted {
    pub signal: i32,
    what: String,
}

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match signal_name(self.signal) {
            "signal" => format!("signal {}", self.signal),
            name => name.to_string(),
        };
        write!(
            f,
            "interrupted by {name} while waiting for {}; nothing is left changed",
            self.what
        )
    }
}

impl std::error::Error for Interrupted {}

/// The checked state directory, open.
pub struct StateDir {
    fd: OwnedFd,
}

fn cstr(name: &str) -> io::Result<std::ffi::CString> {
    std::ffi::CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

fn fstat(fd: &impl AsRawFd) -> io::Result<libc::stat> {
    // SAFETY: a zeroed stat is a valid out-parameter; fd is open.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}

/// Why `st` is not ours alone, if it is not: another owner, or writable
/// by group or others. Read bits of others are taken away (an older
/// vmtrace made its files under the umask) by `fd`'s fchmod.
fn not_ours(fd: &impl AsRawFd, st: &libc::stat, private: u32) -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let mode = st.st_mode & 0o7777;
    if st.st_uid != me || mode & 0o022 != 0 {
        return Some(format!("owned by uid {}, mode {mode:04o}", st.st_uid));
    }
    // SAFETY: fchmod on an open descriptor of ours.
    if mode & 0o077 != 0 && unsafe { libc::fchmod(fd.as_raw_fd(), private) } != 0 {
        return Some(format!(
            "mode {mode:04o} and it cannot be made {private:04o}"
        ));
    }
    None
}

impl StateDir {
    /// Creates /run/vmtrace (0700) if it is missing, and opens it; one
    /// that is a link, not ours or writable by others is refused in one
    /// line that says to remove it.
    pub fn open() -> Result<StateDir> {
        StateDir::open_with(true)
    }

    /// The same without creating it: an error when it is missing.
    pub fn existing() -> Result<StateDir> {
        StateDir::open_with(false)
    }

    fn open_with(create: bool) -> Result<StateDir> {
        let path = cstr(STATE_DIR)?;
        // SAFETY: a NUL-terminated path.
        if create && unsafe { libc::mkdir(path.as_ptr(), 0o700) } != 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::AlreadyExists {
                bail!("cannot create {STATE_DIR} ({e}); vmtrace keeps its locks there");
            }
        }
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: a NUL-terminated path; the descriptor is owned below.
        let raw = unsafe { libc::open(path.as_ptr(), flags) };
        if raw < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::NotFound {
                bail!("{STATE_DIR} does not exist");
            }
            bail!("remove {STATE_DIR}: it is not a directory ({e}); vmtrace will recreate it");
        }
        // SAFETY: a descriptor just opened, owned from here on.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let st = fstat(&fd)?;
        if let Some(why) = not_ours(&fd, &st, 0o700) {
            bail!("remove {STATE_DIR}: {why}; vmtrace will recreate it");
        }
        Ok(StateDir { fd })
    }

    /// Opens NAME in the directory, read and write, creating it (0600)
    /// when `create`; a link, a non-file, or a file not ours alone is
    /// refused in one line. None when it does not exist (and not `create`).
    pub fn file(&self, name: &str, create: bool) -> Result<Option<File>> {
        // A file with no link left was removed between our open and
        // our fstat, by another vmtrace's sweep of dead live locks (it
        // takes each lock before removing it, and a starting vmtrace
        // creates its own before locking it): gone, so open again (a
        // few times: each removal is one sweep's, and sweeps are few).
        for _ in 0..8 {
            match self.file_once(name, create)? {
                Opened::Gone if create => continue,
                Opened::Gone | Opened::Absent => return Ok(None),
                Opened::File(f) => return Ok(Some(f)),
            }
        }
        bail!("{STATE_DIR}/{name} was removed as often as it was made; run vmtrace again")
    }

    fn file_once(&self, name: &str, create: bool) -> Result<Opened> {
        let mut flags = libc::O_RDWR | libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK;
        if create {
            flags |= libc::O_CREAT;
        }
        let c = cstr(name)?;
        // SAFETY: a NUL-terminated name relative to our directory.
        let raw = unsafe { libc::openat(self.fd.as_raw_fd(), c.as_ptr(), flags, 0o600) };
        if raw < 0 {
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::ENOENT) if !create => return Ok(Opened::Absent),
                Some(libc::ELOOP) => bail!(
                    "remove {STATE_DIR}/{name}: it is a symbolic link, which vmtrace never \
                     writes; nothing was read from it"
                ),
                _ => bail!("cannot open {STATE_DIR}/{name} ({e}); check it or remove it"),
            }
        }
        // SAFETY: a descriptor just opened, owned from here on.
        let file = unsafe { File::from_raw_fd(raw) };
        let st = fstat(&file)?;
        if st.st_nlink == 0 && st.st_mode & libc::S_IFMT == libc::S_IFREG {
            return Ok(Opened::Gone);
        }
        let why = if st.st_mode & libc::S_IFMT != libc::S_IFREG {
            Some("not a plain file".to_string())
        } else if st.st_nlink != 1 {
            Some(format!("{} hard links", st.st_nlink))
        } else {
            not_ours(&file, &st, 0o600)
        };
        if let Some(why) = why {
            bail!(
                "remove {STATE_DIR}/{name}: {why}; vmtrace did not write it, and nothing \
                 was read from it"
            );
        }
        Ok(Opened::File(file))
    }

    /// The names of the entries in the directory.
    pub fn names(&self) -> Vec<String> {
        let Ok(rd) = std::fs::read_dir(self.proc_path()) else {
            return Vec::new();
        };
        rd.flatten()
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .collect()
    }

    /// Removes NAME (a file) from the directory.
    pub fn remove(&self, name: &str) -> io::Result<()> {
        let c = cstr(name)?;
        // SAFETY: a NUL-terminated name relative to our directory.
        if unsafe { libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// The directory through our descriptor, for listing.
    fn proc_path(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}", self.fd.as_raw_fd()))
    }
}

/// Holds /run/vmtrace/NAME.lock while alive (the open file is the lock).
pub struct Lock {
    _file: File,
}

impl Lock {
    /// Takes NAME.lock, waiting at most LOCK_TIMEOUT; a stop signal ends
    /// the wait with `Interrupted`.
    pub fn take(name: &str) -> Result<Lock> {
        Lock::take_in(&StateDir::open()?, name, true)
    }

    /// The same for the way out (restoring what a run changed): not
    /// ended by signals, which go on to their own handling.
    pub fn take_uninterrupted(name: &str) -> Result<Lock> {
        Lock::take_in(&StateDir::open()?, name, false)
    }

    fn take_in(dir: &StateDir, name: &str, interruptible: bool) -> Result<Lock> {
        let file_name = format!("{name}.lock");
        let Some(file) = dir.file(&file_name, true)? else {
            bail!("cannot create {STATE_DIR}/{file_name}");
        };
        let what = format!("{STATE_DIR}/{file_name}");
        wait_for_flock(&file, &what, interruptible)?;
        Ok(Lock { _file: file })
    }
}

/// flock(LOCK_NB): Ok(true) when taken, Ok(false) when someone holds it.
fn try_flock(file: &File) -> io::Result<bool> {
    loop {
        // SAFETY: flock on a descriptor we own; released on close.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(true);
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EWOULDBLOCK) => return Ok(false),
            Some(libc::EINTR) => continue,
            _ => return Err(e),
        }
    }
}

/// Polls for the lock, with the stop signals held for the wait so that
/// one arriving is taken here (sigtimedwait) and ends it.
fn wait_for_flock(file: &File, what: &str, interruptible: bool) -> Result<()> {
    if try_flock(file)? {
        return Ok(());
    }
    let started = Instant::now();
    let signals = interruptible.then(Held::block);
    let mut said = false;
    loop {
        if try_flock(file)? {
            return Ok(());
        }
        let waited = started.elapsed();
        if waited >= LOCK_TIMEOUT {
            bail!(
                "gave up after {} s waiting for {what}, held by {}; wait for it to end, \
                 or end it",
                LOCK_TIMEOUT.as_secs(),
                holder(file)
            );
        }
        if !said && waited > Duration::from_secs(1) {
            eprintln!("vmtrace: waiting for {what}, held by {}", holder(file));
            said = true;
        }
        let pause = Duration::from_millis(50).min(LOCK_TIMEOUT - waited);
        match &signals {
            Some(held) => {
                if let Some(signal) = held.wait(pause) {
                    bail!(Interrupted {
                        signal,
                        what: what.to_string()
                    })
                }
            }
            None => std::thread::sleep(pause),
        }
    }
}

/// The stop signals blocked on this thread while this lives (the mask
/// before restored on drop), so that they can be waited for, or stay
/// pending through a step they must not interrupt: the eBPF load (the
/// verifier gives up on a pending signal, kernel/bpf/verifier.c
/// do_check: -EAGAIN, and aya's feature probes, which load small
/// programs, read a failure as a feature the kernel lacks; a signal
/// storm during the load once failed it with "error relocating
/// function ... section not found", likely that way, not reproduced).
pub(crate) struct Held {
    set: libc::sigset_t,
    old: libc::sigset_t,
}

impl Held {
    pub(crate) fn block() -> Held {
        // SAFETY: sigsets we own, changed only through libc's functions.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for s in STOP_SIGNALS {
                libc::sigaddset(&mut set, s);
            }
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
            Held { set, old }
        }
    }

    /// A stop signal that arrives within `timeout`, taken.
    fn wait(&self, timeout: Duration) -> Option<i32> {
        let ts = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: a sigset and a timespec we own.
        let s = unsafe { libc::sigtimedwait(&self.set, std::ptr::null_mut(), &ts) };
        (s > 0).then_some(s)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        // SAFETY: restores the mask saved in `block`.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.old, std::ptr::null_mut()) };
    }
}

/// Who holds the flock on `file`, from /proc/locks: "pid N (comm)".
fn holder(file: &File) -> String {
    let Ok(st) = fstat(file) else {
        return "another process".into();
    };
    let mut text = String::new();
    if let Ok(f) = File::open("/proc/locks") {
        let _ = f.take(1 << 20).read_to_string(&mut text);
    }
    // `1: FLOCK  ADVISORY  WRITE 2345 00:1a:1234 0 EOF`; waiters have `->`.
    let pid = text.lines().find_map(|l| {
        let w: Vec<&str> = l.split_whitespace().collect();
        let ino = w.get(5)?.rsplit(':').next()?.parse::<u64>().ok()?;
        (w.get(1) == Some(&"FLOCK") && ino == st.st_ino).then(|| w.get(4)?.parse::<u32>().ok())?
    });
    match pid {
        Some(pid) => {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            format!("pid {pid} ({})", comm.trim())
        }
        None => "another process".into(),
    }
}

/// What one open of a state file found.
enum Opened {
    File(File),
    /// Not there (and not created).
    Absent,
    /// Removed by another vmtrace between the open and the fstat.
    Gone,
}

/// `live-PID.lock`, held (flock, exclusive) for the life of the vmtrace
/// that took it, and removed when it drops.
pub struct LiveLock {
    dir: StateDir,
    name: String,
    _file: File,
}

fn live_name(pid: u32) -> String {
    format!("live-{pid}.lock")
}

impl LiveLock {
    /// Takes this process's live lock (first thing a run or an attach
    /// does, before it changes anything another vmtrace would clean up).
    pub fn take() -> Result<LiveLock> {
        let dir = StateDir::open()?;
        let name = live_name(std::process::id());
        loop {
            let Some(file) = dir.file(&name, true)? else {
                bail!("cannot create {STATE_DIR}/{name}");
            };
            wait_for_flock(&file, &format!("{STATE_DIR}/{name}"), true)?;
            // A sweep that found a dead vmtrace of our pid may have
            // removed the file while we waited: ours must be the one there.
            let here = dir.file(&name, false)?.map(|f| fstat(&f).map(|s| s.st_ino));
            if let (Some(Ok(ino)), Ok(st)) = (here, fstat(&file))
                && ino == st.st_ino
            {
                return Ok(LiveLock {
                    dir,
                    name,
                    _file: file,
                });
            }
        }
    }
}

impl Drop for LiveLock {
    fn drop(&mut self) {
        let _ = self.dir.remove(&self.name);
    }
}

/// Whether `pid` is a live vmtrace: one that holds its live lock. A pid
/// without a live lock file is a vmtrace from before live locks only
/// while a program called vmtrace runs under it.
pub fn vmtrace_alive(pid: u32) -> bool {
    if pid == std::process::id() {
        return true;
    }
    if !Path::new(&format!("/proc/{pid}")).exists() {
        return false;
    }
    let lock = StateDir::existing().and_then(|d| d.file(&live_name(pid), false));
    match lock {
        Ok(Some(file)) => !try_flock(&file).unwrap_or(false),
        _ => std::fs::read(format!("/proc/{pid}/comm")).is_ok_and(|c| c.starts_with(b"vmtrace")),
    }
}

/// Whether `vmtrace-<pid>` (a cgroup, a sysctl state file) names a
/// vmtrace that is no longer running (`vmtrace_alive`).
pub(crate) fn owner_is_gone(name: &str) -> bool {
    let Some(pid) = name
        .strip_prefix("vmtrace-")
        .map(|rest| rest.trim_end_matches(".swap"))
        .and_then(|p| p.parse::<u32>().ok())
    else {
        return false;
    };
    // Gone, or the pid now belongs to something else: by the live lock
    // each vmtrace holds for its life, not by the program's name.
    !vmtrace_alive(pid)
}

/// Removes the live locks of vmtraces that are gone (after their
/// leftovers were cleaned up), each taken first so that a live one's is
/// never removed.
pub fn remove_dead_live_locks() {
    let Ok(dir) = StateDir::existing() else {
        return;
    };
    for name in dir.names() {
        let Some(pid) = name
            .strip_prefix("live-")
            .and_then(|r| r.strip_suffix(".lock"))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        if let Ok(Some(file)) = dir.file(&name, false)
            && try_flock(&file).unwrap_or(false)
        {
            let _ = dir.remove(&name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_names_are_those_of_dead_vmtraces() {
        // Our own pid is alive and ours: never stale.
        assert!(!owner_is_gone(&format!("vmtrace-{}", std::process::id())));
        // Not vmtrace's naming: never touched.
        assert!(!owner_is_gone("system.slice"));
        assert!(!owner_is_gone("vmtrace-abc"));
        // pid 1 is alive but is not vmtrace: its name is stale.
        assert!(owner_is_gone("vmtrace-1.swap"));
        // A pid beyond pid_max cannot be running.
        assert!(owner_is_gone("vmtrace-4294967294"));
    }
}
