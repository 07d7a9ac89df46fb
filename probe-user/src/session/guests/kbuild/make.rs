//! Running the kernel's build: the tools it needs (each missing one named
//! with its Debian package), the scratch copy of the tree, and `make`
//! with its whole output kept in a log and a progress line that moves
//! (configuring, compiling N, linking, BTF, the image), the log's last
//! lines printed when it fails.

use std::{
    fs::File,
    io::{BufRead, BufReader, IsTerminal, Write},
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};

/// Commands a kernel build runs, and the Debian package of each.
const TOOLS: &[(&str, &str)] = &[
    ("make", "make"),
    ("gcc", "gcc"),
    ("flex", "flex"),
    ("bison", "bison"),
    ("bc", "bc"),
    ("pahole", "dwarves"),
    ("perl", "perl"),
    ("tar", "tar"),
    ("patch", "patch"),
];

/// Headers the build compiles against (objtool and resolve_btfids:
/// libelf; the certificate tools: OpenSSL).
const HEADERS: &[(&str, &str)] = &[
    ("/usr/include/libelf.h", "libelf-dev"),
    ("/usr/include/openssl/opensslv.h", "libssl-dev"),
];

/// Every missing tool or header, by Debian package, in one error.
pub fn require_tools() -> Result<()> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let on_path = |cmd: &str| std::env::split_paths(&path).any(|d| d.join(cmd).is_file());
    let mut missing: Vec<&str> = TOOLS
        .iter()
        .filter(|(cmd, _)| !on_path(cmd))
        .map(|&(_, pkg)| pkg)
        .collect();
    missing.extend(
        HEADERS
            .iter()
            .filter(|(f, _)| !Path::new(f).is_file())
            .map(|&(_, pkg)| pkg),
    );
    missing.dedup();
    if !missing.is_empty() {
        bail!(
            "building a kernel needs the Debian package(s) {}: `sudo apt-get install {}` \
             (or `cargo xtask setup --kernel-build` in vmtrace's checkout)",
            missing.join(", "),
            missing.join(" ")
        );
    }
    Ok(())
}

/// Copies `tree` into `dst` (which must not exist) with tar, keeping
/// modification times (make decides what to rebuild by them) and leaving
/// `.git` out.
pub fn copy_tree(tree: &Path, dst: &Path) -> Result<()> {
    std::fs::create_dir_all(dst).with_context(|| format!("creating {}", dst.display()))?;
    let mut pack = Command::new("tar")
        .arg("-C")
        .arg(tree)
        .args(["--exclude=./.git", "-cf", "-", "."])
        .stdout(Stdio::piped())
        .spawn()
        .context("running tar")?;
    let out = pack.stdout.take().context("tar's output")?;
    let unpack = Command::new("tar")
        .arg("-C")
        .arg(dst)
        .args(["--no-same-owner", "-xf", "-"])
        .stdin(out)
        .status()
        .context("running tar")?;
    let packed = pack.wait().context("waiting for tar")?;
    if !packed.success() || !unpack.success() {
        bail!(
            "copying {} to {} failed (tar: {packed}, {unpack}); is the tree readable and \
             is there room?",
            tree.display(),
            dst.display()
        );
    }
    Ok(())
}

/// Where a build stands, from make's short output lines.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stage {
    /// Files compiled (CC, AS) so far.
    pub compiled: u32,
    /// What make does now: configuring, compiling, linking, BTF, image.
    pub phase: &'static str,
    /// The last file compiled.
    pub last: String,
}

impl Stage {
    /// Takes one line of make's output.
    pub fn take(&mut self, line: &str) {
        let mut words = line.split_whitespace();
        let (Some(verb), Some(target)) = (words.next(), words.next()) else {
            return;
        };
        let phase = match verb {
            "CC" | "AS" | "CPP" => {
                self.compiled += 1;
                self.last = target.to_string();
                "compiling"
            }
            "LD" | "AR" | "KSYMS" | "SORTTAB" | "SYSMAP"
                if target.starts_with("vmlinux") || target.starts_with(".tmp_vmlinux") =>
            {
                "linking"
            }
            "BTF" | "BTFIDS" | "PAHOLE" => "BTF",
            "OBJCOPY" | "XZKERN" | "ZSTD22" | "GZIP" | "LZ4" | "RELOCS" | "MKPIGGY"
                if target.starts_with("arch/x86/boot") =>
            {
                "image"
            }
            "HOSTCC" | "HOSTLD" | "SYNC" | "GEN" | "WRAP" | "UPD" | "SYSHDR" | "SYSTBL"
                if self.phase.is_empty() =>
            {
                "preparing"
            }
            _ => return,
        };
        self.phase = phase;
    }

    /// The progress line: `compiling 1234/2400 (mm/vmscan.o)`.
    pub fn line(&self, expected: Option<u32>) -> String {
        match self.phase {
            "compiling" => {
                let of = expected
                    .filter(|e| *e >= self.compiled)
                    .map_or(String::new(), |e| format!("/{e}"));
                format!("compiling {}{of} ({})", self.compiled, self.last)
            }
            "" => "starting".into(),
            p => format!("{p} ({} files compiled)", self.compiled),
        }
    }
}

/// How much `make` says while it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Show {
    /// Nothing (a short step: configuring).
    Quiet,
    /// The progress line, with the files a full build compiles when
    /// known (N/M).
    Progress(Option<u32>),
}

/// One `make` in `src` with `O=build`, its output appended to `log`, a
/// progress line on stderr (rewritten on a terminal, every 15 s and at
/// each phase otherwise). On failure: the log's last lines and its path.
pub fn make(
    src: &Path,
    build: &Path,
    targets: &[&str],
    log: &Path,
    label: &str,
    show: Show,
) -> Result<Stage> {
    let (shown_at_all, expected) = match show {
        Show::Quiet => (false, None),
        Show::Progress(e) => (true, e),
    };
    let mut log_file = File::options()
        .create(true)
        .append(true)
        .open(log)
        .with_context(|| format!("opening {}", log.display()))?;
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (reader, writer) = std::io::pipe().context("a pipe for make's output")?;
    let mut cmd = Command::new("make");
    cmd.arg("-C")
        .arg(src)
        .arg(format!("O={}", build.display()))
        .arg(format!("-j{jobs}"))
        .args(targets)
        .stdin(Stdio::null())
        .stdout(writer.try_clone().context("a pipe for make's output")?)
        .stderr(writer);
    let _ = writeln!(
        log_file,
        "$ make -C {} O={} -j{jobs} {}",
        src.display(),
        build.display(),
        targets.join(" ")
    );
    let mut child = cmd.spawn().context("running make")?;
    // The command holds the pipe's write ends: dropped, so that the
    // reader ends when make does.
    drop(cmd);
    let tty = shown_at_all && std::io::stderr().is_terminal();
    let mut stage = Stage::default();
    let mut shown = (String::new(), Instant::now());
    for line in BufReader::new(reader).split(b'\n') {
        let Ok(line) = line else { break };
        let _ = log_file.write_all(&line);
        let _ = log_file.write_all(b"\n");
        let phase = stage.phase;
        stage.take(&String::from_utf8_lossy(&line));
        let now = stage.line(expected);
        if tty {
            if shown.1.elapsed() > Duration::from_millis(200) {
                eprint!("\r\x1b[Kvmtrace: building {label}: {now}");
                shown.1 = Instant::now();
            }
        } else if shown_at_all
            && (stage.phase != phase || shown.1.elapsed() > Duration::from_secs(15))
            && now != shown.0
        {
            eprintln!("vmtrace: building {label}: {now}");
            shown = (now, Instant::now());
        }
    }
    let status = child.wait().context("waiting for make")?;
    if tty {
        eprint!("\r\x1b[K");
    }
    if !status.success() {
        let tail = last_lines(log, 20);
        eprintln!("vmtrace: the build of {label} failed ({status}); the log's last lines:");
        for l in &tail {
            eprintln!("  | {l}");
        }
        bail!(
            "building {label} failed: make {} ended with {status}; the whole log is {}",
            targets.join(" "),
            log.display()
        );
    }
    Ok(stage)
}

/// `make -s kernelrelease` (what `uname -r` will say in the guest).
pub fn kernelrelease(src: &Path, build: &Path) -> Result<String> {
    let out = Command::new("make")
        .arg("-C")
        .arg(src)
        .arg(format!("O={}", build.display()))
        .args(["-s", "kernelrelease"])
        .stdin(Stdio::null())
        .output()
        .context("running make kernelrelease")?;
    let release = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || release.is_empty() || release.contains(char::is_whitespace) {
        bail!(
            "make kernelrelease failed in {}: {}",
            build.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(release)
}

/// The last `n` lines of a file.
pub fn last_lines(path: &Path, n: usize) -> Vec<String> {
    let text = std::fs::read(path).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..]
        .iter()
        .map(|l| l.to_string())
        .collect()
}

/// The image make leaves for x86.
pub fn bzimage(build: &Path) -> PathBuf {
    build.join("arch/x86/boot/bzImage")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stage_follows_makes_lines() {
        let mut s = Stage::default();
        assert_eq!(s.line(None), "starting");
        s.take("  HOSTCC  scripts/basic/fixdep");
        assert_eq!(s.phase, "preparing");
        s.take("  CC      init/main.o");
        s.take("  AS      arch/x86/entry/entry_64.o");
        s.take("  CC      mm/vmscan.o");
        assert_eq!(s.compiled, 3);
        assert_eq!(s.line(Some(2400)), "compiling 3/2400 (mm/vmscan.o)");
        // An expectation already passed is not shown.
        assert_eq!(s.line(Some(2)), "compiling 3 (mm/vmscan.o)");
        s.take("  AR      mm/built-in.a");
        assert_eq!(s.phase, "compiling");
        s.take("  LD      vmlinux.o");
        assert_eq!(s.phase, "linking");
        s.take("  BTF     .btf.vmlinux.bin.o");
        assert_eq!(s.phase, "BTF");
        s.take("  OBJCOPY arch/x86/boot/compressed/vmlinux.bin");
        assert_eq!(s.phase, "image");
        assert_eq!(s.line(None), "image (3 files compiled)");
        s.take("make[1]: Leaving directory '/x'");
        s.take("");
        assert_eq!(s.compiled, 3);
    }

    #[test]
    fn a_tree_copy_keeps_times_and_leaves_git_out() {
        let dir = std::env::temp_dir().join(format!("vmtrace-copy-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let tree = dir.join("tree");
        std::fs::create_dir_all(tree.join("mm")).expect("mkdir");
        std::fs::create_dir_all(tree.join(".git")).expect("mkdir");
        std::fs::write(tree.join("mm/vmscan.c"), "int a;\n").expect("write");
        std::fs::write(tree.join(".git/HEAD"), "x").expect("write");
        let old = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        File::options()
            .write(true)
            .open(tree.join("mm/vmscan.c"))
            .and_then(|f| f.set_modified(old))
            .expect("set time");
        copy_tree(&tree, &dir.join("copy")).expect("copy");
        let copied = dir.join("copy/mm/vmscan.c");
        assert_eq!(std::fs::read_to_string(&copied).expect("read"), "int a;\n");
        assert_eq!(
            std::fs::metadata(&copied)
                .and_then(|m| m.modified())
                .expect("mtime"),
            old
        );
        assert!(!dir.join("copy/.git").exists());
        std::fs::remove_dir_all(&dir).expect("rm");
    }
}
