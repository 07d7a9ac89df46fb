//! `vmtrace kernels`: the same `vmtrace run` on other kernels, each booted
//! in a QEMU guest with a small memory size (the modern mem=64M), the
//! recordings brought home and compared.
//!
//! - `image`: which kernel (a path, or a Debian package unpacked into a
//!   cache);
//! - `initramfs`: busybox, the guest's modules, /init;
//! - `qemu`: the guest's disks, the command line, the timeout.
//!
//! The guest runs the host's own vmtrace binary (copied into the job
//! directory) inside the host's root, shared read-only over 9p; the job
//! directory (9p, read-write) receives the recording, vmtrace's output and
//! the exit status; the serial console goes to console.log beside them.

pub mod image;
pub mod initramfs;
pub mod qemu;

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::Duration,
};

use anyhow::{Context, Result, bail};

use crate::session::preflight;

#[derive(Clone, Debug)]
pub struct KernelsOptions {
    pub kernels: Vec<String>,
    /// Guest memory.
    pub mem: u64,
    /// A swap disk of this size, active in the guest before the run.
    pub swap: Option<u64>,
    /// The guest's /var/tmp (ext4): room for `run --swap` swapfiles.
    pub disk: u64,
    pub cpus: u32,
    /// NUMA nodes of the guest (1: no NUMA layout given to QEMU).
    pub numa_nodes: u32,
    pub repeat: u32,
    pub timeout: Duration,
    pub kvm: bool,
    pub out: Option<PathBuf>,
    /// `run ...`: what vmtrace runs in each guest.
    pub command: Vec<String>,
}

/// What one kernel gave.
pub struct Outcome {
    pub spec: String,
    pub dir: PathBuf,
    pub recording: Option<PathBuf>,
    pub problem: Option<String>,
}

pub fn kernels(opts: &KernelsOptions) -> Result<i32> {
    preflight::require_root()?;
    check_guest_command(&opts.command)?;
    preflight::require_tools(&[
        ("qemu-system-x86_64", "qemu-system-x86"),
        ("mkfs.ext4", "e2fsprogs"),
        ("mkswap", "util-linux"),
    ])?;
    // Every kernel is resolved (and downloaded) before any boots, so that a
    // typo fails at once.
    let mut resolved = Vec::new();
    for spec in &opts.kernels {
        if spec == "host" {
            resolved.push(None);
        } else {
            resolved.push(Some(image::resolve(spec)?));
        }
    }
    let out = match &opts.out {
        Some(o) => o.clone(),
        None => PathBuf::from(format!(
            "vmtrace-kernels-{}",
            crate::model::recording::utc(std::time::SystemTime::now()).1
        )),
    };
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let exe = std::env::current_exe().context("finding the vmtrace binary")?;
    if !opts.kvm {
        eprintln!(
            "vmtrace: guests run under TCG (emulation, no KVM): their wall times are \
             several times the host's and not comparable with it; their counters are real"
        );
    }
    let mut outcomes = Vec::new();
    for (i, (spec, kernel)) in opts.kernels.iter().zip(&resolved).enumerate() {
        outcomes.push(run_one(&exe, opts, &out, i, spec, kernel.as_ref())?);
    }
    kernels_table(&outcomes, &out);
    compare_kernels(&exe, &outcomes, &out)?;
    eprintln!("vmtrace: everything is in {}", out.display());
    let failed = outcomes.iter().filter(|o| o.recording.is_none()).count();
    Ok(i32::from(failed > 0))
}

/// The guest's command must be `run ...`, and leave -o to `kernels`.
fn check_guest_command(command: &[String]) -> Result<()> {
    if command.first().map(String::as_str) != Some("run") {
        bail!(
            "vmtrace kernels runs `vmtrace run ...` in each guest; give it after --, \
             like: vmtrace kernels --kernel debian:6.1 -- run qsbench"
        );
    }
    if command.iter().any(|a| a == "-o" || a == "--output") {
        bail!(
            "leave -o out of the guest's command: vmtrace kernels names the recordings (see --out)"
        );
    }
    Ok(())
}

/// The `i`th kernel's run, in its own directory under `out`; a failure
/// is its outcome's problem, said on stderr, and the next kernel runs.
fn run_one(
    exe: &Path,
    opts: &KernelsOptions,
    out: &Path,
    i: usize,
    spec: &str,
    kernel: Option<&image::Kernel>,
) -> Result<Outcome> {
    let name = kernel
        .and_then(|k| k.release.clone())
        .unwrap_or_else(|| spec.replace(['/', ':'], "_"));
    let dir = out.join(format!("{}-{name}", i + 1));
    std::fs::create_dir_all(&dir)?;
    let outcome = match kernel {
        None => run_on_host(exe, opts, spec, &dir),
        Some(k) => run_in_guest(exe, opts, k, &dir),
    };
    let outcome = outcome.unwrap_or_else(|e| Outcome {
        spec: spec.to_string(),
        dir: dir.clone(),
        recording: None,
        problem: Some(format!("{e:#}")),
    });
    match (&outcome.recording, &outcome.problem) {
        (Some(r), _) => eprintln!("vmtrace: {spec}: recording {}", r.display()),
        (None, Some(p)) => eprintln!("vmtrace: {spec}: FAILED: {p}"),
        (None, None) => {}
    }
    Ok(outcome)
}

/// The seed mails' table: kernels as rows, the swept values (or one
/// `elapsed s` column) as columns; printed and kept as table.txt.
fn kernels_table(outcomes: &[Outcome], out: &Path) {
    let read: Vec<(String, crate::model::recording::Recording)> = outcomes
        .iter()
        .filter_map(|o| o.recording.as_ref())
        .filter_map(|p| crate::model::recording::Recording::read(p).ok())
        .map(|r| (r.environment.kernel_release.clone(), r))
        .collect();
    if read.is_empty() {
        return;
    }
    let pairs: Vec<(String, &crate::model::recording::Recording)> =
        read.iter().map(|(k, r)| (k.clone(), r)).collect();
    let text = crate::view::report::KernelsTable::of(&pairs).to_text();
    let _ = std::fs::write(out.join("table.txt"), &text);
    println!("{text}");
}

/// `vmtrace compare` of the kernels that gave a recording (two at
/// least), printed and kept as compare.txt.
fn compare_kernels(exe: &Path, outcomes: &[Outcome], out: &Path) -> Result<()> {
    let recordings: Vec<&PathBuf> = outcomes
        .iter()
        .filter_map(|o| o.recording.as_ref())
        .collect();
    if recordings.len() < 2 {
        return Ok(());
    }
    let mut c = Command::new(exe);
    c.arg("compare").arg("--format").arg("text");
    for (i, r) in recordings.iter().enumerate() {
        if i > 0 {
            c.arg("--vs");
        }
        c.arg(r);
    }
    let cmp = c.output().context("running vmtrace compare")?;
    let text = String::from_utf8_lossy(&cmp.stdout).into_owned();
    let _ = std::fs::write(out.join("compare.txt"), &text);
    print!("{text}");
    if !cmp.status.success() {
        eprint!("{}", String::from_utf8_lossy(&cmp.stderr));
    }
    Ok(())
}

/// The host kernel, for reference: the same command run here.
fn run_on_host(exe: &Path, opts: &KernelsOptions, spec: &str, dir: &Path) -> Result<Outcome> {
    let recording = dir.join("run.vmtrace.json");
    let status = Command::new(exe)
        .args(&opts.command[..1])
        .args(["--progress", "none", "--repeat", &opts.repeat.to_string()])
        .arg("-o")
        .arg(&recording)
        .args(&opts.command[1..])
        .stdout(std::fs::File::create(dir.join("stdout.txt"))?)
        .status()
        .context("running vmtrace on the host")?;
    Ok(Outcome {
        spec: spec.into(),
        dir: dir.into(),
        recording: recording.is_file().then_some(recording),
        problem: (!status.success()).then(|| format!("vmtrace run ended with {status}")),
    })
}

/// One kernel booted in a guest: its files made, the guest run to its
/// end, the files removed, and the outcome judged.
fn run_in_guest(
    exe: &Path,
    opts: &KernelsOptions,
    k: &image::Kernel,
    dir: &Path,
) -> Result<Outcome> {
    let release = k.release.clone().unwrap_or_else(|| k.spec.clone());
    eprintln!(
        "vmtrace: booting {release} ({} MiB, {} CPU(s), {} NUMA node(s), {})",
        opts.mem >> 20,
        opts.cpus,
        opts.numa_nodes,
        if opts.kvm { "KVM" } else { "TCG" }
    );
    if k.modules.is_none() {
        eprintln!(
            "vmtrace: notice: no modules directory for {release}: the guest needs virtio, \
             9p and ext4 built in"
        );
    }
    let files = GuestFiles::make(exe, opts, k, dir)?;
    write_guest_job(opts, dir)?;
    let guest = qemu::Guest {
        image: &k.image,
        initramfs: &files.initrd,
        job: dir,
        scratch: &files.scratch,
        swap: files.swap.as_deref(),
        mem_mib: opts.mem >> 20,
        cpus: opts.cpus,
        numa_nodes: opts.numa_nodes,
        kvm: opts.kvm,
        console: dir.join("console.log"),
        timeout: opts.timeout,
    };
    let ended = guest.run()?;
    files.remove();
    let recording = dir.join("run.vmtrace.json");
    let status = std::fs::read_to_string(dir.join("status"))
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok());
    let problem = problem_of(&ended, status, opts.timeout);
    if let Some(p) = &problem {
        tell_problem(&release, p, &guest.console, dir);
    }
    Ok(Outcome {
        spec: k.spec.clone(),
        dir: dir.into(),
        recording: recording.is_file().then_some(recording),
        problem,
    })
}

/// The large files a guest needs, made in its job directory and removed
/// after it (they are rebuilt every time).
struct GuestFiles {
    exe: PathBuf,
    initrd: PathBuf,
    scratch: PathBuf,
    swap: Option<PathBuf>,
}

impl GuestFiles {
    fn make(exe: &Path, opts: &KernelsOptions, k: &image::Kernel, dir: &Path) -> Result<Self> {
        let guest_exe = dir.join("vmtrace");
        std::fs::copy(exe, &guest_exe).context("copying vmtrace into the job directory")?;
        let initrd = dir.join("initramfs.cpio");
        initramfs::build(k.modules.as_deref(), &initrd)?;
        let scratch = dir.join("scratch.img");
        qemu::make_disk(&scratch, opts.disk, false)?;
        let swap = match opts.swap {
            Some(bytes) => {
                let p = dir.join("swap.img");
                qemu::make_disk(&p, bytes, true)?;
                Some(p)
            }
            None => None,
        };
        Ok(GuestFiles {
            exe: guest_exe,
            initrd,
            scratch,
            swap,
        })
    }

    fn remove(&self) {
        for p in [&self.scratch, &self.initrd, &self.exe] {
            let _ = std::fs::remove_file(p);
        }
        if let Some(p) = &self.swap {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// The guest's job: this vmtrace's `run ...` with its output, recording
/// and exit status in the job directory.
fn write_guest_job(opts: &KernelsOptions, dir: &Path) -> Result<()> {
    let mut line = vec![
        format!("{}/vmtrace", initramfs::GUEST_JOB_DIR),
        opts.command[0].clone(),
        "--progress plain".into(),
        format!("--repeat {}", opts.repeat),
        format!("-o {}/run.vmtrace.json", initramfs::GUEST_JOB_DIR),
    ];
    line.extend(opts.command[1..].iter().map(|a| shell_quote(a)));
    let job = [
        format!(
            "{} > {d}/stdout.txt 2> {d}/stderr.txt",
            line.join(" "),
            d = initramfs::GUEST_JOB_DIR
        ),
        format!("echo $? > {}/status", initramfs::GUEST_JOB_DIR),
    ];
    initramfs::write_job_script(dir, &job)
}

/// What went wrong in a guest, from how it ended and the exit status
/// vmtrace left in it; None when nothing did.
fn problem_of(ended: &qemu::Ended, status: Option<i32>, timeout: Duration) -> Option<String> {
    match (ended, status) {
        (qemu::Ended::PoweredOff, Some(0)) => None,
        (qemu::Ended::PoweredOff, Some(s)) => Some(format!("vmtrace in the guest exited with {s}")),
        (qemu::Ended::PoweredOff, None) => {
            Some("the guest powered off before the run ended".into())
        }
        (qemu::Ended::TimedOut, _) => Some(format!(
            "no end after {} s (a hang or a slow guest: --timeout)",
            timeout.as_secs()
        )),
        (qemu::Ended::Failed(c), _) => Some(format!("qemu exited with {c}")),
    }
}

/// A guest's problem, with its last console lines and the last lines
/// vmtrace wrote in it.
fn tell_problem(release: &str, problem: &str, console: &Path, dir: &Path) {
    eprintln!("vmtrace: {release}: {problem}; the guest's last console lines:");
    for l in qemu::console_tail(console, 15) {
        eprintln!("  | {l}");
    }
    let err = std::fs::read_to_string(dir.join("stderr.txt")).unwrap_or_default();
    for l in err
        .lines()
        .rev()
        .take(5)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
    {
        eprintln!("  vmtrace: {l}");
    }
}

/// Single-quotes an argument for the guest's shell.
fn shell_quote(a: &str) -> String {
    if a.chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
    {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_survive_the_guest_shell() {
        assert_eq!(shell_quote("-m"), "-m");
        assert_eq!(shell_quote("350"), "350");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
    }
}
