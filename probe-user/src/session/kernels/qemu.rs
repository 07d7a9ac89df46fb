//! Booting one guest with QEMU: the kernel, the initramfs, the host root
//! (read-only) and the job directory over 9p, a scratch disk for
//! /var/tmp (swapfiles, the box) and an optional swap disk; the serial
//! console to a log file; a timeout; optionally several NUMA nodes.

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
    /// NUMA nodes (1: none given to QEMU).
    pub numa_nodes: u32,
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
        c.args(numa_args(self.mem_mib, self.cpus, self.numa_nodes));
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

/// QEMU's arguments for `nodes` NUMA nodes: one RAM backend per node
/// (QEMU 5.1 and later refuse `-numa node,mem=` on current machine
/// types; Debian bookworm's 7.2 wants `memdev=`), the memory split
/// evenly (the last node takes the remainder, so the sizes add up to
/// -m), the CPUs dealt round-robin. None for one node.
pub fn numa_args(mem_mib: u64, cpus: u32, nodes: u32) -> Vec<String> {
    if nodes <= 1 {
        return Vec::new();
    }
    let each = mem_mib / u64::from(nodes);
    let mut out = Vec::new();
    for n in 0..nodes {
        let size = if n + 1 == nodes {
            mem_mib - each * u64::from(nodes - 1)
        } else {
            each
        };
        out.push("-object".to_string());
        out.push(format!("memory-backend-ram,id=mem{n},size={size}M"));
        let mut node = format!("node,nodeid={n},memdev=mem{n}");
        for cpu in (n..cpus).step_by(nodes as usize) {
            node.push_str(&format!(",cpus={cpu}"));
        }
        out.push("-numa".to_string());
        out.push(node);
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numa_nodes_split_memory_and_cpus() {
        assert!(numa_args(512, 2, 1).is_empty());
        assert_eq!(
            numa_args(513, 3, 2),
            [
                "-object",
                "memory-backend-ram,id=mem0,size=256M",
                "-numa",
                "node,nodeid=0,memdev=mem0,cpus=0,cpus=2",
                "-object",
                "memory-backend-ram,id=mem1,size=257M",
                "-numa",
                "node,nodeid=1,memdev=mem1,cpus=1",
            ]
        );
        // A node without CPUs is a memory-only node.
        assert_eq!(numa_args(512, 1, 2)[7], "node,nodeid=1,memdev=mem1");
    }
}
