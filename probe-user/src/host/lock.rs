//! Locks that several vmtraces running at once take around the steps
//! they must not interleave: changing or restoring a sysctl, and mounting
//! tracefs to attach (one vmtrace must not unmount it while another
//! reads it). `flock` on files in /run/vmtrace: released when the guard
//! drops, or by the kernel when the process dies.

use std::{os::fd::AsRawFd, path::Path};

/// Where vmtrace keeps its run-time state (a tmpfs).
pub const STATE_DIR: &str = "/run/vmtrace";

/// Holds /run/vmtrace/NAME.lock while alive (the open file is the lock).
pub struct Lock {
    _file: Option<std::fs::File>,
}

impl Lock {
    /// Waits for the lock. Best effort: without the directory (a
    /// read-only /run) there is no lock, and vmtrace goes on.
    pub fn take(name: &str) -> Lock {
        let file = std::fs::create_dir_all(STATE_DIR).and_then(|()| {
            std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(Path::new(STATE_DIR).join(format!("{name}.lock")))
        });
        match file {
            Ok(f) => {
                // SAFETY: flock on a descriptor we own; released on close.
                unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) };
                Lock { _file: Some(f) }
            }
            Err(_) => Lock { _file: None },
        }
    }
}
