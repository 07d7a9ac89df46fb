//! The machine vmtrace runs on, without eBPF: /proc readers, the memory
//! box (cgroup and swapfile), swap devices, sysctls, privilege and locks.

pub mod lock;
pub mod membox;
pub mod privilege;
pub mod proc;
pub mod swapdev;
pub mod sysctl;
