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
    io::{BufRead, BufReader},
    process::{Command, Stdio},
    time::Instant,
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
    if opts.repeat == 1 {
        return util::run(&mut kernel_tests());
    }
    let mut tally = Tally::default();
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

/// Runs one round, echoing its output and counting each test's result.
/// Returns whether the round passed.
fn run_round(cmd: &mut Command, tally: &mut Tally) -> Result<bool> {
    let mut child = cmd
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("running {}", util::show(cmd)))?;
    let stdout = child.stdout.take().context("the tests' output")?;
    for line in BufReader::new(stdout).lines() {
        let line = line.context("reading the tests' output")?;
        println!("{line}");
        tally.line(&line);
    }
    Ok(child.wait()?.success())
}

/// Pass and run counts per test over the rounds, and each round's result.
#[derive(Default)]
struct Tally {
    tests: BTreeMap<String, (usize, usize)>,
    rounds: Vec<(bool, u64)>,
    /// A test whose result line is still open (its output, printed with
    /// --nocapture, came after `test NAME ... `).
    pending: Option<String>,
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
        let passed = match line.trim() {
            "ok" => true,
            "FAILED" => false,
            _ => return,
        };
        if let Some(name) = self.pending.take() {
            self.count(&name, passed);
        }
    }

    fn count(&mut self, name: &str, passed: bool) {
        self.pending = None;
        let e = self.tests.entry(name.to_string()).or_default();
        e.0 += passed as usize;
        e.1 += 1;
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
            for line in round.lines() {
                t.line(line);
            }
        }
        t.rounds = vec![(false, 61), (true, 59), (false, 60)];
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
