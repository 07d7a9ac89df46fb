//! Every test. Unit tests run in parallel; the kernel tests (real eBPF,
//! real cgroups and swap, checked against /proc/vmstat) run one at a time,
//! since /proc/vmstat is machine-wide, and only as root: otherwise they are
//! reported as skipped, with the reason.
//!
//! `--repeat N` runs the kernel tests N times (optionally only those whose
//! names contain a filter) and prints each test's pass count and each
//! round's time: the way to find a flaky test before a user or CI does.

use std::{
    collections::BTreeMap,
    io::{Read, Write},
    os::unix::process::CommandExt,
    process::{Command, Stdio},
    sync::mpsc,
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};

use crate::{build, util};

pub struct TestOptions {
    /// Kernel-test rounds (1: the whole suite once, as CI runs it).
    pub repeat: usize,
    /// Only kernel tests whose names contain this (libtest's filter).
    pub filter: Option<String>,
}

pub fn test(opts: &TestOptions) -> Result<()> {
    if opts.repeat == 0 {
        bail!("--repeat takes a count of 1 or more");
    }
    crate::setup::setup(crate::setup::Verbosity::Quiet, crate::setup::Need::Test)?;
    build::build()?;
    let python = crate::setup::python_dir();
    // With --repeat or a filter the unit tests are not what is asked for.
    if opts.repeat == 1 && opts.filter.is_none() {
        // Unit and doc tests of every default member; the kernel tests
        // are #[ignore]d there, so they show up as ignored, never as
        // passed. The hlog export is checked by the PyPI decoder setup
        // installed. The fuzz targets (tests/fuzz.rs) get a short run of
        // their own.
        util::run(
            util::cargo()
                .args(["test", "--release"])
                .env("VMTRACE_PYTHONPATH", &python)
                .env("VMTRACE_FUZZ_SECS", "20"),
        )?;
    }
    if !util::is_root() {
        eprintln!(
            "xtask: kernel tests SKIPPED: not root. They load eBPF programs, create \
             memory cgroups and swapfiles; run `sudo -E cargo xtask test` (CI runs as root)."
        );
        return Ok(());
    }
    let kernel_tests = || {
        let mut cmd = util::cargo();
        cmd.env("VMTRACE_PYTHONPATH", &python)
            .env("VMTRACE_PROMETHEUS", crate::setup::prometheus::binary())
            .args([
                "test",
                "--release",
                "-p",
                "vmtrace",
                "--test",
                "kernel",
                "--",
                "--ignored",
                "--test-threads=1",
            ]);
        if let Some(f) = &opts.filter {
            // The chosen tests' own logs (how much of its condition each
            // run had) are what a developer asking for them wants.
            cmd.args([f.as_str(), "--nocapture"]);
        }
        cmd
    };
    let mut tally = Tally::default();
    if opts.repeat == 1 {
        let started = Instant::now();
        let ok = run_round(&mut kernel_tests(), &mut tally)?;
        print!("{}", tally.slowest(SLOWEST, started.elapsed().as_secs()));
        if !ok {
            bail!("a kernel test failed (above)");
        }
        return Ok(());
    }
    for round in 1..=opts.repeat {
        eprintln!("xtask: kernel tests, round {round} of {}", opts.repeat);
        let started = Instant::now();
        let ok = run_round(&mut kernel_tests(), &mut tally)?;
        let secs = started.elapsed().as_secs();
        eprintln!(
            "xtask: round {round}: {} in {}m{:02}s",
            if ok { "passed" } else { "FAILED" },
            secs / 60,
            secs % 60
        );
        tally.rounds.push((ok, secs));
    }
    print!("{}", tally.table(opts.repeat));
    if tally.rounds.iter().all(|(ok, _)| *ok) {
        Ok(())
    } else {
        bail!("a kernel test failed in at least one round (table above)")
    }
}

/// How many of the slowest kernel tests a run lists at its end: the
/// ones to size down when the suite nears CI's limit.
const SLOWEST: usize = 12;

/// A kernel test that runs longer than this is stopped, with the
/// round: a hang then fails with its name, not CI's limit with none.
/// The longest test (two TCG guests) takes ~10 min here.
const TEST_LIMIT: Duration = Duration::from_secs(30 * 60);

/// Runs one round, echoing its output and counting each test's result
/// and time. Returns whether the round passed; a test past
/// `TEST_LIMIT` stops the round (SIGTERM to the tests' process group,
/// which vmtrace cleans up after, then SIGKILL) and fails it.
fn run_round(cmd: &mut Command, tally: &mut Tally) -> Result<bool> {
    let mut child = cmd
        .stdout(Stdio::piped())
        .process_group(0)
        .spawn()
        .with_context(|| format!("running {}", util::show(cmd)))?;
    let mut stdout = child.stdout.take().context("the tests' output")?;
    // Chunks, not lines: libtest writes `test NAME ... ` as a test
    // starts and the result when it ends, so the open test's name is
    // in the unfinished line.
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    tally.begin_round();
    let mut pending = Vec::new();
    loop {
        // Until libtest's `running N tests` the tests are building:
        // no test's time.
        let wait = match tally.started {
            Some(t) => TEST_LIMIT.saturating_sub(t.elapsed()),
            None => TEST_LIMIT * 2,
        };
        match rx.recv_timeout(wait) {
            Ok(chunk) => {
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(&chunk);
                let _ = out.flush();
                pending.extend_from_slice(&chunk);
                while let Some(end) = pending.iter().position(|&b| b == b'\n') {
                    let line: Vec<u8> = pending.drain(..=end).collect();
                    tally.line(String::from_utf8_lossy(&line).trim_end_matches('\n'));
                }
                tally.line_begun(&String::from_utf8_lossy(&pending));
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let name = match (&tally.pending, tally.started) {
                    (Some(name), _) => name.clone(),
                    (None, None) => "build".into(),
                    (None, Some(_)) => "(unnamed)".into(),
                };
                eprintln!(
                    "\nxtask: kernel test {name} ran past {} min: stopping the round",
                    TEST_LIMIT.as_secs() / 60
                );
                stop_group(&mut child);
                tally.count(&name, false);
                return Ok(false);
            }
        }
    }
    Ok(child.wait()?.success())
}

/// Stops the tests' process group: SIGTERM first to the vmtraces in
/// it, which pass it to their commands and remove their cgroups,
/// swapfiles and guests (the test binary's children die with it, by
/// PR_SET_PDEATHSIG, so they go before it), then SIGTERM to the group,
/// then SIGKILL to what is left a minute later.
fn stop_group(child: &mut std::process::Child) {
    let group = child.id();
    let kill = |sig: &str, target: &str| {
        let _ = Command::new("kill").args([sig, "--", target]).status();
    };
    let members = |comm: &str| -> Vec<u32> {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        dir.flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                // pid (comm) state ppid pgrp ...: comm may hold spaces.
                let Some((head, rest)) = stat.rsplit_once(") ") else {
                    return false;
                };
                let pgrp = rest.split(' ').nth(2).and_then(|g| g.parse::<u32>().ok());
                pgrp == Some(group) && (comm.is_empty() || head.ends_with(&format!("({comm}")))
            })
            .collect()
    };
    let settle = |until: Duration, comm: &str| {
        let end = Instant::now() + until;
        while Instant::now() < end && !members(comm).is_empty() {
            std::thread::sleep(Duration::from_millis(500));
        }
    };
    for pid in members("vmtrace") {
        kill("-TERM", &pid.to_string());
    }
    settle(Duration::from_secs(60), "vmtrace");
    kill("-TERM", &format!("-{group}"));
    settle(Duration::from_secs(60), "");
    kill("-KILL", &format!("-{group}"));
    let _ = child.wait();
}

/// Pass and run counts per test over the rounds, and each round's result.
#[derive(Default)]
struct Tally {
    tests: BTreeMap<String, (usize, usize)>,
    rounds: Vec<(bool, u64)>,
    /// A test whose result line is still open (its output, printed with
    /// --nocapture, came after `test NAME ... `).
    pending: Option<String>,
    /// When the last test ended (or the test binary started): with one
    /// test thread, when the open test started. None while building.
    started: Option<Instant>,
    /// Each test's seconds in the last round, in the order run.
    times: Vec<(String, u64)>,
}

impl Tally {
    /// Counts a libtest result line: `test NAME ... ok` or `... FAILED`,
    /// or with --nocapture `test NAME ... ` then the test's output, then
    /// `ok` or `FAILED` on a line of its own.
    fn line(&mut self, line: &str) {
        let result = |r: &str| match r.trim_end() {
            r if r.ends_with(" ok") || r == "ok" => Some(true),
            r if r.ends_with("FAILED") => Some(false),
            _ => None,
        };
        if let Some((name, rest)) = line
            .strip_prefix("test ")
            .and_then(|rest| rest.split_once(" ..."))
        {
            let rest = format!(" {}", rest.trim_start());
            match result(&rest) {
                Some(passed) => self.count(name.trim(), passed),
                None => self.pending = Some(name.trim().to_string()),
            }
            return;
        }
        if line.starts_with("running ") {
            // The test binary starts: its build's time is no test's.
            self.started = Some(Instant::now());
            return;
        }
        let passed = match line.trim() {
            "ok" => true,
            "FAILED" => false,
            _ => return,
        };
        if let Some(name) = self.pending.take() {
            self.count(&name, passed);
        }
    }

    fn begin_round(&mut self) {
        self.started = None;
        self.times.clear();
    }

    /// An unfinished line: `test NAME ... ` names the test now running.
    fn line_begun(&mut self, partial: &str) {
        if let Some((name, _)) = partial
            .strip_prefix("test ")
            .and_then(|rest| rest.split_once(" ..."))
        {
            self.pending = Some(name.trim().to_string());
        }
    }

    fn count(&mut self, name: &str, passed: bool) {
        self.pending = None;
        if let Some(t) = self.started.replace(Instant::now()) {
            self.times.push((name.to_string(), t.elapsed().as_secs()));
        }
        let e = self.tests.entry(name.to_string()).or_default();
        e.0 += passed as usize;
        e.1 += 1;
    }

    /// The `n` slowest tests of the last round and the round's time.
    fn slowest(&self, n: usize, total: u64) -> String {
        let mut by_time: Vec<&(String, u64)> = self.times.iter().collect();
        by_time.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let mut out = format!(
            "\nkernel tests: {} in {}m{:02}s; the slowest:\n",
            self.times.len(),
            total / 60,
            total % 60
        );
        for (name, secs) in by_time.into_iter().take(n) {
            out.push_str(&format!("  {:>3}m{:02}s {name}\n", secs / 60, secs % 60));
        }
        out
    }

    fn table(&self, repeat: usize) -> String {
        let mut out = format!("\nkernel tests over {repeat} rounds (passed/run):\n");
        for (name, (passed, run)) in &self.tests {
            let mark = if passed < run { "  <- flaky" } else { "" };
            out.push_str(&format!("  {passed:>3}/{run:<3} {name}{mark}\n"));
        }
        let times: Vec<String> = self
            .rounds
            .iter()
            .map(|(ok, s)| {
                format!(
                    "{}m{:02}s{}",
                    s / 60,
                    s % 60,
                    if *ok { "" } else { " (failed)" }
                )
            })
            .collect();
        out.push_str(&format!("rounds: {}\n", times.join(", ")));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::Tally;

    #[test]
    fn counts_passes_and_failures_per_test_across_rounds() {
        let mut t = Tally::default();
        for round in [
            "test zones::a ... ok\ntest swapio::b ... FAILED\nrunning 2 tests",
            "test zones::a ... ok\ntest swapio::b ... some output\ntest result: ok. 2 passed",
            "test zones::a ... FAILED\ntest swapio::b ... ok",
            "test zones::a ... global reclaim: 5\nattempt 1: ok\nok\ntest swapio::b ... \nx\nFAILED",
        ] {
            t.begin_round();
            t.line("running 2 tests");
            for line in round.lines() {
                t.line(line);
            }
        }
        t.rounds = vec![(false, 61), (true, 59), (false, 60)];
        assert_eq!(t.times.len(), 2, "the last round's tests");
        t.line_begun("test kernels::seed ... ");
        assert_eq!(t.pending.as_deref(), Some("kernels::seed"));
        t.line("ok");
        assert_eq!(t.tests["kernels::seed"], (1, 1));
        t.times = vec![("a".into(), 5), ("b".into(), 700), ("c".into(), 61)];
        let slow = t.slowest(2, 766);
        assert!(
            slow.contains("kernel tests: 3 in 12m46s")
                && slow.contains("   11m40s b\n    1m01s c\n"),
            "{slow}"
        );
        assert_eq!(t.tests["zones::a"], (3, 4));
        assert_eq!(t.tests["swapio::b"], (1, 3));
        let table = t.table(3);
        assert!(table.contains("  3/4   zones::a  <- flaky"), "{table}");
        assert!(
            table.contains("rounds: 1m01s (failed), 0m59s, 1m00s (failed)"),
            "{table}"
        );
    }
}
