//! The machine vmtrace runs on, without eBPF: every read of /proc, /sys
//! and cgroupfs (the recording's environment, /proc readers), the memory
//! box (cgroup and swapfile), swap devices, sysctls, privilege, locks and
//! the recording file on disk.

pub mod cgroupfs;
pub mod environment;
pub mod lock;
pub mod membox;
pub mod privilege;
pub mod proc;
pub mod recording_file;
pub mod swapdev;
pub mod sysctl;
