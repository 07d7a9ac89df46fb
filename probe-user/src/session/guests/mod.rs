//! `vmtrace kernels`: the same `vmtrace run` on other kernels, each booted
//! in a QEMU guest with a small memory size (the modern mem=64M), the
//! recordings brought home and compared.
//!
//! - `image`: which kernel (a path, or a Debian package unpacked into a
//!   cache);
//! - `initramfs`: busybox, the guest's modules, /init;
//! - `rootimg`: the job's files on a block device, one image for all;
//! - `qemu`: the guest's disks, the command line, the timeout.
//!
//! The guest runs the host's own vmtrace binary from the guest image (a
//! read-only ext4 disk of the host's tools, over the host root shared
//! read-only over 9p; `--storage 9p`: the host root alone, vmtrace copied
//! into the job directory); the job directory (9p, read-write) receives
//! the recording, vmtrace's output and the exit status; the serial
//! console goes to console.log beside them.

mod files;
pub mod image;
pub mod initramfs;
pub mod kbuild;
pub mod qemu;
pub mod rootimg;

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::Duration,
};

use anyhow::{Context, Result, bail, ensure};

use crate::{
    analysis::{GroupInput, sweep},
    host::{held_dir::HeldDir, private_dir::PrivateDir},
    model::{recording::Recording, report::signal_name},
    session::preflight,
    view::compare::columns,
};

/// Where the guest's files come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Storage {
    /// The job's tools on a read-only block-device image (rootimg), the
    /// same for every kernel; the host root over 9p under it.
    Image,
    /// The host root over 9p only (every file read through 9p).
    NineP,
}

/// Which QEMU accelerator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accel {
    /// KVM where it runs stock kernels (`qemu::kvm_runs_stock_kernels`),
    /// else TCG.
    Auto,
    Kvm,
    Tcg,
}

#[derive(Clone, Debug)]
pub struct KernelsOptions {
    pub kernels: Vec<String>,
    /// Guest memory sizes: each kernel is booted once per size.
    pub mem: Vec<u64>,
    /// A swap disk of this size, active in the guest before the run.
    pub swap: Option<u64>,
    /// The swap disk's bandwidth, bytes a second (None: uncapped).
    pub swap_rate: Option<u64>,
    /// The guest's /var/tmp (ext4): room for `run --swap` swapfiles.
    pub disk: u64,
    pub cpus: u32,
    /// NUMA nodes of the guest (1: no NUMA layout given to QEMU).
    pub numa_nodes: u32,
    pub repeat: u32,
    pub timeout: Duration,
    pub accel: Accel,
    pub storage: Storage,
    pub out: Option<PathBuf>,
    /// Where kernels built from trees are kept (None: the invoker's
    /// ~/.cache/vmtrace/kernels).
    pub build_cache: Option<PathBuf>,
    /// `run ...`: what vmtrace runs in each guest.
    pub command: Vec<String>,
}

/// What one kernel gave.
pub struct Outcome {
    pub spec: String,
    /// The kernel's name in tables when its release does not tell it
    /// (a tree and its patches).
    pub label: Option<String>,
    /// The guest memory (None: the host).
    pub mem: Option<u64>,
    pub dir: PathBuf,
    pub recording: Option<PathBuf>,
    pub problem: Option<String>,
}

pub fn kernels(opts: &KernelsOptions) -> Result<i32> {
    preflight::require_root()?;
    check_guest_command(&opts.command)?;
    let mut unboxed = opts.clone();
    unboxed.command = guest_memory_is_the_pressure(&opts.command);
    let opts = &unboxed;
    qemu::find()?;
    preflight::require_tools(&[("mkfs.ext4", "e2fsprogs"), ("mkswap", "util-linux")])?;
    if opts.storage == Storage::Image {
        preflight::require_tools(&[("unshare", "util-linux")])?;
    }
    // Every kernel is resolved (downloaded, built) before any boots, so
    // that a typo or a patch that does not apply fails at once.
    let exe = std::env::current_exe().context("finding the vmtrace binary")?;
    let resolved = image::resolve_all(&opts.kernels, &exe, opts.build_cache.as_deref())?;
    let out = match &opts.out {
        Some(o) => o.clone(),
        None => PathBuf::from(format!(
            "vmtrace-kernels-{}",
            crate::model::recording::utc(std::time::SystemTime::now()).1
        )),
    };
    crate::host::output::own_dir(&out).with_context(|| format!("--out {}", out.display()))?;
    let kvm = match opts.accel {
        Accel::Kvm => true,
        Accel::Tcg => false,
        Accel::Auto => qemu::kvm_runs_stock_kernels(),
    };
    if !kvm {
        eprintln!(
            "vmtrace: guests run under TCG (emulation, no KVM): their wall times are \
             several times the host's and not comparable with it; their counters are real"
        );
    }
    // The guests' disks and initramfs: in root's own 0700 directory, not
    // in the output directory, where another user could plant a link or
    // read a copy of the host's files.
    let private = PrivateDir::create("kernels")?;
    let root_image = root_image(opts, &resolved, &exe, &private)?;
    let guest = GuestSetup {
        kvm,
        root_image: root_image.as_ref(),
        private: &private,
    };
    let mut outcomes = Vec::new();
    let (mut i, mut stop) = (0, false);
    for (spec, kernel) in opts.kernels.iter().zip(&resolved) {
        // The host has no guest memory: it runs once.
        let mems: Vec<Option<u64>> = match kernel {
            None => vec![None],
            Some(_) => opts.mem.iter().copied().map(Some).collect(),
        };
        for mem in mems {
            stop = stop || stopped(&outcomes);
            if stop {
                break;
            }
            i += 1;
            outcomes.push(run_one(
                &exe,
                opts,
                &guest,
                &out,
                i,
                spec,
                kernel.as_ref(),
                mem,
            )?);
        }
    }
    drop(root_image);
    if stop || stopped(&outcomes) {
        eprintln!(
            "vmtrace: stopped; what was measured is in {}",
            out.display()
        );
        return Ok(130);
    }
    let merged = merged_by_kernel(&outcomes, opts.mem.len() > 1);
    kernels_table(&merged, &outcomes, &out);
    compare_kernels(&merged, &out);
    eprintln!("vmtrace: everything is in {}", out.display());
    every_guest_ran(&outcomes)?;
    Ok(0)
}

/// A guest that did not boot or bring its recording home is vmtrace's
/// failure (an error, exit 125: cli/exit.rs), not the command's.
fn every_guest_ran(outcomes: &[Outcome]) -> Result<()> {
    let failed = outcomes.iter().filter(|o| o.recording.is_none()).count();
    ensure!(
        failed == 0,
        "{failed} of {} guests failed (see above)",
        outcomes.len()
    );
    Ok(())
}

/// Whether vmtrace was stopped (a guest interrupted, or a signal that
/// came while the host ran): no more guests boot.
fn stopped(outcomes: &[Outcome]) -> bool {
    outcomes.iter().any(|o| {
        o.problem
            .as_deref()
            .is_some_and(|p| p.starts_with(INTERRUPTED))
    }) || crate::session::interrupt::take_pending().is_some()
}

/// The guest image, built once when a guest will boot with
/// `--storage image`.
fn root_image(
    opts: &KernelsOptions,
    resolved: &[Option<image::Kernel>],
    exe: &Path,
    private: &PrivateDir,
) -> Result<Option<rootimg::RootImage>> {
    if opts.storage != Storage::Image || resolved.iter().all(Option::is_none) {
        return Ok(None);
    }
    eprintln!("vmtrace: building the guests' image of the host's tools");
    let t = std::time::Instant::now();
    let img = rootimg::build(exe, private)?;
    eprintln!(
        "vmtrace: guest files ({:.1} s to build): {}",
        t.elapsed().as_secs_f64(),
        img.description
    );
    Ok(Some(img))
}

/// What every guest of one `kernels` shares.
struct GuestSetup<'a> {
    kvm: bool,
    root_image: Option<&'a rootimg::RootImage>,
    /// Where the guests' disks and initramfs are made.
    private: &'a PrivateDir,
}

/// A bundled workload given no box of its own (no --mem, --swap or
/// --no-box) runs without one in the guests: the guest's memory is the
/// pressure, as with the seed mails' mem=64M. Said when added.
fn guest_memory_is_the_pressure(command: &[String]) -> Vec<String> {
    let bundled = command
        .iter()
        .any(|a| vmtrace_workloads::cli::bundled(a).is_some());
    let boxed = command.iter().any(|a| {
        ["--mem", "--swap", "--no-box"]
            .iter()
            .any(|o| a == o || a.starts_with(&format!("{o}=")))
    });
    if !bundled || boxed {
        return command.to_vec();
    }
    eprintln!(
        "vmtrace: the guest's memory is the pressure: the workload runs with run \
         --no-box (give run --mem to box it inside the guest)"
    );
    let mut c = command.to_vec();
    c.insert(1, "--no-box".into());
    c
}

/// The guest's command must be `run ...`, and leave -o to `kernels`.
fn check_guest_command(command: &[String]) -> Result<()> {
    if command.first().map(String::as_str) != Some("run") {
        bail!(
            "vmtrace kernels runs `vmtrace run ...` in each guest; give it after --, \
             like: vmtrace kernels --kernel debian:6.1 -- run qsbench"
        );
    }
    // vmtrace's own options, before a `--` that starts the traced
    // command (whose own options are its business).
    for a in command[1..].iter().take_while(|a| *a != "--") {
        let name = a.split('=').next().unwrap_or(a);
        if name == "--repeat" {
            bail!(
                "give --repeat to vmtrace kernels, not to the guest's run: it runs the \
                 command that many times in each guest"
            );
        }
        if name == "--progress" {
            bail!("leave --progress out of the guest's command: vmtrace kernels sets it");
        }
        if name == "--output" || (name.starts_with("-o") && !name.starts_with("--")) {
            bail!(
                "leave -o out of the guest's command: vmtrace kernels names the recordings \
                 (see --out)"
            );
        }
    }
    Ok(())
}

/// The `i`th guest's run, in its own directory under `out`; a failure
/// is its outcome's problem, said on stderr, and the next one runs.
#[allow(clippy::too_many_arguments)]
fn run_one(
    exe: &Path,
    opts: &KernelsOptions,
    guest: &GuestSetup,
    out: &Path,
    i: usize,
    spec: &str,
    kernel: Option<&image::Kernel>,
    mem: Option<u64>,
) -> Result<Outcome> {
    let name = kernel
        .and_then(|k| k.release.clone())
        .unwrap_or_else(|| spec.replace(['/', ':'], "_"));
    let dir = match mem {
        Some(m) if opts.mem.len() > 1 => out.join(format!("{i}-{name}-{}M", m >> 20)),
        _ => out.join(format!("{i}-{name}")),
    };
    crate::host::output::own_dir(&dir).with_context(|| format!("{}", dir.display()))?;
    let outcome = match (kernel, mem) {
        (Some(k), Some(m)) => run_in_guest(exe, opts, guest, k, m, &dir),
        _ => run_on_host(exe, opts, spec, &dir),
    };
    let outcome = outcome.unwrap_or_else(|e| Outcome {
        spec: spec.to_string(),
        label: kernel.and_then(|k| k.label.clone()),
        mem,
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

/// The recordings read back, one per kernel: with several guest memory
/// sizes, a kernel's recordings are joined and each run's label (its
/// sweep value) gets the size in front (`256M -j4`), so that a table
/// column and a compare are one size and one sweep value. A kernel is
/// named by its label (a tree and its patches), else by its release;
/// kernels given apart whose releases are the same (two builds of one
/// version) are named by how they were given, never pooled.
fn merged_by_kernel(outcomes: &[Outcome], mem_sweep: bool) -> Vec<(String, Recording)> {
    let mut read: Vec<(&Outcome, Recording)> = Vec::new();
    for o in outcomes {
        let Some(mut rec) = o
            .recording
            .as_ref()
            .and_then(|p| files::read_job_recording(p))
        else {
            continue;
        };
        if let (true, Some(m)) = (mem_sweep, o.mem) {
            for run in &mut rec.runs {
                run.label = format!("{}M {}", m >> 20, run.label).trim_end().to_string();
            }
        }
        read.push((o, rec));
    }
    let names: Vec<String> = read
        .iter()
        .map(|(o, rec)| {
            o.label
                .clone()
                .unwrap_or_else(|| rec.environment.kernel_release.clone())
        })
        .collect();
    let specs: Vec<&str> = read.iter().map(|(o, _)| o.spec.as_str()).collect();
    let mut merged: Vec<(String, Recording)> = Vec::new();
    for (i, (o, mut rec)) in read.into_iter().enumerate() {
        let shared = (0..names.len()).any(|j| specs[j] != o.spec && names[j] == names[i]);
        let kernel = if shared {
            o.spec.clone()
        } else {
            names[i].clone()
        };
        match merged.iter_mut().find(|(k, _)| *k == kernel) {
            Some((_, r)) => r.runs.append(&mut rec.runs),
            None => merged.push((kernel, rec)),
        }
    }
    merged
}

/// The seed mails' table: kernels as rows, the swept values (or one
/// `elapsed s` column) as columns, then the guests that gave no
/// recording (vmtrace OOM-killed in a guest too small, a hang); printed
/// and kept as table.txt.
fn kernels_table(merged: &[(String, Recording)], outcomes: &[Outcome], out: &Path) {
    let mut text = String::new();
    if !merged.is_empty() {
        let pairs: Vec<(String, &Recording)> = merged.iter().map(|(k, r)| (k.clone(), r)).collect();
        text = crate::view::report::KernelsTable::of(&pairs).to_text();
    }
    for o in outcomes.iter().filter(|o| o.recording.is_none()) {
        let name = o.dir.file_name().map(|n| n.to_string_lossy().into_owned());
        let line = format!(
            "  {}: no recording: {}",
            name.unwrap_or_else(|| o.spec.clone()),
            o.problem.as_deref().unwrap_or("unknown")
        );
        for l in crate::model::format::wrap(&line, 72) {
            text.push_str(&l);
            text.push('\n');
        }
    }
    if text.is_empty() {
        return;
    }
    let _ = crate::host::output::write_atomic(&out.join("table.txt"), text.as_bytes());
    // Kept in table.txt whatever becomes of standard output.
    if let Err(e) = crate::host::stdout::println(&text) {
        eprintln!("vmtrace: writing the table to standard output: {e}");
    }
}

/// The compare of the kernels (two at least), one per table column:
/// printed and kept as compare.txt.
fn compare_kernels(merged: &[(String, Recording)], out: &Path) {
    if merged.len() < 2 {
        return;
    }
    let inputs: Vec<GroupInput> = merged
        .iter()
        .map(|(k, r)| GroupInput {
            label: Some(k.clone()),
            files: vec![k.clone()],
            recordings: vec![r],
        })
        .collect();
    match sweep::compare_columns(&inputs, true) {
        Ok((cols, skipped)) => {
            let text = columns::render(&cols, &skipped, false);
            let _ = crate::host::output::write_atomic(&out.join("compare.txt"), text.as_bytes());
            if let Err(e) = crate::host::stdout::print(&text) {
                eprintln!("vmtrace: writing the compare to standard output: {e}");
            }
        }
        Err(e) => eprintln!("vmtrace: no compare of the kernels: {e:#}"),
    }
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
        .stdout(crate::host::output::create_file(&dir.join("stdout.txt"))?)
        .status()
        .context("running vmtrace on the host")?;
    Ok(Outcome {
        spec: spec.into(),
        label: None,
        mem: None,
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
    setup: &GuestSetup,
    k: &image::Kernel,
    mem: u64,
    dir: &Path,
) -> Result<Outcome> {
    let release = k.release.clone().unwrap_or_else(|| k.spec.clone());
    eprintln!(
        "vmtrace: booting {release} ({} MiB, {} CPU(s), {} NUMA node(s), {})",
        mem >> 20,
        opts.cpus,
        opts.numa_nodes,
        if setup.kvm { "KVM" } else { "TCG" }
    );
    if k.modules.is_none() {
        eprintln!(
            "vmtrace: notice: no modules directory for {release}: the guest needs virtio, \
             9p, ext4 and overlay built in"
        );
    }
    write_guest_job(opts, setup, dir)?;
    // Held open from here: QEMU shares it by descriptor and root reads
    // what the guest left through it (`host::held_dir`).
    let held = HeldDir::open(dir).context("the job directory")?;
    let job_path = held.proc_path();
    // QEMU (root) writes the console in root's private directory: in the
    // job directory, the invoker's, it would follow a link planted at
    // its name. A copy goes there, written as the invoker, at the end.
    let console = setup.private.path().join("console.log");
    let _ = std::fs::remove_file(&console);
    // One boot with freshly made files (scratch and swap disks,
    // initramfs), removed after it however it ended.
    let boot = || -> Result<qemu::Ended> {
        let files = files::GuestFiles::make(exe, opts, setup, k, dir)?;
        qemu::Guest {
            image: &k.image,
            initramfs: &files.initrd,
            job: &job_path,
            job_fd: Some(held.raw_fd()),
            job_model: qemu::JobShare::for_dir(&job_path),
            scratch: &files.scratch,
            root_image: setup.root_image.map(|r| r.path.as_path()),
            swap: files.swap.as_deref(),
            swap_bps: opts.swap_rate,
            mem_mib: mem >> 20,
            cpus: opts.cpus,
            numa_nodes: opts.numa_nodes,
            kvm: setup.kvm,
            console: console.clone(),
            timeout: opts.timeout,
        }
        .run()
    };
    let mut ended = boot()?;
    if !setup.kvm && files::panicked_before_the_job(&ended, &console, &held) {
        // Seen once in CI: 6.12 under multi-threaded TCG died 2 s into
        // its boot with RIP in the middle of an instruction (a static
        // key being patched). The job had not begun, so nothing is lost
        // by booting again; a second panic is reported as the failure.
        eprintln!(
            "vmtrace: {release}: the guest kernel panicked while booting, before the \
             job began (under TCG: QEMU's emulation); booting it once more"
        );
        files::keep_console(&console, &dir.join("console.first-boot.log"));
        let _ = std::fs::remove_file(&console);
        ended = boot()?;
    }
    files::keep_console(&console, &dir.join("console.log"));
    files::bring_home(&held);
    // vdb is the image only when there is one (else the swap disk).
    if let Some(read) = setup.root_image.and_then(|_| files::image_reads(&held)) {
        eprintln!(
            "vmtrace: {release}: the job read {} from the guest image (block device) \
             during its runs",
            crate::model::units::human(read)
        );
    }
    let recording = dir.join("run.vmtrace.json");
    let status = held
        .text("status")
        .and_then(|s| s.trim().parse::<i32>().ok());
    let silent = std::fs::metadata(&console).map_or(true, |m| m.len() == 0);
    let problem = problem_of(&ended, status, opts.timeout, silent);
    if let Some(p) = &problem {
        tell_problem(&release, p, &console, &held);
    }
    Ok(Outcome {
        spec: k.spec.clone(),
        label: k.label.clone(),
        mem: Some(mem),
        dir: dir.into(),
        recording: held.has("run.vmtrace.json").then_some(recording),
        problem,
    })
}

/// The guest's job: this vmtrace's `run ...` with its output, recording
/// and exit status in the job directory, what the guest's files are on
/// in the recording (VMTRACE_GUEST_STORAGE), and /proc/diskstats before
/// and after. With the image the job runs in /var/tmp (ext4, the scratch
/// disk), so that nothing it reads or writes goes through 9p.
fn write_guest_job(opts: &KernelsOptions, setup: &GuestSetup, dir: &Path) -> Result<()> {
    let d = initramfs::GUEST_JOB_DIR;
    let (exe, cwd, storage) = match setup.root_image {
        Some(img) => (
            rootimg::GUEST_EXE.to_string(),
            "/var/tmp",
            img.description.clone(),
        ),
        None => (
            format!("{d}/vmtrace"),
            d,
            "9p: the host root, read-only, for every file the job reads".to_string(),
        ),
    };
    // Under sudo the guest's vmtrace is told who the invoker is, as the
    // host's was: it runs the traced command as that user (unless the
    // command asks --as-root), who gets /var/tmp to work in.
    let invoker = crate::host::privilege::Identity::of_sudo_invoker()?
        .filter(|_| !opts.command.iter().any(|a| a == "--as-root"));
    let mut line = Vec::new();
    if let Some(i) = &invoker {
        line.push(format!(
            "SUDO_UID={} SUDO_GID={} SUDO_USER={}",
            i.uid,
            i.gid,
            shell_quote(&i.user)
        ));
    }
    line.extend([
        exe,
        opts.command[0].clone(),
        "--progress plain".into(),
        format!("--repeat {}", opts.repeat),
        format!("-o {d}/run.vmtrace.json"),
    ]);
    line.extend(opts.command[1..].iter().map(|a| shell_quote(a)));
    let workdir = match (&invoker, cwd) {
        (Some(_), "/var/tmp") => "chmod 1777 /var/tmp".to_string(),
        _ => "true".to_string(),
    };
    let job = [
        workdir,
        format!("export VMTRACE_GUEST_STORAGE={}", shell_quote(&storage)),
        format!("cat /proc/diskstats > {d}/diskstats.before"),
        format!("{} > {d}/stdout.txt 2> {d}/stderr.txt", line.join(" ")),
        format!("echo $? > {d}/status"),
        format!("cat /proc/diskstats > {d}/diskstats.after"),
    ];
    initramfs::write_job_script(dir, cwd, &job)
}

/// How an outcome's problem starts when vmtrace was stopped.
const INTERRUPTED: &str = "stopped by a signal (";

/// What went wrong in a guest, from how it ended, the exit status
/// vmtrace left in it and whether its console stayed empty; None when
/// nothing did.
fn problem_of(
    ended: &qemu::Ended,
    status: Option<i32>,
    timeout: Duration,
    silent: bool,
) -> Option<String> {
    match (ended, status) {
        (qemu::Ended::PoweredOff, Some(0)) => None,
        (qemu::Ended::PoweredOff, Some(s)) => Some(format!("vmtrace in the guest exited with {s}")),
        // The kernel died before its console came up: at 64 MiB a
        // Debian kernel and its initramfs do not fit (measured).
        (qemu::Ended::PoweredOff, None) if silent => Some(
            "the guest stopped before its console said anything: too little --mem for \
             the kernel and its initramfs, or an image QEMU cannot boot"
                .into(),
        ),
        (qemu::Ended::PoweredOff, None) => {
            Some("the guest powered off before the run ended".into())
        }
        (qemu::Ended::TimedOut, _) => Some(format!(
            "no end after {} s (a hang or a slow guest: --timeout)",
            timeout.as_secs()
        )),
        (qemu::Ended::Failed(c), _) => Some(format!("qemu exited with {c}")),
        (qemu::Ended::Interrupted(s), _) => Some(format!("{INTERRUPTED}{} {s})", signal_name(*s))),
    }
}

/// A guest's problem, with its last console lines and the last lines
/// vmtrace wrote in it.
fn tell_problem(release: &str, problem: &str, console: &Path, dir: &HeldDir) {
    eprintln!("vmtrace: {release}: {problem}; the guest's last console lines:");
    for l in qemu::console_tail(console, 15) {
        eprintln!("  | {l}");
    }
    let err = dir.text("stderr.txt").unwrap_or_default();
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
    fn a_bundled_workload_without_a_box_runs_unboxed_in_guests() {
        let v = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        assert_eq!(
            guest_memory_is_the_pressure(&v("run build -j 5,10")),
            v("run --no-box build -j 5,10")
        );
        for kept in [
            "run --mem 96M qsbench",
            "run qsbench --swap=1G",
            "run --no-box build",
            "run -- ./mine --mem 3",
            "run -- true",
        ] {
            assert_eq!(guest_memory_is_the_pressure(&v(kept)), v(kept), "{kept}");
        }
    }

    /// Options kernels sets itself are refused before any guest boots
    /// (a --repeat given to the guest's run once failed in every guest
    /// after booting it); the traced command's own options after -- are
    /// its business.
    #[test]
    fn options_kernels_sets_are_refused_in_the_guests_command() {
        let v = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        for (bad, says) in [
            (
                "run build -j 2,4 --repeat 2",
                "give --repeat to vmtrace kernels",
            ),
            ("run --repeat=2 qsbench", "give --repeat to vmtrace kernels"),
            ("run --progress none qsbench", "leave --progress out"),
            ("run -o x.json qsbench", "leave -o out"),
            ("run -ox.json qsbench", "leave -o out"),
            ("run --output=x.json qsbench", "leave -o out"),
            ("qsbench", "runs `vmtrace run ...`"),
        ] {
            let e = check_guest_command(&v(bad)).expect_err(bad).to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
        for good in ["run qsbench", "run --mem 96M -- ./job -o out --repeat 3"] {
            assert!(check_guest_command(&v(good)).is_ok(), "{good}");
        }
    }

    /// Two sizes of one kernel and one of another: one row each, the
    /// runs labelled by size and sweep value, a guest without a
    /// recording left out.
    #[test]
    fn a_memory_sweep_joins_a_kernels_runs_under_size_labels() {
        let corpus = crate::host::corpus_path();
        let dir = std::env::temp_dir().join(format!("vmtrace-merge-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut outcomes = Vec::new();
        for (i, (kernel, mem)) in [("6.1.0", 192u64), ("6.1.0", 160), ("6.12.0", 192)]
            .iter()
            .enumerate()
        {
            let mut rec = crate::host::recording_file::read(&corpus).unwrap();
            rec.environment.kernel_release = kernel.to_string();
            rec.runs[1].label = "-j4".into();
            rec.runs[0].label = "-j2".into();
            let path = dir.join(format!("{i}.vmtrace.json"));
            crate::host::recording_file::write(&rec, &path).unwrap();
            outcomes.push(Outcome {
                spec: kernel.to_string(),
                label: None,
                mem: Some(mem << 20),
                dir: dir.clone(),
                recording: Some(path),
                problem: None,
            });
        }
        outcomes.push(Outcome {
            spec: "debian:6.18".into(),
            label: None,
            mem: Some(96 << 20),
            dir: dir.clone(),
            recording: None,
            problem: Some("vmtrace in the guest exited with 137".into()),
        });
        let merged = merged_by_kernel(&outcomes, true);
        let rows: Vec<(&str, Vec<&str>)> = merged
            .iter()
            .map(|(k, r)| {
                (
                    k.as_str(),
                    r.runs.iter().map(|run| run.label.as_str()).collect(),
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                (
                    "6.1.0",
                    vec!["192M -j2", "192M -j4", "160M -j2", "160M -j4"]
                ),
                ("6.12.0", vec!["192M -j2", "192M -j4"]),
            ]
        );
        // Without a memory sweep the labels stay the sweep's own.
        let plain = merged_by_kernel(&outcomes[2..], false);
        assert_eq!(plain[0].1.runs[0].label, "-j2");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Two builds of one version (a tree with and without a patch) are
    /// two rows named by their labels; two images of one release given
    /// apart are named by how they were given; neither is pooled.
    #[test]
    fn kernels_of_one_release_are_told_apart() {
        let corpus = crate::host::corpus_path();
        let dir = std::env::temp_dir().join(format!("vmtrace-same-rel-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let outcome = |i: usize, spec: &str, label: Option<&str>| {
            let mut rec = crate::host::recording_file::read(&corpus).unwrap();
            rec.environment.kernel_release = "6.1.172".into();
            let path = dir.join(format!("{i}.vmtrace.json"));
            crate::host::recording_file::write(&rec, &path).unwrap();
            Outcome {
                spec: spec.into(),
                label: label.map(String::from),
                mem: Some(512 << 20),
                dir: dir.clone(),
                recording: Some(path),
                problem: None,
            }
        };
        let built = [
            outcome(0, "/src/linux", Some("linux")),
            outcome(1, "/src/linux:fix.patch", Some("linux + mm: fix")),
        ];
        let names: Vec<String> = merged_by_kernel(&built, false)
            .into_iter()
            .map(|(k, r)| format!("{k} ({} runs)", r.runs.len()))
            .collect();
        assert_eq!(names, ["linux (2 runs)", "linux + mm: fix (2 runs)"]);
        let images = [
            outcome(2, "/b/a.bzImage", None),
            outcome(3, "/b/b.bzImage", None),
            outcome(4, "/b/b.bzImage", None),
        ];
        let names: Vec<String> = merged_by_kernel(&images, false)
            .into_iter()
            .map(|(k, r)| format!("{k} ({} runs)", r.runs.len()))
            .collect();
        assert_eq!(names, ["/b/a.bzImage (2 runs)", "/b/b.bzImage (4 runs)"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Only a panic before the job's first file is booted again: one
    /// after it (or a timeout, or no panic) is the run's own failure.
    #[test]
    fn only_a_panic_before_the_job_boots_again() {
        let dir = std::env::temp_dir().join(format!("vmtrace-panic-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let console = dir.join("console.log");
        let off = qemu::Ended::PoweredOff;
        std::fs::write(
            &console,
            "[ 1.98] Kernel panic - not syncing: Fatal exception\n",
        )
        .expect("write");
        let held = HeldDir::open(&dir).expect("held");
        assert!(files::panicked_before_the_job(&off, &console, &held));
        assert!(!files::panicked_before_the_job(
            &qemu::Ended::TimedOut,
            &console,
            &held
        ));
        std::fs::write(dir.join("diskstats.before"), "").expect("write");
        assert!(!files::panicked_before_the_job(&off, &console, &held));
        std::fs::remove_file(dir.join("diskstats.before")).expect("rm");
        std::fs::write(&console, "[ 9.1] reboot: Power down\n").expect("write");
        assert!(!files::panicked_before_the_job(&off, &console, &held));
        std::fs::remove_dir_all(&dir).expect("rm");
    }

    #[test]
    fn arguments_survive_the_guest_shell() {
        assert_eq!(shell_quote("-m"), "-m");
        assert_eq!(shell_quote("350"), "350");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
    }
}
