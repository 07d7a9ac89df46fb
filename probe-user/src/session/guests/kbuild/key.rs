//! What decides a built kernel, as a cache key: the tree's content (a
//! git tree: its HEAD and a hash of what is not committed; otherwise a
//! hash of every file), the patches' bytes in order, the configuration
//! fragment, and the toolchain (compiler, linker, pahole). The same
//! inputs give the same key; any change gives another.

use std::{
    io::Read,
    os::unix::ffi::OsStrExt,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};

/// Bumped when what a key covers changes (so old images are not taken
/// for new ones).
const KEY_VERSION: &str = "vmtrace-kbuild-1";

/// The inputs of one build.
#[derive(Clone, Debug)]
pub struct Inputs<'a> {
    /// `tree_id` of the source tree.
    pub tree: &'a str,
    /// Each patch's bytes, in the order applied.
    pub patches: &'a [Vec<u8>],
    /// The configuration fragment's text.
    pub fragment: &'a str,
    /// `toolchain_id()`.
    pub toolchain: &'a str,
}

/// The cache key of a build: 24 hex digits of a SHA-256 over every input,
/// each length-prefixed so that no two input lists hash alike.
pub fn key(inputs: &Inputs) -> String {
    let mut h = Sha256::new();
    let mut field = |tag: &str, bytes: &[u8]| {
        h.update(tag.as_bytes());
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    field("version", KEY_VERSION.as_bytes());
    field("tree", inputs.tree.as_bytes());
    field("patches", &(inputs.patches.len() as u64).to_le_bytes());
    for p in inputs.patches {
        field("patch", p);
    }
    field("fragment", inputs.fragment.as_bytes());
    field("toolchain", inputs.toolchain.as_bytes());
    hex(&h.finalize())[..24].to_string()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The tree's content, as a string: `git:HEAD:<hash of the uncommitted
/// diff and untracked files>` for a git work tree, `files:<hash of every
/// file>` otherwise. Read-only: nothing in the tree is written.
pub fn tree_id(tree: &Path) -> Result<String> {
    if tree.join(".git").exists()
        && let Some(id) = git_id(tree)?
    {
        return Ok(id);
    }
    Ok(format!("files:{}", files_hash(tree)?))
}

/// HEAD plus a hash of `git diff HEAD` and of the untracked files (not
/// ignored ones): None when git cannot read the tree.
fn git_id(tree: &Path) -> Result<Option<String>> {
    let git = |args: &[&str]| -> Result<Option<Vec<u8>>> {
        let out = Command::new("git")
            .arg("-C")
            .arg(tree)
            .args(args)
            .output()
            .context("running git (Debian package: git)")?;
        Ok(out.status.success().then_some(out.stdout))
    };
    let Some(head) = git(&["rev-parse", "HEAD"])? else {
        return Ok(None);
    };
    let head = String::from_utf8_lossy(&head).trim().to_string();
    let mut h = Sha256::new();
    let Some(diff) = git(&["diff", "HEAD", "--binary", "--no-ext-diff", "--no-color"])? else {
        return Ok(None);
    };
    h.update(&diff);
    let Some(others) = git(&["ls-files", "--others", "--exclude-standard", "-z"])? else {
        return Ok(None);
    };
    for name in others.split(|b| *b == 0).filter(|n| !n.is_empty()) {
        h.update(name);
        h.update([0]);
        let path = tree.join(std::ffi::OsStr::from_bytes(name));
        hash_file(&mut h, &path)?;
    }
    Ok(Some(format!("git:{head}:{}", &hex(&h.finalize())[..16])))
}

/// A hash of every file's path, kind and content below `tree` (symlinks
/// by their target, `.git` left out), in sorted order.
fn files_hash(tree: &Path) -> Result<String> {
    let mut h = Sha256::new();
    let mut files: Vec<PathBuf> = Vec::new();
    let mut stack = vec![tree.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries =
            std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))?;
        for e in entries {
            let e = e.with_context(|| format!("reading {}", dir.display()))?;
            let kind = e.file_type()?;
            if kind.is_dir() {
                if e.file_name() != ".git" {
                    stack.push(e.path());
                }
            } else {
                files.push(e.path());
            }
        }
    }
    files.sort();
    for f in &files {
        let rel = f.strip_prefix(tree).unwrap_or(f);
        h.update(rel.as_os_str().as_encoded_bytes());
        h.update([0]);
        let meta = std::fs::symlink_metadata(f)?;
        if meta.file_type().is_symlink() {
            h.update(b"link");
            h.update(std::fs::read_link(f)?.as_os_str().as_encoded_bytes());
        } else if meta.is_file() {
            use std::os::unix::fs::PermissionsExt;
            h.update(if meta.permissions().mode() & 0o111 != 0 {
                b"x"
            } else {
                b"-"
            });
            hash_file(&mut h, f)?;
        }
    }
    Ok(hex(&h.finalize())[..16].to_string())
}

fn hash_file(h: &mut Sha256, path: &Path) -> Result<()> {
    let Ok(mut f) = std::fs::File::open(path) else {
        // Vanished or unreadable: its name is hashed, its content is not.
        h.update(b"unreadable");
        return Ok(());
    };
    let mut buf = vec![0u8; 1 << 16];
    let mut len = 0u64;
    loop {
        let n = f
            .read(&mut buf)
            .with_context(|| format!("reading {}", path.display()))?;
        if n == 0 {
            break;
        }
        len += n as u64;
        h.update(&buf[..n]);
    }
    h.update(len.to_le_bytes());
    Ok(())
}

/// The toolchain that decides the objects: the first line of
/// `gcc --version`, `ld --version` and `pahole --version`, and the
/// machine.
pub fn toolchain_id() -> Result<String> {
    let mut parts = Vec::new();
    for (tool, package) in [("gcc", "gcc"), ("ld", "binutils"), ("pahole", "dwarves")] {
        let out = Command::new(tool).arg("--version").output();
        let Ok(out) = out.as_ref().map(|o| &o.stdout) else {
            bail!("{tool} not found: building a kernel needs it (Debian package: {package})");
        };
        let first = String::from_utf8_lossy(out)
            .lines()
            .next()
            .unwrap_or("")
            .trim()
            .to_string();
        parts.push(format!("{tool}={first}"));
    }
    parts.push(format!("arch={}", std::env::consts::ARCH));
    Ok(parts.join(";"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(tree: &str, patches: &[&str], fragment: &str, toolchain: &str) -> String {
        let patches: Vec<Vec<u8>> = patches.iter().map(|p| p.as_bytes().to_vec()).collect();
        key(&Inputs {
            tree,
            patches: &patches,
            fragment,
            toolchain,
        })
    }

    #[test]
    fn same_inputs_same_key_any_change_another() {
        let base = k("git:abc:0", &["p1"], "CONFIG_A=y", "gcc 12");
        assert_eq!(base, k("git:abc:0", &["p1"], "CONFIG_A=y", "gcc 12"));
        assert_eq!(base.len(), 24);
        let others = [
            k("git:abd:0", &["p1"], "CONFIG_A=y", "gcc 12"),
            k("git:abc:0", &["p2"], "CONFIG_A=y", "gcc 12"),
            k("git:abc:0", &[], "CONFIG_A=y", "gcc 12"),
            k("git:abc:0", &["p1", "p1"], "CONFIG_A=y", "gcc 12"),
            k("git:abc:0", &["p1"], "CONFIG_A=n", "gcc 12"),
            k("git:abc:0", &["p1"], "CONFIG_A=y", "gcc 13"),
            // Boundaries between inputs count: "p1"+"p2" is not "p1p2".
            k("git:abc:0", &["p1p2"], "CONFIG_A=y", "gcc 12"),
        ];
        for (i, o) in others.iter().enumerate() {
            assert_ne!(&base, o, "change {i} kept the key");
        }
        assert_ne!(k("t", &["p1", "p2"], "f", "c"), k("t", &["p1p2"], "f", "c"));
    }

    /// A plain tree: its id changes with a file's content, a new file, a
    /// renamed file and an executable bit, and not with a rewrite of the
    /// same bytes or anything under .git.
    #[test]
    fn a_plain_trees_id_follows_its_content() {
        let dir = std::env::temp_dir().join(format!("vmtrace-treeid-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("mm")).expect("mkdir");
        std::fs::write(dir.join("mm/vmscan.c"), "int a;\n").expect("write");
        std::fs::write(dir.join("Makefile"), "all:\n").expect("write");
        let first = files_hash(&dir).expect("hash");
        std::fs::write(dir.join("mm/vmscan.c"), "int a;\n").expect("rewrite");
        assert_eq!(first, files_hash(&dir).expect("hash"));
        std::fs::create_dir_all(dir.join(".git")).expect("mkdir");
        std::fs::write(dir.join(".git/HEAD"), "x").expect("write");
        assert_eq!(first, files_hash(&dir).expect("hash"));
        std::fs::write(dir.join("mm/vmscan.c"), "int b;\n").expect("write");
        let changed = files_hash(&dir).expect("hash");
        assert_ne!(first, changed);
        std::fs::rename(dir.join("mm/vmscan.c"), dir.join("mm/vmscan2.c")).expect("mv");
        assert_ne!(changed, files_hash(&dir).expect("hash"));
        std::fs::rename(dir.join("mm/vmscan2.c"), dir.join("mm/vmscan.c")).expect("mv");
        assert_eq!(changed, files_hash(&dir).expect("hash"));
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.join("Makefile"), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        assert_ne!(changed, files_hash(&dir).expect("hash"));
        std::fs::remove_dir_all(&dir).expect("rm");
    }

    /// A git tree: HEAD, plus what is not committed (a changed file, a
    /// new untracked one), and nothing for an ignored file.
    #[test]
    fn a_git_trees_id_is_head_plus_its_uncommitted_changes() {
        let dir = std::env::temp_dir().join(format!("vmtrace-gitid-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("mkdir");
        let git = |args: &[&str]| {
            let ok = Command::new("git")
                .arg("-C")
                .arg(&dir)
                .args([
                    "-c",
                    "user.name=t",
                    "-c",
                    "user.email=t@t",
                    "-c",
                    "commit.gpgsign=false",
                ])
                .args(args)
                .output()
                .expect("git")
                .status
                .success();
            assert!(ok, "git {args:?}");
        };
        git(&["init", "-q"]);
        std::fs::write(dir.join("a.c"), "int a;\n").expect("write");
        std::fs::write(dir.join(".gitignore"), "*.o\n").expect("write");
        git(&["add", "."]);
        git(&["commit", "-q", "-m", "one"]);
        let clean = tree_id(&dir).expect("id");
        assert!(clean.starts_with("git:"), "{clean}");
        std::fs::write(dir.join("a.o"), "object").expect("write");
        assert_eq!(
            clean,
            tree_id(&dir).expect("id"),
            "an ignored file changed the id"
        );
        std::fs::write(dir.join("a.c"), "int b;\n").expect("write");
        let dirty = tree_id(&dir).expect("id");
        assert_ne!(clean, dirty);
        assert_eq!(
            clean.split(':').nth(1),
            dirty.split(':').nth(1),
            "same HEAD"
        );
        std::fs::write(dir.join("new.c"), "int n;\n").expect("write");
        let untracked = tree_id(&dir).expect("id");
        assert_ne!(dirty, untracked);
        git(&["add", "."]);
        git(&["commit", "-q", "-m", "two"]);
        let committed = tree_id(&dir).expect("id");
        assert_ne!(committed.split(':').nth(1), clean.split(':').nth(1));
        std::fs::remove_dir_all(&dir).expect("rm");
    }
}
