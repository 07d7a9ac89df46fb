//! A process of its own for what reads the network. `attach --serve`
//! forks its HTTP server before anything is attached or opened, and the
//! child gives up root for good: uid and gid of `nobody`, no
//! supplementary groups, no capability in any set, no_new_privs, and no
//! descriptor but stdio, the listening socket and its end of a socket
//! pair to the parent. A bug in the HTTP code then runs as nobody: it
//! cannot read /etc/shadow, write root's files or reach the maps (their
//! descriptors were never its own). The parent, which reads only a byte
//! a scrape from the child, keeps what the exit must restore.
//!
//! Credentials are per thread on Linux, so the fork happens while the
//! process has one (checked), and the child changes them with raw system
//! calls before it starts any thread of its own.

use std::os::fd::RawFd;

use anyhow::{Result, bail};

/// The forked server, from the parent's side. It ends by itself when
/// its socket to the parent closes; `reap` waits for that.
#[derive(Debug)]
pub struct Child {
    pid: libc::pid_t,
    reaped: bool,
}

impl Child {
    /// Waits up to 2 s for the child to end, then sends SIGKILL (which
    /// needs CAP_KILL, dropped by then in most cases: the child then
    /// ends when this process does, with its socket) and reaps what it
    /// can.
    pub fn reap(&mut self) {
        if self.reaped {
            return;
        }
        let gone = |pid| {
            // SAFETY: waitpid on our own child, without blocking.
            unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) == pid }
        };
        for _ in 0..200 {
            if gone(self.pid) {
                self.reaped = true;
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        // SAFETY: kill on the pid of our own unreaped child.
        unsafe { libc::kill(self.pid, libc::SIGKILL) };
        std::thread::sleep(std::time::Duration::from_millis(10));
        self.reaped = gone(self.pid);
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        self.reap();
    }
}

/// Which side of the fork this is.
#[derive(Debug)]
pub enum Forked {
    Parent(Child),
    /// Unprivileged, with only stdio and the descriptors kept.
    Child,
}

/// Forks; the child closes every descriptor but stdio and `keep`, takes
/// `nobody`'s identity and drops every capability, and ignores SIGINT and
/// SIGTERM (the parent decides when serving ends, and the child dies
/// with it: PR_SET_PDEATHSIG). A child that cannot drop exits at once
/// with one line; the parent sees its socket end close.
pub fn fork_unprivileged(keep: &[RawFd]) -> Result<Forked> {
    let threads = std::fs::read_dir("/proc/self/task").map_or(1, |d| d.count());
    if threads != 1 {
        bail!(
            "{threads} threads before the HTTP server's fork: its credentials could not \
             be its own; report this as a vmtrace bug"
        );
    }
    let (uid, gid) = nobody();
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the process has one thread (checked above), so the child
    // inherits no lock held by another.
    match unsafe { libc::fork() } {
        -1 => bail!(
            "cannot fork the HTTP server: {}",
            std::io::Error::last_os_error()
        ),
        0 => {
            if let Err(e) = become_unprivileged(keep, uid, gid, parent) {
                eprintln!("vmtrace: the HTTP server cannot drop root ({e:#}); it stops");
                // SAFETY: leaves the forked child without running the
                // parent's destructors or flushing its buffers.
                unsafe { libc::_exit(1) };
            }
            Ok(Forked::Child)
        }
        pid => Ok(Forked::Parent(Child { pid, reaped: false })),
    }
}

/// `nobody`'s uid and gid from the password database, or 65534.
fn nobody() -> (libc::uid_t, libc::gid_t) {
    // SAFETY: getpwnam with a NUL-terminated name; the process has one
    // thread, so its static result is not overwritten meanwhile.
    let pw = unsafe { libc::getpwnam(c"nobody".as_ptr()) };
    if pw.is_null() {
        return (65534, 65534);
    }
    // SAFETY: a non-null result points to a filled passwd record.
    let (uid, gid) = unsafe { ((*pw).pw_uid, (*pw).pw_gid) };
    if uid == 0 || gid == 0 {
        return (65534, 65534);
    }
    (uid, gid)
}

fn become_unprivileged(
    keep: &[RawFd],
    uid: libc::uid_t,
    gid: libc::gid_t,
    parent: libc::pid_t,
) -> Result<()> {
    close_all_but(keep);
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: SIG_IGN for a catchable signal.
        unsafe { libc::signal(sig, libc::SIG_IGN) };
    }
    // The bounding set while CAP_SETPCAP is still held (EPERM: a service
    // manager left it out, and the empty permitted set below is enough).
    for cap in 0..64u32 {
        // SAFETY: prctl with integer arguments only.
        if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) } != 0 {
            break;
        }
    }
    // SAFETY: prctl with integer arguments only.
    unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
            0,
            0,
            0,
        )
    };
    // Groups, group, then user. A user that held capabilities without
    // root (and without CAP_SETUID) keeps its own uid: the capset below
    // still empties every set.
    // SAFETY: raw system calls on plain integers and an empty list.
    unsafe {
        libc::syscall(
            libc::SYS_setgroups,
            0 as libc::c_long,
            std::ptr::null::<libc::gid_t>(),
        );
        libc::syscall(libc::SYS_setresgid, gid, gid, gid);
        libc::syscall(libc::SYS_setresuid, uid, uid, uid);
    }
    super::privilege::capset_none()?;
    // SAFETY: prctl with integer arguments only.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        bail!("no_new_privs: {}", std::io::Error::last_os_error());
    }
    // A change of credentials clears the parent-death signal: set it
    // after, then make sure the parent did not go in between.
    // SAFETY: prctl with integer arguments only; getppid has no
    // preconditions.
    unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        if libc::getppid() != parent {
            libc::_exit(0);
        }
    }
    check_unprivileged()
}

/// Closes every descriptor above stderr that is not in `keep`.
fn close_all_but(keep: &[RawFd]) {
    let open: Vec<RawFd> = std::fs::read_dir("/proc/self/fd")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    for fd in open {
        if fd > 2 && !keep.contains(&fd) {
            // SAFETY: closing a descriptor this process no longer uses
            // (the directory's own is already closed: EBADF, ignored).
            unsafe { libc::close(fd) };
        }
    }
}

/// What the kernel says of this process now: no uid or gid 0, no
/// capability held or permitted.
fn check_unprivileged() -> Result<()> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(str::trim)
            .unwrap_or("")
            .to_string()
    };
    for name in ["Uid:", "Gid:"] {
        let ids = field(name);
        if ids.is_empty() || ids.split_whitespace().any(|id| id == "0") {
            bail!("{name} {ids} after the drop");
        }
    }
    for name in ["CapEff:", "CapPrm:", "CapAmb:"] {
        let mask = u64::from_str_radix(&field(name), 16).unwrap_or(u64::MAX);
        if mask != 0 {
            bail!("{name} {mask:016x} after the drop");
        }
    }
    Ok(())
}
