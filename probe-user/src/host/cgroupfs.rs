//! Reads of cgroupfs outside the memory box (`membox` owns its own
//! cgroup): whether a directory is a cgroup and of which version, its id
//! and processes, a cgroup's memory pressure, and a walk naming every
//! cgroup of the cgroup2 mount by id.

use std::{collections::HashMap, os::unix::fs::MetadataExt, path::Path};

use crate::model::sample::{Psi, parse_psi};

const CGROUP2_SUPER_MAGIC: i64 = 0x6367_7270;

/// Whether `dir` is a cgroup directory (v1 or v2): it has cgroup.procs.
pub fn is_cgroup(dir: &Path) -> bool {
    dir.join("cgroup.procs").is_file()
}

/// Whether `dir` lies on a cgroup2 file system.
pub fn is_cgroup2(dir: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: statfs fills a struct we own from a valid path.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    (unsafe { libc::statfs(c.as_ptr(), &mut st) } == 0) && st.f_type as i64 == CGROUP2_SUPER_MAGIC
}

/// A cgroup2 directory's id (its inode number).
pub fn cgroup_id(dir: &Path) -> std::io::Result<u64> {
    Ok(std::fs::metadata(dir)?.ino())
}

/// A cgroup2 directory's level in the hierarchy (the mount's root 0):
/// how many of the directories above it lie on cgroup2 too, the level
/// `bpf_get_current_ancestor_cgroup_id` takes. It assumes the mount
/// shows the hierarchy from its root, as a host's /sys/fs/cgroup does
/// (inside a cgroup namespace the levels are the namespace's).
pub fn cgroup_level(dir: &Path) -> std::io::Result<u32> {
    let dir = std::fs::canonicalize(dir)?;
    Ok(dir
        .ancestors()
        .skip(1)
        .take_while(|d| is_cgroup2(d))
        .count() as u32)
}

/// The processes in a cgroup now (cgroup.procs); empty when unreadable.
pub fn cgroup_procs(dir: &Path) -> Vec<u32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Whether a cgroup2 directory or any cgroup below it holds a live
/// process: `populated 1` in its cgroup.events (a slice's own
/// cgroup.procs is empty while its services run). Where cgroup.events
/// cannot be read, its own cgroup.procs decides.
pub fn populated(dir: &Path) -> bool {
    match std::fs::read_to_string(dir.join("cgroup.events")) {
        Ok(events) => events.lines().any(|l| l.trim() == "populated 1"),
        Err(_) => !cgroup_procs(dir).is_empty(),
    }
}

/// The pressure totals of a cgroup2 directory's memory.pressure; None
/// when it has none or it is gone.
pub fn cgroup_psi(dir: &Path) -> Option<Psi> {
    parse_psi(&std::fs::read_to_string(dir.join("memory.pressure")).ok()?)
}

/// Deepest cgroup directory walked.
const MAX_DEPTH: usize = 32;

/// Names every cgroup directory under `dir` (to `MAX_DEPTH`) by its
/// inode, the cgroup id the kernel reports: its path under `root`, `/`
/// for the root itself.
pub fn walk(root: &Path, dir: &Path, names: &mut HashMap<u64, String>, depth: usize) {
    if let Ok(m) = std::fs::metadata(dir) {
        let rel = dir.strip_prefix(root).unwrap_or(dir);
        names.insert(m.ino(), path_name(rel));
    }
    if depth >= MAX_DEPTH {
        return;
    }
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            walk(root, &e.path(), names, depth + 1);
        }
    }
}

/// A cgroup's name from its path under the mount: `/` and the path.
/// Names are bytes; one that is not UTF-8 is written losslessly, and
/// apart from every UTF-8 name: `//` (which no walked path holds: it
/// would be an empty component) and the path with each `\` doubled and
/// each byte outside UTF-8 as `\xNN`. So two cgroups never share a name
/// (a lossy `\u{fffd}` gave two such cgroups one series) and UTF-8
/// names, systemd's `\x2d` escapes included, are unchanged.
pub fn path_name(rel: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let bytes = rel.as_os_str().as_bytes();
    if let Ok(text) = std::str::from_utf8(bytes) {
        return format!("/{text}");
    }
    let mut out = String::from("//");
    for chunk in bytes.utf8_chunks() {
        out.push_str(&chunk.valid().replace('\\', "\\\\"));
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes a `path_name` came from: its inverse.
    fn path_bytes(name: &str) -> Vec<u8> {
        let Some(escaped) = name.strip_prefix("//") else {
            return name.as_bytes()[1..].to_vec();
        };
        let (mut out, mut rest) = (Vec::new(), escaped.as_bytes());
        while let Some((&b, tail)) = rest.split_first() {
            match (b, tail) {
                (b'\\', [b'\\', more @ ..]) => {
                    out.push(b'\\');
                    rest = more;
                }
                (b'\\', [b'x', h, l, more @ ..]) => {
                    let hex = std::str::from_utf8(&[*h, *l]).expect("hex").to_string();
                    out.push(u8::from_str_radix(&hex, 16).expect("hex byte"));
                    rest = more;
                }
                _ => {
                    out.push(b);
                    rest = tail;
                }
            }
        }
        out
    }

    #[test]
    fn names_that_are_not_utf8_stay_apart_and_come_back() {
        use std::os::unix::ffi::OsStrExt;
        let cases: [&[u8]; 7] = [
            b"system.slice/dev-disk-by\\x2duuid.swap",
            b"a/\x80",
            b"a/\x81",
            b"a/\\x80",
            b"a/\\\x80",
            b"caf\xc3\xa9/\xff\xfe",
            b"",
        ];
        let names: Vec<String> = cases
            .iter()
            .map(|c| path_name(Path::new(std::ffi::OsStr::from_bytes(c))))
            .collect();
        assert_eq!(names[0], "/system.slice/dev-disk-by\\x2duuid.swap");
        assert_eq!(names[1], "//a/\\x80");
        assert_eq!(names[3], "/a/\\x80");
        assert_eq!(names[4], "//a/\\\\\\x80");
        assert_eq!(names[6], "/");
        let distinct: std::collections::BTreeSet<&String> = names.iter().collect();
        assert_eq!(distinct.len(), cases.len(), "{names:?}");
        for (c, n) in cases.iter().zip(&names) {
            assert_eq!(path_bytes(n), *c, "{n}");
        }
    }

    #[test]
    fn a_walk_names_cgroups_by_their_inode() {
        let dir = crate::host::test_scratch("walk");
        let sub = dir.join("a").join("b");
        std::fs::create_dir_all(&sub).expect("mkdir");
        let mut names = HashMap::new();
        walk(&dir, &dir, &mut names, 0);
        let ino = cgroup_id(&sub).expect("stat");
        assert_eq!(names.get(&ino).map(String::as_str), Some("/a/b"));
        let root = cgroup_id(&dir).expect("stat");
        assert_eq!(names.get(&root).map(String::as_str), Some("/"));
        // Two directories whose names are not UTF-8: two names.
        use std::os::unix::ffi::OsStrExt;
        for b in [b"\x80", b"\x81"] {
            std::fs::create_dir(dir.join(std::ffi::OsStr::from_bytes(b))).expect("mkdir");
        }
        let mut names = HashMap::new();
        walk(&dir, &dir, &mut names, 0);
        let odd: std::collections::BTreeSet<&str> = names
            .values()
            .map(String::as_str)
            .filter(|n| n.starts_with("//"))
            .collect();
        assert_eq!(odd, ["//\\x80", "//\\x81"].into());
        assert!(!is_cgroup(&dir) && !is_cgroup2(&dir));
        // Nothing above a directory off cgroup2 is on it either.
        assert_eq!(cgroup_level(&sub).expect("level"), 0);
        assert!(cgroup_procs(&dir).is_empty() && cgroup_psi(&dir).is_none());
        assert!(!populated(&dir));
        std::fs::write(dir.join("cgroup.events"), "populated 1\nfrozen 0\n").expect("write");
        assert!(populated(&dir));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
