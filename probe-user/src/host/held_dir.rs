//! A directory of the invoker's, held by its descriptor. `kernels` keeps
//! each guest's job directory this way: root reads what the guest left
//! there (its exit status, disk counters, stderr, the recording) through
//! the descriptor, never following a link, and QEMU is given the same
//! directory as `/proc/self/fd/N` rather than by name. The invoker owns
//! the directory and could swap a file, or the directory itself, for a
//! link to one of root's between a check and a use: then root would
//! print /etc/shadow's lines as "the guest's stderr", or QEMU (root)
//! would share /etc with a guest the invoker controls.

use std::{
    ffi::OsString,
    fs::File,
    io::{self, Read},
    os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd},
    os::unix::ffi::OsStrExt,
    path::{Path, PathBuf},
};

/// An open directory of the invoker's (root's without sudo).
#[derive(Debug)]
pub struct HeldDir {
    fd: OwnedFd,
    path: PathBuf,
}

impl HeldDir {
    /// Opens `path` without following a link at its last name and checks
    /// on the descriptor that it is a directory of the invoker's.
    pub fn open(path: &Path) -> io::Result<HeldDir> {
        let c = std::ffi::CString::new(path.as_os_str().as_bytes())?;
        // SAFETY: open with a NUL-terminated path; the result is checked.
        let raw = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(io::Error::other(format!(
                "{}: {} (a directory of your own, not a link, is needed)",
                path.display(),
                io::Error::last_os_error()
            )));
        }
        // SAFETY: raw is a descriptor just opened and owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let st = fstat(fd.as_raw_fd())?;
        let who = super::output::invoker()?;
        // SAFETY: geteuid has no preconditions.
        let uid = who.as_ref().map_or(unsafe { libc::geteuid() }, |w| w.uid);
        if st.st_uid != uid {
            return Err(io::Error::other(format!(
                "{} belongs to uid {}, not to uid {uid} who runs vmtrace",
                path.display(),
                st.st_uid
            )));
        }
        Ok(HeldDir {
            fd,
            path: path.to_path_buf(),
        })
    }

    /// The path it was opened by (for messages only).
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// The directory as another program opens it: a descriptor it
    /// inherits (its close-on-exec flag cleared in the child), by
    /// /proc/self/fd.
    pub fn proc_path(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}", self.fd.as_raw_fd()))
    }

    /// `name`'s contents, at most `cap` bytes: a regular file with one
    /// link, opened without following a link and without blocking.
    pub fn read(&self, name: &str, cap: u64) -> io::Result<Vec<u8>> {
        let file = self.open_file(name)?;
        let mut bytes = Vec::new();
        file.take(cap).read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    /// `name` as text (lossy), at most `MAX_TEXT` bytes; None when it
    /// cannot be read as above.
    pub fn text(&self, name: &str) -> Option<String> {
        let bytes = self.read(name, MAX_TEXT).ok()?;
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Whether `name` is there (a link counts: it is not followed).
    pub fn has(&self, name: &str) -> bool {
        std::ffi::CString::new(name)
            .is_ok_and(|c| super::output::lstat_at(self.fd.as_raw_fd(), &c).is_some())
    }

    /// The names in the directory, read through the descriptor.
    pub fn names(&self) -> io::Result<Vec<OsString>> {
        Ok(std::fs::read_dir(self.proc_path())?
            .flatten()
            .map(|e| e.file_name())
            .collect())
    }

    /// `name` opened for reading as described at `read`.
    pub fn open_file(&self, name: &str) -> io::Result<File> {
        if name.contains('/') || name == ".." || name == "." {
            return Err(io::Error::other(format!("{name}: not a plain name")));
        }
        let c = std::ffi::CString::new(name)?;
        // SAFETY: openat on our descriptor with a NUL-terminated name.
        let raw = unsafe {
            libc::openat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: raw is a descriptor just opened and owned by nobody else.
        let file = unsafe { File::from_raw_fd(raw) };
        let st = fstat(file.as_raw_fd())?;
        if st.st_mode & libc::S_IFMT != libc::S_IFREG || st.st_nlink != 1 {
            return Err(io::Error::other(format!(
                "{}: not a regular file with one link",
                self.path.join(name).display()
            )));
        }
        Ok(file)
    }
}

/// Most bytes of a job file read as text (status, disk counters, stderr).
pub const MAX_TEXT: u64 = 16 << 20;

fn fstat(fd: RawFd) -> io::Result<libc::stat> {
    // SAFETY: a zeroed stat is a valid out-buffer for fstat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat on an open descriptor.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_read_through_the_descriptor_and_links_refused() {
        let dir = crate::host::test_scratch("held-dir");
        std::fs::write(dir.join("status"), "0\n").expect("write");
        std::fs::write(dir.join("secret"), "root's\n").expect("write");
        std::os::unix::fs::symlink(dir.join("secret"), dir.join("stderr.txt")).expect("link");
        std::fs::hard_link(dir.join("secret"), dir.join("hard")).expect("hard link");
        std::fs::create_dir(dir.join("sub")).expect("mkdir");
        let held = HeldDir::open(&dir).expect("our own directory");
        assert_eq!(held.text("status").as_deref(), Some("0\n"));
        assert!(held.text("stderr.txt").is_none(), "a link was followed");
        assert!(held.text("hard").is_none(), "a second hard link was read");
        assert!(held.text("sub").is_none() && held.text("../x").is_none());
        assert!(held.has("stderr.txt") && !held.has("missing"));
        assert_eq!(held.read("status", 1).expect("capped"), b"0");
        let mut names = held.names().expect("names");
        names.sort();
        assert_eq!(names.len(), 5);

        // The directory renamed and replaced by a link: the held
        // descriptor still reads the directory it opened.
        let moved = dir.with_extension("moved");
        let _ = std::fs::remove_dir_all(&moved);
        std::fs::rename(&dir, &moved).expect("rename");
        let elsewhere = crate::host::test_scratch("held-dir-elsewhere");
        std::fs::write(elsewhere.join("status"), "planted\n").expect("write");
        std::os::unix::fs::symlink(&elsewhere, &dir).expect("link");
        assert_eq!(held.text("status").as_deref(), Some("0\n"));
        let err = HeldDir::open(&dir).expect_err("a link is refused");
        assert!(err.to_string().contains("not a link"), "{err}");
        let _ = std::fs::remove_file(&dir);
        let _ = std::fs::remove_dir_all(&moved);
        let _ = std::fs::remove_dir_all(&elsewhere);
    }
}
