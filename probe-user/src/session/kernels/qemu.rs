//! Booting one guest with QEMU: the kernel, the initramfs, the host root
//! (read-only) and the job directory over 9p, a scratch disk for
//! /var/tmp (swapfiles, the box) and an optional swap disk; the serial
//! console to a log file; a timeout.

use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};

/// How a guest ended.
#[derive(Debug, PartialEq)]
pub enum Ended {
    /// It powered off.
    PoweredOff,
    /// Killed after the timeout.
    TimedOut,
    /// QEMU failed (its exit status).
    Failed(i32),
}

pub struct Guest<'a> {
    pub image: &'a Path,
    pub initramfs: &'a Path,
    pub job: &'a Path,
    pub scratch: &'a Path,
    pub swap: Option<&'a Path>,
    pub mem_mib: u64,
    pub cpus: u32,
    pub kvm: bool,
    pub console: PathBuf,
    pub timeout: Duration,
}

/// Creates a sparse disk image of `bytes` and formats it (ext4 for the
/// scratch disk, swap for the swap disk) on the host.
pub fn make_disk(path: &Path, bytes: u64, swap: bool) -> Result<()> {
    let f = std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    f.set_len(bytes)?;
    drop(f);
    let (tool, args): (&str, &[&str]) = if swap {
        ("mkswap", &["-q"])
    } else {
        (
            "mkfs.ext4",
            &["-q", "-F", "-E", "lazy_itable_init=1,lazy_journal_init=1"],
        )
    };
    let out = Command::new(tool)
        .args(args)
        .arg(path)
        .output()
        .with_context(|| format!("running {tool} (util-linux / e2fsprogs)"))?;
    if !out.status.success() {
        bail!(
            "{tool} {} failed: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

impl Guest<'_> {
    pub fn command(&self) -> Command {
        let mut c = Command::new("qemu-system-x86_64");
        c.args(["-nodefaults", "-no-reboot", "-display", "none"]);
        if self.kvm {
            c.args(["-accel", "kvm", "-cpu", "host"]);
        } else {
            c.args(["-accel", "tcg,thread=multi", "-cpu", "max"]);
        }
        c.arg("-m")
            .arg(format!("{}M", self.mem_mib))
            .arg("-smp")
            .arg(self.cpus.to_string())
            .arg("-kernel")
            .arg(self.image)
            .arg("-initrd")
            .arg(self.initramfs)
            .arg("-append")
            .arg("console=ttyS0 panic=-1 rdinit=/init loglevel=4 psi=1")
            .arg("-serial")
            .arg(format!("file:{}", self.console.display()))
            .arg("-virtfs")
            .arg("local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap")
            .arg("-virtfs")
            .arg(format!(
                "local,path={},mount_tag=job,security_model=none",
                self.job.display()
            ))
            .arg("-drive")
            .arg(format!(
                "file={},if=virtio,format=raw,cache=unsafe",
                self.scratch.display()
            ));
        if let Some(swap) = self.swap {
            c.arg("-drive").arg(format!(
                "file={},if=virtio,format=raw,cache=unsafe",
                swap.display()
            ));
        }
        c
    }

    /// Boots and waits for the guest to power off (or the timeout).
    pub fn run(&self) -> Result<Ended> {
        let mut cmd = self.command();
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .context("starting qemu-system-x86_64 (install qemu-system-x86)")?;
        let started = Instant::now();
        loop {
            if let Some(status) = child.try_wait()? {
                if status.success() {
                    return Ok(Ended::PoweredOff);
                }
                let mut err = String::new();
                if let Some(mut e) = child.stderr.take() {
                    use std::io::Read;
                    let _ = e.read_to_string(&mut err);
                }
                if !err.trim().is_empty() {
                    eprintln!("vmtrace: qemu: {}", err.trim());
                }
                return Ok(Ended::Failed(status.code().unwrap_or(-1)));
            }
            if started.elapsed() > self.timeout {
                let _ = child.kill();
                let _ = child.wait();
                return Ok(Ended::TimedOut);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// The last `n` lines of a console log, without carriage returns.
pub fn console_tail(path: &Path, n: usize) -> Vec<String> {
    let text = std::fs::read(path)
        .map(|b| String::from_utf8_lossy(&b).replace('\r', ""))
        .unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..]
        .iter()
        .map(|l| l.to_string())
        .collect()
}
