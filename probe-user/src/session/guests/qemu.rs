//! Booting one guest with QEMU: the kernel, the initramfs, the host root
//! (read-only) and the job directory over 9p, a scratch disk for
//! /var/tmp (swapfiles, the box), the read-only guest image (rootimg)
//! and an optional swap disk; the serial
//! console to a log file; a timeout; optionally several NUMA nodes.

use std::{
    os::unix::fs::OpenOptionsExt,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};

/// QEMU's binary.
const QEMU: &str = "qemu-system-x86_64";

/// The QEMU that boots the guests, found once.
static PROGRAM: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Finds QEMU where `cargo xtask setup` leaves it: on PATH (Debian's
/// qemu-system-x86, when apt could install it without removing a
/// package), else the private copy setup unpacks under $CARGO_HOME
/// (`bin/` links to `vmtrace-qemu/usr/bin/`), taken only if root's alone
/// (`host::root_program`). Missing: one line that says how to get it
/// without `apt-get install`, which on a machine with backports'
/// qemu-utils would remove the user's package.
pub fn find() -> Result<&'static Path> {
    if let Some(p) = PROGRAM.get() {
        return Ok(p);
    }
    let homes = [
        std::env::var_os("CARGO_HOME").map(PathBuf::from),
        std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")),
        Some(PathBuf::from("/root/.cargo")),
    ];
    let candidates: Vec<PathBuf> = homes
        .into_iter()
        .flatten()
        .flat_map(|h| {
            [
                h.join("bin").join(QEMU),
                h.join("vmtrace-qemu/usr/bin").join(QEMU),
            ]
        })
        .collect();
    let found = crate::host::root_program::find(QEMU, &candidates).map_err(|why| {
        anyhow::anyhow!(
            "{QEMU} not found (on PATH or set up under $CARGO_HOME{}): `cargo xtask setup` \
             in vmtrace's tree installs it without removing packages (Debian's \
             qemu-system-x86 when apt can, else a private copy)",
            if why.is_empty() {
                String::new()
            } else {
                format!("; {why}")
            }
        )
    })?;
    Ok(PROGRAM.get_or_init(|| found))
}

/// How a guest ended.
#[derive(Debug, PartialEq)]
pub enum Ended {
    /// It powered off.
    PoweredOff,
    /// Killed after the timeout.
    TimedOut,
    /// QEMU failed (its exit status).
    Failed(i32),
    /// vmtrace was asked to stop (the signal): QEMU killed.
    Interrupted(i32),
}

pub struct Guest<'a> {
    pub image: &'a Path,
    pub initramfs: &'a Path,
    pub job: &'a Path,
    /// A descriptor QEMU inherits, when `job` is its /proc/self/fd path
    /// (`host::held_dir`): QEMU opens the directory vmtrace holds, not
    /// whatever the name points to by then.
    pub job_fd: Option<std::os::fd::RawFd>,
    /// How the job share keeps the guest's file metadata (`security_model`).
    pub job_model: JobShare,
    pub scratch: &'a Path,
    /// The read-only guest image (rootimg), over the host root.
    pub root_image: Option<&'a Path>,
    pub swap: Option<&'a Path>,
    /// The swap disk's bandwidth cap, bytes a second, reads and writes
    /// together (QEMU's `throttling.bps-total`); None: uncapped.
    pub swap_bps: Option<u64>,
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
    let package = if swap { "util-linux" } else { "e2fsprogs" };
    let out = Command::new(crate::host::root_program::system(tool, package)?)
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

/// The job share's 9p security model. With `none` QEMU (root) applies
/// the guest's chmod, chown and mknod to the host's files: a guest job
/// could leave a setuid-root file or a device node in a directory other
/// users reach. The mapped models keep owner, mode, device numbers and
/// link targets in extended attributes (`mapped-xattr`) or in
/// `.virtfs_metadata` files (`mapped-file`, for file systems without user
/// xattrs), and create every host file as QEMU's user with mode 0600
/// (directories 0700): nothing the guest does is setuid, a device or a
/// link on the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobShare {
    MappedXattr,
    MappedFile,
}

impl JobShare {
    pub fn name(self) -> &'static str {
        match self {
            JobShare::MappedXattr => "mapped-xattr",
            JobShare::MappedFile => "mapped-file",
        }
    }

    /// mapped-xattr where `dir`'s file system takes user xattrs (a probe
    /// file set and removed), else mapped-file.
    pub fn for_dir(dir: &Path) -> JobShare {
        let probe = dir.join(".vmtrace-xattr-probe");
        let takes = (|| -> Option<bool> {
            use std::os::fd::AsRawFd;
            let f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(&probe)
                .ok()?;
            // On the descriptor: the name could be swapped for a link.
            // SAFETY: an open descriptor, a C string and a 1-byte value.
            let r = unsafe {
                libc::fsetxattr(
                    f.as_raw_fd(),
                    c"user.vmtrace".as_ptr(),
                    b"1".as_ptr().cast(),
                    1,
                    0,
                )
            };
            Some(r == 0)
        })();
        let _ = std::fs::remove_file(&probe);
        if takes == Some(true) {
            JobShare::MappedXattr
        } else {
            JobShare::MappedFile
        }
    }
}

/// `path` as a value in QEMU's `key=value,...` option syntax: a comma
/// is written twice (QemuOpts), so that a path holding `,path=/` or
/// `,readonly=off` stays one value and adds no option.
pub fn option_value(path: &Path) -> String {
    path.to_string_lossy().replace(',', ",,")
}

impl Guest<'_> {
    pub fn command(&self) -> Command {
        let mut c = Command::new(find().map_or(Path::new(QEMU), |p| p));
        if let Some(fd) = self.job_fd {
            use std::os::unix::process::CommandExt;
            // SAFETY: fcntl is async-signal-safe; it clears close-on-exec
            // on a descriptor this process holds open until QEMU ends.
            unsafe {
                c.pre_exec(move || {
                    if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        c.args(["-nodefaults", "-no-reboot", "-display", "none"]);
        if self.kvm {
            c.args(["-accel", "kvm", "-cpu", "host"]);
        } else {
            // One host thread for every vCPU. Under multi-threaded TCG a
            // 6.12 guest panicked with RIP one byte into a 5-byte NOP
            // in __schedule (0f 1f 44 00 00, a jump label) when a static
            // key was switched on (vmtrace attaching to sched_switch, or
            // turning on delay accounting): text_poke_bp's cross-CPU
            // code patching is not safe in QEMU's MTTCG, at boot (2 s in)
            // and mid-run alike (1 run in 10 of the zones test). With one
            // thread the vCPUs take turns and a patch is seen whole.
            c.args(["-accel", "tcg,thread=single", "-cpu", "max"]);
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
            .arg(self.kernel_cmdline())
            .arg("-serial")
            .arg(format!("file:{}", self.console.display()))
            .arg("-virtfs")
            .arg("local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap")
            .arg("-virtfs")
            .arg(format!(
                "local,path={},mount_tag=job,security_model={}",
                option_value(self.job),
                self.job_model.name()
            ));
        for (disk, readonly) in self.disks() {
            let cap = match self.swap_bps {
                Some(bps) if Some(disk) == self.swap => format!(",throttling.bps-total={bps}"),
                _ => String::new(),
            };
            c.arg("-drive").arg(format!(
                "file={},if=virtio,format=raw,cache=unsafe{}{cap}",
                option_value(disk),
                if readonly { ",readonly=on" } else { "" }
            ));
        }
        c.args(numa_args(self.mem_mib, self.cpus, self.numa_nodes));
        c
    }

    /// The virtio disks in order (vda, vdb, ...) and whether read-only:
    /// the scratch disk, the guest image, the swap disk.
    fn disks(&self) -> Vec<(&Path, bool)> {
        let mut d = vec![(self.scratch, false)];
        d.extend(self.root_image.map(|p| (p, true)));
        d.extend(self.swap.map(|p| (p, false)));
        d
    }

    /// The kernel command line: the console, a panic powers off, PSI on,
    /// and for /init the devices of the guest image and the swap disk.
    pub fn kernel_cmdline(&self) -> String {
        let mut line = "console=ttyS0 panic=-1 rdinit=/init loglevel=4 psi=1".to_string();
        for (i, (disk, _)) in self.disks().iter().enumerate() {
            let dev = format!("/dev/vd{}", char::from(b'a' + i as u8));
            if Some(*disk) == self.root_image {
                line.push_str(&format!(" vmtrace.root={dev}"));
            } else if Some(*disk) == self.swap {
                line.push_str(&format!(" vmtrace.swap={dev}"));
            }
        }
        line
    }

    /// Boots and waits for the guest to power off (or the timeout).
    pub fn run(&self) -> Result<Ended> {
        let mut cmd = self.command();
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().with_context(|| format!("starting {QEMU}"))?;
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
            if let Some(sig) = crate::session::interrupt::take_pending() {
                let _ = child.kill();
                let _ = child.wait();
                return Ok(Ended::Interrupted(sig));
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

/// Whether KVM here runs stock kernels: /dev/kvm opens and the CPU
/// offers hardware virtualization (vmx or svm in /proc/cpuinfo). A host
/// whose /dev/kvm is PVM (a nested cloud machine: `hypervisor`, no vmx)
/// only runs specially patched guests, so a stock kernel gets TCG.
pub fn kvm_runs_stock_kernels() -> bool {
    let opens = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .is_ok();
    opens && cpu_has_virtualization(&crate::host::proc::read_cpuinfo().unwrap_or_default())
}

/// vmx (Intel VT-x) or svm (AMD-V) among the flags of /proc/cpuinfo.
fn cpu_has_virtualization(cpuinfo: &str) -> bool {
    cpuinfo
        .lines()
        .filter(|l| l.starts_with("flags"))
        .flat_map(|l| l.split_whitespace())
        .any(|f| f == "vmx" || f == "svm")
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
    fn a_comma_in_a_path_adds_no_qemu_option() {
        let g = Guest {
            image: Path::new("/k"),
            initramfs: Path::new("/i"),
            job: Path::new("/home/u/out,path=/,readonly=off"),
            job_fd: None,
            job_model: JobShare::MappedXattr,
            scratch: Path::new("/var/tmp/a,b/scratch.img"),
            root_image: None,
            swap: None,
            swap_bps: None,
            mem_mib: 256,
            cpus: 2,
            numa_nodes: 1,
            kvm: false,
            console: PathBuf::from("/c"),
            timeout: Duration::from_secs(1),
        };
        let args: Vec<String> = g
            .command()
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let job = args
            .iter()
            .find(|a| a.contains("mount_tag=job"))
            .expect("job share");
        assert_eq!(
            job,
            "local,path=/home/u/out,,path=/,,readonly=off,mount_tag=job,security_model=mapped-xattr"
        );
        let drive = args.iter().find(|a| a.starts_with("file=")).expect("drive");
        assert!(
            drive.starts_with("file=/var/tmp/a,,b/scratch.img,if=virtio"),
            "{drive}"
        );
    }

    #[test]
    fn kvm_needs_hardware_virtualization() {
        assert!(cpu_has_virtualization("flags\t\t: fpu vme vmx ept\n"));
        assert!(cpu_has_virtualization("flags\t: fpu svm\n"));
        // A PVM host: a hypervisor underneath, no vmx.
        assert!(!cpu_has_virtualization(
            "flags\t\t: fpu hypervisor lahf_lm\n"
        ));
        assert!(!cpu_has_virtualization("vmx flags\t: vmx\n"));
    }

    #[test]
    fn init_finds_the_image_and_the_swap_disk_on_the_command_line() {
        let p = Path::new;
        let mut g = Guest {
            image: p("bzImage"),
            initramfs: p("i"),
            job: p("j"),
            job_fd: None,
            job_model: JobShare::MappedFile,
            scratch: p("scratch.img"),
            root_image: Some(p("root.img")),
            swap: Some(p("swap.img")),
            swap_bps: None,
            mem_mib: 256,
            cpus: 2,
            numa_nodes: 1,
            kvm: false,
            console: "c".into(),
            timeout: Duration::from_secs(1),
        };
        assert!(
            g.kernel_cmdline()
                .ends_with("psi=1 vmtrace.root=/dev/vdb vmtrace.swap=/dev/vdc")
        );
        g.root_image = None;
        assert!(g.kernel_cmdline().ends_with("psi=1 vmtrace.swap=/dev/vdb"));
        let args: Vec<String> = g
            .command()
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert!(args.contains(&"file=swap.img,if=virtio,format=raw,cache=unsafe".to_string()));
        // A capped swap disk: only it is throttled, never the scratch disk.
        g.swap_bps = Some(4 << 20);
        let args: Vec<String> = g
            .command()
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert!(
            args.contains(
                &"file=swap.img,if=virtio,format=raw,cache=unsafe,throttling.bps-total=4194304"
                    .to_string()
            )
        );
        assert_eq!(
            args.iter().filter(|a| a.contains("throttling")).count(),
            1,
            "{args:?}"
        );
    }

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
