//! `compare --fail-if` as a `git bisect run` step (issue 32): a made-up
//! history whose "kernel" is the job's box size, good for two commits
//! and a third of the memory from the third on; bisect, driven only by
//! vmtrace's exit status, stops at the third.

use std::{path::Path, process::Command};

use crate::common::{VMTRACE, fresh_scratch, guard, memhog};

fn git(repo: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=vmtrace test",
            "-c",
            "user.email=test@vmtrace",
        ])
        .args(args)
        .current_dir(repo)
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Five commits, each naming the box the job runs in: 256 MiB (the hog
/// fits, no reclaim) at the first two, 64 MiB (reclaim and swap) from
/// the third. The step runs the job three times and compares it with
/// the good commit's three runs: `--fail-if slower:5` exits 1 on the
/// slower commits, 0 on the others; bisect must name the third.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn git_bisect_run_stops_at_the_slower_commit() {
    let _g = guard();
    let dir = fresh_scratch("bisect");
    let repo = dir.join("history");
    std::fs::create_dir_all(&repo).expect("repo dir");
    git(&repo, &["init", "-q"]);
    let mut commits = Vec::new();
    for (i, mem) in ["256M", "256M", "64M", "64M", "64M"].iter().enumerate() {
        std::fs::write(repo.join("box"), mem).expect("box");
        git(&repo, &["add", "box"]);
        git(
            &repo,
            &[
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                &format!("commit {}", i + 1),
            ],
        );
        commits.push(git(&repo, &["rev-parse", "HEAD"]));
    }
    let job = |mem: &str, out: &Path| {
        format!(
            "{vmtrace} run -q --repeat 3 --mem {mem} --swap 512M -o {out} -- {hog} --mib 160 --passes 1",
            vmtrace = VMTRACE,
            out = out.display(),
            hog = memhog().display(),
        )
    };
    let good = dir.join("good.vmtrace.json");
    let st = Command::new("sh")
        .args(["-c", &job("256M", &good)])
        .current_dir(&dir)
        .status()
        .expect("good runs");
    assert!(st.success());
    // The step: 125 (skip) when vmtrace could not measure, else the
    // gate's verdict.
    let step = dir.join("step.sh");
    let step_rec = dir.join("step.vmtrace.json");
    std::fs::write(
        &step,
        format!(
            "rm -f {rec}\n{run} || exit 125\n{vmtrace} compare {good} --vs {rec} --fail-if slower:5\n",
            rec = step_rec.display(),
            run = job("$(cat box)", &step_rec),
            vmtrace = VMTRACE,
            good = good.display(),
        ),
    )
    .expect("step.sh");
    git(&repo, &["bisect", "start", &commits[4], &commits[0]]);
    let out = Command::new("git")
        .args(["bisect", "run", "sh"])
        .arg(&step)
        .current_dir(&repo)
        .env_remove("SUDO_UID")
        .env_remove("SUDO_GID")
        .env_remove("SUDO_USER")
        .output()
        .expect("git bisect run");
    let log = String::from_utf8_lossy(&out.stdout);
    eprintln!("{log}");
    let _ = Command::new("git")
        .args(["bisect", "reset"])
        .current_dir(&repo)
        .output();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        log.contains(&format!("{} is the first bad commit", commits[2])),
        "bisect named another commit:\n{log}"
    );
}
