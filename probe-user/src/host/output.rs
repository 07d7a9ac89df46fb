//! Files vmtrace writes for the user (the recording, `export -o`,
//! `compare --svg`), written so that a path another local user planted
//! cannot turn root's write into theirs. Under sudo every step (the
//! writable check, the create, the rename) is made as sudo's invoker,
//! in a thread of its own that has taken that user's identity: the file
//! is the invoker's without a chown, and what the invoker cannot write
//! vmtrace does not write either. The bytes go to a temporary name with
//! 16 random hex digits (getrandom), created O_EXCL|O_NOFOLLOW|O_CLOEXEC
//! with mode 0600, synced, given the umask's mode and renamed over the
//! final name through one descriptor of the directory. A final name that
//! is a symbolic link is refused with one line: vmtrace never writes
//! through a link, and a user's own link is not silently replaced; one
//! planted after that check is replaced by the rename (rename does not
//! follow links), so no other file is ever written.

use std::{
    ffi::{CStr, CString},
    fs::File,
    io::{self, Write},
    os::{
        fd::{AsRawFd, FromRawFd, OwnedFd},
        unix::ffi::OsStrExt,
    },
    path::{Path, PathBuf},
};

use crate::host::privilege::Identity;

/// Whom vmtrace's files are for: sudo's invoker when vmtrace runs as
/// root for someone else (SUDO_UID/SUDO_GID), None otherwise (files are
/// this process's own).
pub fn invoker() -> io::Result<Option<Identity>> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(None);
    }
    Identity::of_sudo_invoker().map_err(|e| io::Error::other(format!("{e:#}")))
}

/// Runs `f` as `who` (None: as this process is): in a thread of its own
/// whose credentials alone change (the raw system calls are per thread;
/// glibc's wrappers would change every thread), ended with `f`. The
/// process is non-dumpable while that thread lives (the kernel sets it
/// on a credential change: the invoker cannot ptrace root's memory);
/// its earlier dumpable setting is put back afterwards.
pub fn as_user<T: Send>(
    who: Option<&Identity>,
    f: impl FnOnce() -> io::Result<T> + Send,
) -> io::Result<T> {
    let Some(id) = who else { return f() };
    // SAFETY: prctl reads no memory for PR_GET_DUMPABLE.
    let dumpable = unsafe { libc::prctl(libc::PR_GET_DUMPABLE) };
    let result = std::thread::scope(|s| {
        s.spawn(|| {
            become_in_thread(id)?;
            f()
        })
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("the writing thread panicked")))
    });
    if dumpable >= 0 {
        // SAFETY: prctl with an integer argument.
        unsafe { libc::prctl(libc::PR_SET_DUMPABLE, dumpable as libc::c_ulong) };
    }
    result
}

/// Takes `id` in the calling thread only: groups, group, then user.
fn become_in_thread(id: &Identity) -> io::Result<()> {
    let (uid, gid) = (id.uid as libc::c_long, id.gid as libc::c_long);
    // SAFETY: raw system calls on plain integers and a valid group list.
    let failed = unsafe {
        libc::syscall(
            libc::SYS_setgroups,
            id.groups.len() as libc::c_long,
            id.groups.as_ptr(),
        ) != 0
            || libc::syscall(libc::SYS_setresgid, gid, gid, gid) != 0
            || libc::syscall(libc::SYS_setresuid, uid, uid, uid) != 0
    };
    // SAFETY: geteuid has no preconditions (and reads this thread's).
    if failed || unsafe { libc::geteuid() } != id.uid {
        return Err(io::Error::other(format!(
            "cannot act as {}: {}",
            id.describe(),
            io::Error::last_os_error()
        )));
    }
    Ok(())
}

/// 16 random hex digits from the kernel's generator.
pub fn random_hex() -> io::Result<String> {
    let mut b = [0u8; 8];
    // SAFETY: getrandom writes at most b.len() bytes into b.
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), 0) };
    if n != b.len() as isize {
        return Err(io::Error::last_os_error());
    }
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// Why a path cannot be written; each names what to do.
#[derive(Debug, PartialEq, Eq)]
pub enum Unwritable {
    /// The final name is a symbolic link.
    Link,
    /// The directory is not writable by `who` (the invoker, or root).
    Denied { who: String, why: String },
}

/// Whether `path` could be written: its final name not a symbolic link,
/// its directory writable by `who` (checked as `who`, with
/// faccessat(AT_EACCESS), not by root's rights).
pub fn check(path: &Path, who: Option<&Identity>) -> Result<(), Unwritable> {
    let (dir, _) = split(path).map_err(|e| Unwritable::Denied {
        who: describe(who),
        why: e.to_string(),
    })?;
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(Unwritable::Link);
    }
    let cdir = cstr(&dir).map_err(|e| Unwritable::Denied {
        who: describe(who),
        why: e.to_string(),
    })?;
    as_user(who, move || {
        // SAFETY: a valid NUL-terminated path.
        let r = unsafe {
            libc::faccessat(
                libc::AT_FDCWD,
                cdir.as_ptr(),
                libc::W_OK | libc::X_OK,
                libc::AT_EACCESS,
            )
        };
        if r == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    })
    .map_err(|e| Unwritable::Denied {
        who: describe(who),
        why: e.to_string(),
    })
}

/// How errors name the writer: `nobody (uid 65534, gid 65534), sudo's
/// invoker`, or `root`.
pub fn describe(who: Option<&Identity>) -> String {
    who.map_or_else(
        || "this user".to_string(),
        |i| format!("{}, sudo's invoker", i.describe()),
    )
}

/// Writes `bytes` to `path` as described at the top, as the invoker.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let who = invoker()?;
    write_atomic_as(path, bytes, who.as_ref())
}

/// `write_atomic`, readable by its owner only (mode 0600): what lists
/// other users' processes (a system-wide attach).
pub fn write_atomic_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let who = invoker()?;
    write_atomic_mode(path, |w| w.write_all(bytes), who.as_ref(), 0o600)
}

/// `write_atomic` as `who` (None: as this process is).
pub fn write_atomic_as(path: &Path, bytes: &[u8], who: Option<&Identity>) -> io::Result<()> {
    write_atomic_mode(path, |w| w.write_all(bytes), who, 0o666 & !umask())
}

/// `write_atomic` of what `content` writes, streamed (buffered) into the
/// temporary file: an export larger than memory never is in memory.
pub fn write_atomic_with(
    path: &Path,
    content: impl FnOnce(&mut dyn Write) -> io::Result<()> + Send,
) -> io::Result<()> {
    let who = invoker()?;
    write_atomic_mode(path, content, who.as_ref(), 0o666 & !umask())
}

fn write_atomic_mode(
    path: &Path,
    content: impl FnOnce(&mut dyn Write) -> io::Result<()> + Send,
    who: Option<&Identity>,
    mode: u32,
) -> io::Result<()> {
    let (dir, name) = split(path)?;
    let (cdir, cname) = (cstr(&dir)?, cstr(Path::new(&name))?);
    as_user(who, move || {
        let dirfd = open_dir(&cdir)?;
        if is_link_at(&dirfd, &cname) {
            return Err(io::Error::other(
                "it is a symbolic link, and vmtrace does not write through links \
                 (another user may have planted it); remove it or choose another path",
            ));
        }
        remove_dead_temporaries(&dirfd, &name);
        let (tmp, file) = create_temporary(&dirfd, &name)?;
        let written = fill(file, content, mode).and_then(|()| {
            // SAFETY: valid descriptor and NUL-terminated names.
            let r = unsafe {
                libc::renameat(
                    dirfd.as_raw_fd(),
                    tmp.as_ptr(),
                    dirfd.as_raw_fd(),
                    cname.as_ptr(),
                )
            };
            if r == 0 {
                Ok(())
            } else {
                Err(io::Error::last_os_error())
            }
        });
        if written.is_err() {
            // SAFETY: valid descriptor and NUL-terminated name.
            unsafe { libc::unlinkat(dirfd.as_raw_fd(), tmp.as_ptr(), 0) };
        }
        written
    })
}

/// `create_dir_all` as the invoker: directories for the user's results
/// (`vmtrace kernels --out`) are the invoker's, and a link on the way is
/// followed only with the invoker's rights.
pub fn create_dir_all(path: &Path) -> io::Result<()> {
    let who = invoker()?;
    as_user(who.as_ref(), || std::fs::create_dir_all(path))
}

/// `create_dir_all` as the invoker, then the directory itself checked
/// without following a link: a directory of the invoker's (root's
/// without sudo). One that exists as another user's (planted where the
/// results were to go), or a link, is refused: what vmtrace writes and
/// reads back there must be the invoker's own.
pub fn own_dir(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    create_dir_all(path)?;
    let who = invoker()?;
    // SAFETY: geteuid has no preconditions.
    let uid = who.as_ref().map_or(unsafe { libc::geteuid() }, |w| w.uid);
    let m = std::fs::symlink_metadata(path)?;
    if !m.is_dir() {
        return Err(io::Error::other(
            "it is a symbolic link or not a directory; give a directory of your own",
        ));
    }
    if m.uid() != uid {
        return Err(io::Error::other(format!(
            "it belongs to uid {}, not to uid {uid} who runs vmtrace; give a \
             directory of your own (or a new name)",
            m.uid()
        )));
    }
    Ok(())
}

/// Opens `path` for writing as the invoker (created 0644 less the umask,
/// or truncated; a symbolic link at the final name refused by
/// O_NOFOLLOW); the descriptor stays usable by the whole process.
pub fn create_file(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let who = invoker()?;
    as_user(who.as_ref(), || {
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)
    })
}

/// A scratch tree for the user's command, `PARENT/PREFIX-<16 hex>-<pid>/
/// tree`; returns (outer, tree). The outer directory is root's (made by
/// mkdir, which never follows a link, under a random name no one can
/// have planted, so no one else can put anything in it); the inner one
/// is given to `who` through its own descriptor (fchown), never by path.
pub fn scratch_tree(
    parent: &Path,
    prefix: &str,
    who: Option<&Identity>,
) -> io::Result<(PathBuf, PathBuf)> {
    use std::os::unix::fs::DirBuilderExt;
    let outer = parent.join(format!("{prefix}-{}-{}", random_hex()?, std::process::id()));
    std::fs::DirBuilder::new().mode(0o755).create(&outer)?;
    let tree = outer.join("tree");
    let made = std::fs::DirBuilder::new()
        .mode(0o755)
        .create(&tree)
        .and_then(|()| {
            let Some(id) = who else { return Ok(()) };
            let c = cstr(&tree)?;
            // SAFETY: a valid NUL-terminated path.
            let fd = unsafe {
                libc::open(
                    c.as_ptr(),
                    libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                )
            };
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: a descriptor just opened, owned by nothing else.
            let fd = unsafe { OwnedFd::from_raw_fd(fd) };
            // SAFETY: fchown on a descriptor we own.
            if unsafe { libc::fchown(fd.as_raw_fd(), id.uid, id.gid) } != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    if let Err(e) = made {
        let _ = std::fs::remove_dir_all(&outer);
        return Err(e);
    }
    Ok((outer, tree))
}

/// The directory and final name of `path` (`.` when it has no directory).
fn split(path: &Path) -> io::Result<(PathBuf, std::ffi::OsString)> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::other("not a file name"))?;
    Ok((dir, name.to_os_string()))
}

fn cstr(p: &Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| io::Error::other("the path has a NUL byte"))
}

fn open_dir(dir: &CStr) -> io::Result<OwnedFd> {
    // SAFETY: a valid NUL-terminated path.
    let fd = unsafe {
        libc::open(
            dir.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor just opened, owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Whether `name` in the directory is a symbolic link (not followed).
pub(crate) fn is_link_at(dir: &OwnedFd, name: &CStr) -> bool {
    lstat_at(dir.as_raw_fd(), name).is_some_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFLNK)
}

/// What `name` in the directory `dir` is, without following a link at
/// it (fstatat with AT_SYMLINK_NOFOLLOW); None when it is not there.
pub(crate) fn lstat_at(dir: std::os::fd::RawFd, name: &CStr) -> Option<libc::stat> {
    // SAFETY: zeroed stat is a valid out-parameter.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid descriptor, name and out-parameter.
    let r = unsafe { libc::fstatat(dir, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
    (r == 0).then_some(st)
}

/// `.NAME.<pid>-<16 hex>.tmp`, created O_EXCL|O_NOFOLLOW, mode 0600; a
/// name that exists (planted, or a collision) is passed over for a new
/// one.
fn create_temporary(dir: &OwnedFd, name: &std::ffi::OsStr) -> io::Result<(CString, File)> {
    for _ in 0..16 {
        let mut tmp = b".".to_vec();
        tmp.extend_from_slice(name.as_bytes());
        tmp.extend_from_slice(format!(".{}-{}.tmp", std::process::id(), random_hex()?).as_bytes());
        let tmp = CString::new(tmp).map_err(|_| io::Error::other("the name has a NUL byte"))?;
        let flags =
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: valid descriptor and NUL-terminated name.
        let fd =
            unsafe { libc::openat(dir.as_raw_fd(), tmp.as_ptr(), flags, 0o600 as libc::c_uint) };
        if fd >= 0 {
            // SAFETY: a descriptor just opened, owned by nothing else.
            return Ok((tmp, unsafe { File::from_raw_fd(fd) }));
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::AlreadyExists {
            return Err(e);
        }
    }
    Err(io::Error::other("no free temporary name after 16 tries"))
}

/// The pid in a temporary's name for NAME (`.NAME.<pid>-<16 hex>.tmp`).
fn temporary_pid(entry: &[u8], name: &[u8]) -> Option<u32> {
    let rest = entry
        .strip_prefix(b".")?
        .strip_prefix(name)?
        .strip_prefix(b".")?
        .strip_suffix(b".tmp")?;
    let rest = std::str::from_utf8(rest).ok()?;
    let (pid, hex) = rest.split_once('-')?;
    let hex_ok = hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit());
    let pid_ok = !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit());
    (hex_ok && pid_ok).then(|| pid.parse().ok()).flatten()
}

/// Removes the temporaries for NAME that a vmtrace killed while writing
/// it left beside it: plain files of this (fs) user, not links, named
/// for a pid that is gone.
fn remove_dead_temporaries(dir: &OwnedFd, name: &std::ffi::OsStr) {
    let listing = PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd()));
    let Ok(entries) = std::fs::read_dir(listing) else {
        return;
    };
    // SAFETY: no preconditions.
    let me = unsafe { libc::geteuid() };
    for e in entries.flatten() {
        let entry = e.file_name();
        let Some(pid) = temporary_pid(entry.as_bytes(), name.as_bytes()) else {
            continue;
        };
        let Ok(c) = CString::new(entry.as_bytes()) else {
            continue;
        };
        let plain_and_mine = lstat_at(dir.as_raw_fd(), &c)
            .is_some_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFREG && st.st_uid == me);
        if plain_and_mine && !Path::new(&format!("/proc/{pid}")).exists() {
            // SAFETY: valid descriptor and NUL-terminated name.
            unsafe { libc::unlinkat(dir.as_raw_fd(), c.as_ptr(), 0) };
        }
    }
}

fn fill(
    file: File,
    content: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    mode: u32,
) -> io::Result<()> {
    let mut out = io::BufWriter::new(file);
    content(&mut out)?;
    let file = out.into_inner().map_err(|e| e.into_error())?;
    // SAFETY: fchmod on a descriptor we own.
    if unsafe { libc::fchmod(file.as_raw_fd(), mode) } != 0 {
        return Err(io::Error::last_os_error());
    }
    file.sync_all()
}

/// This process's umask, read without changing it (/proc/self/status).
fn umask() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Umask:"))
                .and_then(|m| u32::from_str_radix(m.trim(), 8).ok())
        })
        .unwrap_or(0o022)
        & 0o777
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    #[test]
    fn writes_atomically_and_refuses_a_link_at_the_final_name() {
        let dir = crate::host::test_scratch("output");
        let path = dir.join("out.txt");
        write_atomic_as(&path, b"one\n", None).expect("writes");
        write_atomic_as(&path, b"two\n", None).expect("replaces");
        assert_eq!(std::fs::read(&path).expect("read"), b"two\n");
        let mode = std::fs::metadata(&path).expect("stat").mode() & 0o777;
        assert_eq!(mode, 0o666 & !umask());
        // Nothing but the file is left: the temporary name is gone.
        let names: Vec<_> = std::fs::read_dir(&dir).expect("ls").flatten().collect();
        assert_eq!(names.len(), 1, "{names:?}");
        let target = dir.join("target");
        std::fs::write(&target, b"keep").expect("write");
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        let link = dir.join("link.txt");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        let e = write_atomic_as(&link, b"evil", None).expect_err("refused");
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read(&target).expect("read"), b"keep");
        assert_eq!(check(&link, None), Err(Unwritable::Link));
        assert_eq!(check(&path, None), Ok(()));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_dead_writers_temporary_is_removed_and_nothing_else() {
        let dir = crate::host::test_scratch("output-dead-tmp");
        let dead = dir.join(".out.json.4294967294-0123456789abcdef.tmp");
        let live = dir.join(format!(
            ".out.json.{}-0123456789abcdef.tmp",
            std::process::id()
        ));
        let other = dir.join(".other.json.4294967294-0123456789abcdef.tmp");
        let odd = dir.join(".out.json.4294967294-0123.tmp");
        for f in [&dead, &live, &other, &odd] {
            std::fs::write(f, b"x").expect("write");
        }
        let link = dir.join(".out.json.4294967293-0123456789abcdef.tmp");
        std::os::unix::fs::symlink(&other, &link).expect("symlink");
        write_atomic_as(&dir.join("out.json"), b"{}", None).expect("writes");
        assert!(!dead.exists(), "a dead pid's temporary stays");
        for kept in [&live, &other, &odd] {
            assert!(kept.exists(), "{} went", kept.display());
        }
        assert!(std::fs::symlink_metadata(&link).is_ok(), "a link went");
        assert_eq!(temporary_pid(b".a.7-0123456789abcdef.tmp", b"a"), Some(7));
        assert_eq!(temporary_pid(b".a.7-0123456789abcdef.tmp", b"b"), None);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_output_directory_of_another_user_or_a_link_is_refused() {
        // SAFETY: no preconditions.
        if unsafe { libc::geteuid() } != 0 || std::env::var_os("SUDO_UID").is_some() {
            return; // chown needs root; under sudo the invoker decides.
        }
        let dir = crate::host::test_scratch("own-dir");
        let mine = dir.join("new/deeper");
        own_dir(&mine).expect("a new directory is ours");
        own_dir(&mine).expect("and stays ours");
        let theirs = dir.join("theirs");
        std::fs::create_dir(&theirs).expect("mkdir");
        std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).expect("chown");
        let e = own_dir(&theirs).expect_err("another user's");
        assert!(e.to_string().contains("belongs to uid 65534"), "{e}");
        let link = dir.join("link");
        std::os::unix::fs::symlink(&mine, &link).expect("symlink");
        let e = own_dir(&link).expect_err("a link");
        assert!(e.to_string().contains("symbolic link"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_private_file_is_its_owners_alone() {
        let dir = crate::host::test_scratch("output-private");
        let path = dir.join("everyone.json");
        write_atomic_private(&path, b"{}").expect("writes");
        let mode = std::fs::metadata(&path).expect("stat").mode() & 0o777;
        assert_eq!(mode, 0o600);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn random_names_differ() {
        let (a, b) = (random_hex().expect("a"), random_hex().expect("b"));
        assert_eq!(a.len(), 16);
        assert_ne!(a, b);
    }

    #[test]
    fn a_missing_directory_is_an_error_not_a_panic() {
        let e = write_atomic_as(Path::new("/nonexistent-dir/x"), b"x", None).expect_err("fails");
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert!(matches!(
            check(Path::new("/nonexistent-dir/x"), None),
            Err(Unwritable::Denied { .. })
        ));
    }
}
