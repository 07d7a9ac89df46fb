//! The machine vmtrace runs on, without eBPF: every read of /proc, /sys
//! and cgroupfs (the recording's environment, /proc readers), the memory
//! box (cgroup and swapfile), swap devices, sysctls, privilege, locks,
//! the recording file on disk and every file vmtrace writes for the user
//! (`output`: as sudo's invoker, never through a planted link).

pub mod cgroupfs;
pub mod environment;
pub mod held_dir;
pub mod lock;
pub mod membox;
pub mod output;
pub mod private_dir;
pub mod privilege;
pub mod privsep;
pub mod proc;
pub mod prometheus_api;
pub mod recording_file;
pub mod root_program;
pub mod stdout;
pub mod swapdev;
pub mod swapfile;
pub mod sysctl;

/// A fresh scratch directory for a unit test, under the build's own
/// `target/` rather than the world-writable /tmp, where another local
/// user could plant a link at a predictable name before a root test
/// writes through it.
#[cfg(test)]
pub(crate) fn test_scratch(name: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target/unit-scratch")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory under target/");
    dir
}

/// The corpus recording the unit tests build on (two runs of memhog on
/// 6.18, a v1 box): its path.
#[cfg(test)]
pub(crate) fn corpus_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus/recording/memhog-2runs.vmtrace.json")
}

/// The corpus recording, read.
#[cfg(test)]
pub(crate) fn corpus_recording() -> crate::model::recording::Recording {
    crate::host::recording_file::read(&corpus_path()).expect("corpus recording")
}
