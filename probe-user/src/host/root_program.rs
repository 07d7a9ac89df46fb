//! Programs vmtrace runs as root from outside PATH (QEMU as `cargo
//! xtask setup` unpacks it under $CARGO_HOME when apt cannot install it
//! without removing a package): taken only from where nobody but root
//! could have put or replaced them.

use std::{
    os::unix::fs::MetadataExt,
    path::{Path, PathBuf},
};

/// `name` on PATH, else the first of `candidates` that is root's alone:
/// the file (links resolved) and every directory above it owned by root
/// and writable by no one else. Err: why each candidate was passed over.
pub fn find(name: &str, candidates: &[PathBuf]) -> Result<PathBuf, String> {
    if let Some(paths) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&paths) {
            let p = dir.join(name);
            if p.is_file() {
                return Ok(p);
            }
        }
    }
    let mut passed = Vec::new();
    for c in candidates {
        match root_only(c) {
            Ok(real) => return Ok(real),
            Err(why) => passed.push(why),
        }
    }
    Err(passed.join("; "))
}

/// The system directories root's helpers (mkswap, mkfs.ext4, unshare,
/// apt-get, dpkg-deb) are taken from, in order: never from PATH, which
/// sudo's or the caller's environment decides.
pub const SYSTEM_DIRS: [&str; 4] = ["/usr/sbin", "/usr/bin", "/sbin", "/bin"];

/// `name` from the first of `SYSTEM_DIRS` where it is root's alone (see
/// `root_only`); Err: a line that names the package to install.
/// The path returned is the name in that directory, not where its links
/// lead: a program may read its name (`mkfs.ext4` is a link to `mke2fs`,
/// which run under its own name makes ext2).
pub fn system(name: &str, package: &str) -> anyhow::Result<PathBuf> {
    SYSTEM_DIRS
        .iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| {
            root_only(p).is_ok() && p.parent().is_some_and(|d| root_only_dir(d, false).is_ok())
        })
        .ok_or_else(|| {
            anyhow::anyhow!(
                "{name} not found as root's program in {}; install {package} \
                 (apt-get install {package})",
                SYSTEM_DIRS.join(", ")
            )
        })
}

/// Whether `dir` (links resolved) and every directory above it are
/// owned by root and writable by root only (with `sticky`: or a sticky
/// directory above it, like /tmp, where no one else can rename or
/// remove root's entry); else why not.
pub fn root_only_dir(dir: &Path, sticky: bool) -> Result<(), String> {
    let real = std::fs::canonicalize(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for p in real.ancestors() {
        let m = std::fs::metadata(p).map_err(|e| format!("{}: {e}", p.display()))?;
        // A sticky directory above (/tmp) lets no one else rename or
        // remove root's entry in it.
        let sticky_above = sticky && p != real && m.mode() & 0o1000 != 0;
        if m.uid() != 0 || (m.mode() & 0o022 != 0 && !sticky_above) {
            return Err(format!(
                "{} is not root's alone (owner uid {}, mode {:04o})",
                p.display(),
                m.uid(),
                m.mode() & 0o7777
            ));
        }
    }
    Ok(())
}

/// The real path of `path` if it, and every directory above it, is
/// owned by root and writable by root only; else why not.
pub fn root_only(path: &Path) -> Result<PathBuf, String> {
    let real = std::fs::canonicalize(path).map_err(|e| format!("{}: {e}", path.display()))?;
    root_only_dir(&real, false)?;
    if !std::fs::metadata(&real).is_ok_and(|m| m.is_file() && m.mode() & 0o100 != 0) {
        return Err(format!("{} is not an executable file", real.display()));
    }
    Ok(real)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn system_helpers_come_from_system_directories_only() {
        let sh = system("sh", "dash").expect("sh is in /bin or /usr/bin");
        assert!(
            SYSTEM_DIRS
                .iter()
                .any(|d| sh.parent() == Some(Path::new(d)))
        );
        // The name as found, not its link's target: mkfs.ext4 -> mke2fs
        // would make ext2 under the target's name.
        assert_eq!(sh.file_name(), Some(std::ffi::OsStr::new("sh")));
        if let Ok(mkfs) = system("mkfs.ext4", "e2fsprogs") {
            assert_eq!(mkfs.file_name(), Some(std::ffi::OsStr::new("mkfs.ext4")));
        }
        let e = system("vmtrace-no-such-helper", "nothing").expect_err("missing");
        assert!(e.to_string().contains("install nothing"), "{e}");
    }

    #[test]
    fn only_a_program_no_one_but_root_could_replace_is_taken() {
        // The system's shell: root's, in root's directories.
        let sh = root_only(Path::new("/bin/sh")).expect("/bin/sh is root's alone");
        assert!(sh.is_file());
        assert!(find("sh", &[]).is_ok());
        // Under /tmp (mode 1777: anyone may add a name there).
        let dir = std::env::temp_dir().join(format!(
            "vmtrace-root-program-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ));
        std::fs::create_dir(&dir).expect("a fresh directory (mkdir follows no link)");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).expect("chmod");
        let prog = dir.join("prog");
        std::fs::write(&prog, "#!/bin/sh\n").expect("prog");
        std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let e = root_only(&prog).expect_err("under /tmp");
        assert!(e.contains("not root's alone"), "{e}");
        // Its own directory writable by others: named first.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        let e = root_only(&prog).expect_err("world-writable directory");
        assert!(
            e.contains(&dir.display().to_string()) && e.contains("0777"),
            "{e}"
        );
        // Owned by another user: the file itself is named.
        // SAFETY: no arguments.
        if unsafe { libc::geteuid() } == 0 {
            std::os::unix::fs::chown(&prog, Some(65534), None).expect("chown");
            let e = root_only(&prog).expect_err("nobody's");
            assert!(e.contains("uid 65534"), "{e}");
        }
        let e = find("vmtrace-no-such-program", std::slice::from_ref(&prog)).expect_err("none");
        assert!(e.contains("not root's alone"), "{e}");
        let missing = find("vmtrace-no-such-program", &[dir.join("absent")]).expect_err("none");
        assert!(missing.contains("absent"), "{missing}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
