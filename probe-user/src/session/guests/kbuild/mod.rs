//! Kernels built from a source tree: `vmtrace kernels --kernel ~/linux
//! --kernel ~/linux:fix.patch` builds a guest-bootable bzImage of the tree,
//! as it is and with the patch, and boots each as it boots images.
//!
//! - `config`: vmtrace's configuration (defconfig, the tree's
//!   kvm_guest.config, then the fragment in `vmtrace-guest.config`), and
//!   the check that every option it asks for survived;
//! - `key`: what decides a build (the tree's content, the patches, the
//!   fragment, the toolchain), as a cache key;
//! - `patch`: patches on a scratch copy, refused naming file and hunk;
//! - `make`: the tools, the copy, make with a progress line and a log.
//!
//! The build never runs as root: `kernels` (root) starts this same binary
//! (`vmtrace build-kernel`, hidden) as sudo's invoker, who compiles into
//! their own cache (`~/.cache/vmtrace/kernels`, or `--build-cache`). The
//! user's tree is only read: it is copied (without .git) into a work area
//! kept per tree, where patches are applied and put back, and make builds
//! out of tree (`O=`) in one build directory per tree, so that the patched
//! kernel reuses the unpatched one's objects and a small patch rebuilds
//! in a minute. Finished images are kept by key, and a second request
//! with the same inputs takes the image without building.

pub mod config;
pub mod key;
pub mod make;
pub mod patch;

use std::{
    io::Write,
    os::unix::{
        fs::{DirBuilderExt, MetadataExt},
        process::CommandExt,
    },
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Instant,
};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::host::privilege::Identity;

/// `--kernel TREE[:PATCH[:PATCH...]]`: a kernel source tree and the
/// patches to apply to it, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeSpec {
    pub tree: PathBuf,
    pub patches: Vec<PathBuf>,
}

impl TreeSpec {
    /// A spec whose first part is a directory (a tree); None for images,
    /// Debian names and `host`.
    pub fn parse(spec: &str) -> Option<TreeSpec> {
        let mut parts = spec.split(':');
        let tree = PathBuf::from(parts.next()?);
        if !tree.is_dir() {
            return None;
        }
        Some(TreeSpec {
            tree,
            patches: parts.filter(|p| !p.is_empty()).map(PathBuf::from).collect(),
        })
    }
}

/// A built kernel, as the build tells the caller (one JSON line).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Built {
    pub image: PathBuf,
    /// The tree and the patches' subjects: how tables name it.
    pub label: String,
    /// `make kernelrelease`: what uname says in the guest.
    pub release: String,
    pub key: String,
    /// Taken from the cache, not built now.
    pub cached: bool,
    /// Seconds the build took (when built now).
    pub seconds: f64,
}

/// How tables name a built kernel: the tree's directory name, then each
/// patch's subject (its file name when it has none).
pub fn label(tree: &Path, patches: &[(PathBuf, String)]) -> String {
    let mut label = tree.file_name().map_or_else(
        || tree.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    for (path, text) in patches {
        let name = patch::subject(text).unwrap_or_else(|| {
            path.file_name().map_or_else(
                || path.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            )
        });
        label.push_str(" + ");
        label.push_str(&name);
    }
    // Tables and mail: printable ASCII only.
    label
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() || c == ' ' {
                c
            } else {
                '?'
            }
        })
        .collect()
}

/// The invoker's default cache: `~/.cache/vmtrace/kernels`.
fn default_cache(who: &Identity) -> Result<PathBuf> {
    match &who.home {
        Some(h) if h.starts_with('/') && h != "/nonexistent" => {
            Ok(Path::new(h).join(".cache/vmtrace/kernels"))
        }
        _ => bail!(
            "{} has no home directory for vmtrace's kernel build cache; give \
             --build-cache DIR (a directory that user owns)",
            who.user
        ),
    }
}

/// Builds (or takes from the cache) the kernel of `spec` as sudo's
/// invoker, by starting this binary's hidden `build-kernel` as that user;
/// its progress goes to stderr as it comes.
pub fn build_as_invoker(exe: &Path, spec: &TreeSpec, cache: Option<&Path>) -> Result<Built> {
    let tree = spec.tree.display();
    let who = Identity::of_sudo_invoker()?.with_context(|| {
        format!(
            "--kernel {tree}: vmtrace builds a kernel tree as the user who ran sudo, \
             never as root (compiling a tree as root hands it the machine); run vmtrace \
             with sudo from your own account, or give the kernel's bzImage"
        )
    })?;
    let cache = match cache {
        Some(c) => c.to_path_buf(),
        None => default_cache(&who)?,
    };
    let mut cmd = Command::new(exe);
    cmd.arg("build-kernel")
        .arg("--cache")
        .arg(&cache)
        .arg(&spec.tree)
        .args(&spec.patches)
        .env_clear()
        .env(
            "PATH",
            "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin",
        )
        .env("USER", &who.user)
        .env("LOGNAME", &who.user)
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    if let Some(h) = &who.home {
        cmd.env("HOME", h);
    }
    if let Some(t) = std::env::var_os("TERM") {
        cmd.env("TERM", t);
    }
    let id = who.clone();
    // SAFETY: become_in_child makes only async-signal-safe system calls on
    // data prepared before the fork.
    unsafe { cmd.pre_exec(move || id.become_in_child()) };
    let out = cmd
        .output()
        .with_context(|| format!("starting the build of {tree} as {}", who.user))?;
    if !out.status.success() {
        // The child said why on stderr (one line, or the build log's tail).
        bail!(
            "--kernel {}: no kernel was built (see above)",
            spec_text(spec)
        );
    }
    let line = String::from_utf8_lossy(&out.stdout);
    let built: Built = serde_json::from_str(line.trim())
        .with_context(|| format!("reading the build's answer for {tree}"))?;
    // The image is the invoker's file: taken only as a regular file that
    // user owns, never through a link.
    let meta = std::fs::symlink_metadata(&built.image)
        .with_context(|| format!("reading {}", built.image.display()))?;
    if !meta.file_type().is_file() || meta.uid() != who.uid {
        bail!(
            "{}: not a regular file owned by {}; remove it and build again",
            built.image.display(),
            who.user
        );
    }
    Ok(built)
}

/// The spec as the user wrote it.
fn spec_text(spec: &TreeSpec) -> String {
    let mut s = spec.tree.display().to_string();
    for p in &spec.patches {
        s.push(':');
        s.push_str(&p.display().to_string());
    }
    s
}

/// The work area's record of what its scratch copy holds.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct WorkState {
    /// `key::tree_id` of the tree the copy was made from.
    tree_id: String,
    /// Files the applied patches touched (put back before the next
    /// build).
    patched: Vec<String>,
    /// Files compiled by the last build from an empty build directory
    /// (the progress line's N/M).
    full_compiles: Option<u32>,
}

/// `vmtrace build-kernel`: runs as the invoking user, builds (or finds)
/// the image, and prints one JSON line (`Built`) on stdout.
pub fn build_command(cache: &Path, tree: &Path, patches: &[PathBuf]) -> Result<i32> {
    let built = build(cache, tree, patches)?;
    let line = serde_json::to_string(&built)?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}").context("writing the build's answer")?;
    Ok(0)
}

/// The cache root: made when missing (0700), refused when it is a link or
/// someone else's.
fn cache_root(cache: &Path) -> Result<PathBuf> {
    if !cache.is_absolute() {
        bail!("--build-cache {}: give an absolute path", cache.display());
    }
    if std::fs::symlink_metadata(cache).is_err() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(cache)
            .with_context(|| format!("creating the build cache {}", cache.display()))?;
    }
    let meta =
        std::fs::symlink_metadata(cache).with_context(|| format!("reading {}", cache.display()))?;
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    if !meta.is_dir() || meta.uid() != me {
        bail!(
            "the build cache {} is not a directory of yours (uid {me}); give --build-cache \
             a directory you own",
            cache.display()
        );
    }
    Ok(cache.to_path_buf())
}

/// The tree, made absolute; refused unless it is the top of a kernel
/// tree.
fn kernel_tree(tree: &Path) -> Result<PathBuf> {
    let top = tree
        .canonicalize()
        .with_context(|| format!("--kernel {}: no such directory", tree.display()))?;
    if !top.join("Makefile").is_file() || !top.join("mm").is_dir() || !top.join("Kconfig").is_file()
    {
        bail!(
            "--kernel {}: not a kernel source tree (no Makefile, Kconfig and mm/); give the \
             top of a Linux tree",
            top.display()
        );
    }
    Ok(top)
}

fn build(cache: &Path, tree: &Path, patch_files: &[PathBuf]) -> Result<Built> {
    let tree = kernel_tree(tree)?;
    make::require_tools()?;
    let cache = cache_root(cache)?;
    let patches = read_patches(patch_files)?;
    let texts: Vec<(PathBuf, String)> = patches
        .iter()
        .map(|(p, b)| (p.clone(), String::from_utf8_lossy(b).into_owned()))
        .collect();
    let label = label(&tree, &texts);
    eprintln!(
        "vmtrace: {label}: reading {} (its content is part of the cache key)",
        tree.display()
    );
    let tree_id = key::tree_id(&tree)?;
    let toolchain = key::toolchain_id()?;
    let patch_bytes: Vec<Vec<u8>> = patches.iter().map(|(_, b)| b.clone()).collect();
    let key = key::key(&key::Inputs {
        tree: &tree_id,
        patches: &patch_bytes,
        fragment: config::FRAGMENT,
        toolchain: &toolchain,
    });
    let images = cache.join("images");
    std::fs::create_dir_all(&images)?;
    let done = images.join(&key);
    if let Some(b) = cached(&done) {
        eprintln!(
            "vmtrace: {label}: reusing the cached build {} (same tree, patches, \
             configuration and compiler)",
            done.display()
        );
        return Ok(b);
    }
    // The work area of this tree: one scratch copy and one build
    // directory, used by one build at a time.
    let work = cache.join("trees").join(work_name(&tree));
    std::fs::create_dir_all(&work)?;
    let _lock = lock(&work.join("lock"))?;
    let partial = images.join(format!("{key}.partial"));
    let _ = std::fs::remove_dir_all(&partial);
    std::fs::create_dir_all(&partial)?;
    let log = partial.join("build.log");
    let t0 = Instant::now();
    let src = work.join("src");
    let build = work.join("build");
    let state_path = work.join("state.json");
    let mut state = scratch_copy(&tree, &tree_id, &work, &texts, &log, &label)?;
    let save = |s: &WorkState| -> Result<()> {
        std::fs::write(&state_path, serde_json::to_vec(s)?)
            .with_context(|| format!("writing {}", state_path.display()))
    };
    configure(&src, &build, &log, &label)?;
    let fresh = !build.join("vmlinux").exists();
    let expected = if fresh { state.full_compiles } else { None };
    let stage = make::make(
        &src,
        &build,
        &["bzImage"],
        &log,
        &label,
        make::Show::Progress(expected),
    )?;
    if fresh {
        state.full_compiles = Some(stage.compiled);
        save(&state)?;
    }
    let release = make::kernelrelease(&src, &build)?;
    std::fs::copy(make::bzimage(&build), partial.join("bzImage"))
        .context("copying the bzImage into the cache")?;
    let seconds = t0.elapsed().as_secs_f64();
    let built = Built {
        image: done.join("bzImage"),
        label: label.clone(),
        release,
        key: key.clone(),
        cached: false,
        seconds,
    };
    let record = BuildRecord {
        built: built.clone(),
        tree: tree.clone(),
        patches: patches.iter().map(|(p, _)| p.clone()).collect(),
        tree_id,
        toolchain,
        compiled: stage.compiled,
    };
    publish(&record, &partial, &done)?;
    Ok(built)
}

/// Each patch file's canonical path and bytes.
fn read_patches(patch_files: &[PathBuf]) -> Result<Vec<(PathBuf, Vec<u8>)>> {
    let mut patches = Vec::new();
    for p in patch_files {
        let bytes = std::fs::read(p)
            .with_context(|| format!("--kernel ...:{}: cannot read the patch", p.display()))?;
        patches.push((p.canonicalize().unwrap_or_else(|_| p.clone()), bytes));
    }
    Ok(patches)
}

/// Writes the record into the partial directory and renames it to its
/// key: a finished image appears whole or not at all.
fn publish(record: &BuildRecord, partial: &Path, done: &Path) -> Result<()> {
    std::fs::write(
        partial.join("build.json"),
        serde_json::to_vec_pretty(record)?,
    )?;
    std::fs::rename(partial, done).with_context(|| format!("renaming {}", partial.display()))?;
    eprintln!(
        "vmtrace: {}: built {} ({:.0} s, {} files compiled; log {})",
        record.built.label,
        record.built.release,
        record.built.seconds,
        record.compiled,
        done.join("build.log").display()
    );
    Ok(())
}

/// The work area's scratch copy made to hold `tree` with `patches`
/// applied: copied anew when the tree changed, else the last patches'
/// files put back; then these patches applied in order.
fn scratch_copy(
    tree: &Path,
    tree_id: &str,
    work: &Path,
    patches: &[(PathBuf, String)],
    log: &Path,
    label: &str,
) -> Result<WorkState> {
    let src = work.join("src");
    let state_path = work.join("state.json");
    let mut state: WorkState = std::fs::read(&state_path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let save = |s: &WorkState| -> Result<()> {
        std::fs::write(&state_path, serde_json::to_vec(s)?)
            .with_context(|| format!("writing {}", state_path.display()))
    };
    if state.tree_id != tree_id || !src.join("Makefile").is_file() {
        if src.exists() {
            std::fs::remove_dir_all(&src).with_context(|| format!("removing {}", src.display()))?;
        }
        eprintln!("vmtrace: {label}: copying the tree into {}", src.display());
        make::copy_tree(tree, &src)?;
        // Files a patch changed last time come back with the tree's older
        // times: touched, so that make rebuilds what was built from them.
        touch(&src, &state.patched);
        if src.join(".config").exists() || src.join("include/config").exists() {
            // An in-tree build's leftovers refuse O= builds.
            make::make(&src, &src, &["mrproper"], log, label, make::Show::Quiet)?;
        }
        state.tree_id = tree_id.to_string();
    } else {
        put_back(tree, &src, &state.patched)?;
    }
    state.patched.clear();
    save(&state)?;
    for (p, text) in patches {
        // Recorded before applying, so that a build stopped half-way
        // still has these files put back next time.
        for f in patch::touched_files(text) {
            if !state.patched.contains(&f) {
                state.patched.push(f);
            }
        }
        save(&state)?;
        patch::apply(&src, p)?;
    }
    Ok(state)
}

/// What a finished image's directory records.
#[derive(Serialize, Deserialize)]
struct BuildRecord {
    built: Built,
    tree: PathBuf,
    patches: Vec<PathBuf>,
    tree_id: String,
    toolchain: String,
    compiled: u32,
}

/// A finished image of this key, when there is one.
fn cached(done: &Path) -> Option<Built> {
    let record: BuildRecord =
        serde_json::from_slice(&std::fs::read(done.join("build.json")).ok()?).ok()?;
    let image = done.join("bzImage");
    image.is_file().then_some(Built {
        image,
        cached: true,
        ..record.built
    })
}

/// A work area's name: the tree's directory name and a hash of its path
/// (two trees of one name do not share objects).
fn work_name(tree: &Path) -> String {
    let name: String = tree
        .file_name()
        .map_or_else(|| "tree".into(), |n| n.to_string_lossy().into_owned())
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let hash = Sha256::digest(tree.as_os_str().as_encoded_bytes());
    let hex: String = hash.iter().take(6).map(|b| format!("{b:02x}")).collect();
    format!("{name}-{hex}")
}

/// An exclusive lock on the work area (waits for another build of the
/// same tree), released when the returned file closes.
fn lock(path: &Path) -> Result<std::fs::File> {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))?;
    // SAFETY: flock on a descriptor we own.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        eprintln!("vmtrace: another build of this tree is running; waiting for it");
        // SAFETY: as above, blocking.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(std::io::Error::last_os_error()).context("locking the work area");
        }
    }
    Ok(f)
}

/// Gives files a new modification time (make rebuilds what depends on
/// them).
fn touch(src: &Path, files: &[String]) {
    let now = std::time::SystemTime::now();
    for f in files.iter().filter(|f| patch::inside_tree(f)) {
        if let Ok(file) = std::fs::File::options().write(true).open(src.join(f)) {
            let _ = file.set_modified(now);
        }
    }
}

/// Puts the files the last patches touched back as the tree has them
/// (written anew, so that make rebuilds them); files the tree lacks (a
/// patch made them) are removed.
fn put_back(tree: &Path, src: &Path, files: &[String]) -> Result<()> {
    for f in files.iter().filter(|f| patch::inside_tree(f)) {
        let (from, to) = (tree.join(f), src.join(f));
        match std::fs::symlink_metadata(&from) {
            Ok(m) if m.is_file() => {
                let _ = std::fs::remove_file(&to);
                std::fs::copy(&from, &to)
                    .with_context(|| format!("putting back {}", to.display()))?;
            }
            _ => {
                let _ = std::fs::remove_file(&to);
            }
        }
    }
    Ok(())
}

/// defconfig, the tree's kvm_guest.config, the fragment merged, then
/// olddefconfig; the .config's time kept when nothing changed (so that
/// nothing is rebuilt for it); every option the fragment asked for and
/// did not get named.
fn configure(src: &Path, build: &Path, log: &Path, label: &str) -> Result<()> {
    std::fs::create_dir_all(build)?;
    eprintln!("vmtrace: building {label}: configuring");
    let dotconfig = build.join(".config");
    let before = std::fs::read(&dotconfig).ok();
    let before_time = std::fs::metadata(&dotconfig)
        .and_then(|m| m.modified())
        .ok();
    make::make(src, build, &["defconfig"], log, label, make::Show::Quiet)?;
    if src.join("kernel/configs/kvm_guest.config").is_file() {
        make::make(
            src,
            build,
            &["kvm_guest.config"],
            log,
            label,
            make::Show::Quiet,
        )?;
    } else {
        eprintln!(
            "vmtrace: {label}: this tree has no kernel/configs/kvm_guest.config; the fragment alone adds the guest's drivers"
        );
    }
    let wants = config::parse(config::FRAGMENT);
    let fragment = build.join("vmtrace.fragment");
    std::fs::write(&fragment, config::merge_input(&wants))?;
    let log_file = std::fs::File::options()
        .append(true)
        .create(true)
        .open(log)?;
    let status = Command::new("sh")
        .arg("scripts/kconfig/merge_config.sh")
        .arg("-m")
        .arg("-O")
        .arg(build)
        .arg(&dotconfig)
        .arg(&fragment)
        .current_dir(src)
        .stdin(Stdio::null())
        .stdout(log_file.try_clone()?)
        .stderr(log_file)
        .status()
        .context("running scripts/kconfig/merge_config.sh")?;
    if !status.success() {
        bail!(
            "merging vmtrace's configuration into {label} failed ({status}); see {}",
            log.display()
        );
    }
    make::make(src, build, &["olddefconfig"], log, label, make::Show::Quiet)?;
    let after = std::fs::read(&dotconfig).context("reading the merged .config")?;
    if before.as_deref() == Some(after.as_slice())
        && let Some(t) = before_time
        && let Ok(f) = std::fs::File::options().write(true).open(&dotconfig)
    {
        let _ = f.set_modified(t);
    }
    let values = config::parse_dotconfig(&String::from_utf8_lossy(&after));
    let missing = config::check(&wants, &values, &config::known_symbols(src));
    for m in &missing {
        let kind = if m.expected() { "notice" } else { "warning" };
        eprintln!("vmtrace: {kind}: {label}: {}", m.describe());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_is_a_tree_only_when_its_first_part_is_a_directory() {
        let dir = std::env::temp_dir();
        let d = dir.display();
        assert_eq!(
            TreeSpec::parse(&format!("{d}:a.patch:b.patch")),
            Some(TreeSpec {
                tree: dir.clone(),
                patches: vec!["a.patch".into(), "b.patch".into()],
            })
        );
        assert_eq!(
            TreeSpec::parse(&d.to_string()).map(|s| s.patches.len()),
            Some(0)
        );
        for not in [
            "debian:6.1",
            "host",
            "/no/such/dir:x.patch",
            "linux-image-6.1.0-57-amd64",
        ] {
            assert_eq!(TreeSpec::parse(not), None, "{not}");
        }
    }

    #[test]
    fn a_label_names_the_tree_and_each_patch() {
        let p = |name: &str, text: &str| (PathBuf::from(name), text.to_string());
        assert_eq!(label(Path::new("/src/linux"), &[]), "linux");
        assert_eq!(
            label(
                Path::new("/src/linux-6.1"),
                &[
                    p("/x/01.patch", "Subject: [PATCH] mm: fix \u{e9}\n\n---\n"),
                    p("/x/02-nosubject.patch", "--- a/x\n+++ b/x\n"),
                ]
            ),
            "linux-6.1 + mm: fix ? + 02-nosubject.patch"
        );
    }

    #[test]
    fn work_areas_differ_by_path() {
        let a = work_name(Path::new("/home/a/linux"));
        let b = work_name(Path::new("/home/b/linux"));
        assert!(a.starts_with("linux-") && b.starts_with("linux-"));
        assert_ne!(a, b);
        assert_eq!(
            work_name(Path::new("/x/we ird")).split('-').next(),
            Some("we_ird")
        );
    }

    /// After a build with a patch, the next build puts its files back:
    /// changed files as the tree has them, with a new time; files the
    /// patch made, removed.
    #[test]
    fn patched_files_are_put_back_with_a_new_time() {
        let dir = std::env::temp_dir().join(format!("vmtrace-putback-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let (tree, src) = (dir.join("tree"), dir.join("src"));
        for d in [&tree, &src] {
            std::fs::create_dir_all(d.join("mm")).expect("mkdir");
        }
        std::fs::write(tree.join("mm/a.c"), "orig\n").expect("write");
        std::fs::write(src.join("mm/a.c"), "patched\n").expect("write");
        std::fs::write(src.join("mm/new.c"), "made\n").expect("write");
        let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
        std::fs::File::options()
            .write(true)
            .open(tree.join("mm/a.c"))
            .and_then(|f| f.set_modified(old))
            .expect("time");
        put_back(
            &tree,
            &src,
            &["mm/a.c".into(), "mm/new.c".into(), "../escape".into()],
        )
        .expect("put back");
        assert_eq!(
            std::fs::read_to_string(src.join("mm/a.c")).expect("read"),
            "orig\n"
        );
        let t = std::fs::metadata(src.join("mm/a.c"))
            .and_then(|m| m.modified())
            .expect("mtime");
        assert!(
            t > old,
            "put back with the tree's old time: make would not rebuild it"
        );
        assert!(!src.join("mm/new.c").exists());
        std::fs::remove_dir_all(&dir).expect("rm");
    }
}
