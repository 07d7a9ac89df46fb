//! What vmtrace itself costs: each eBPF program's run time (--bpf-stats),
//! the untraced baseline (--no-probes), and the collector's own CPU time
//! and memory.

use std::{process::Stdio, time::Duration};

use serde_json::Value;
use vmtrace::analysis::stats::{Welch, welch};

use crate::common::{bpf_object_counts, fresh_scratch, guard, json_ok, run_memhog, vmtrace};

/// --bpf-stats: every program's runs and run time, from the kernel's own
/// accounting (kernel.bpf_stats_enabled, restored after).
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn bpf_stats_report_each_programs_cost() {
    let _g = guard();
    let before = std::fs::read_to_string("/proc/sys/kernel/bpf_stats_enabled").expect("sysctl");
    let r = json_ok(&mut run_memhog(
        true,
        &["--mem", "64M", "--swap", "512M", "--bpf-stats"],
        &["--mib", "128", "--passes", "1"],
    ));
    assert_eq!(
        std::fs::read_to_string("/proc/sys/kernel/bpf_stats_enabled").expect("sysctl"),
        before
    );
    let costs = r["program_costs"].as_array().expect("program costs");
    let begin = costs
        .iter()
        .find(|c| c["program"] == "memcg_reclaim_begin")
        .expect("memcg_reclaim_begin");
    let stalls = r["memcg_reclaim"]["stalls"]["count"].as_u64().unwrap_or(0);
    let runs = begin["runs"].as_u64().unwrap_or(0);
    // It runs for every memcg reclaim on the machine; the box's are some.
    assert!(stalls > 0 && runs >= stalls, "{runs} runs, {stalls} stalls");
    assert!(begin["run_ns"].as_u64().unwrap_or(0) > 0, "{begin}");
    // Without --bpf-stats there is no such section.
    let plain = json_ok(&mut run_memhog(true, &["--mem", "64M"], &["--mib", "16"]));
    assert!(
        plain["program_costs"].is_null(),
        "{}",
        plain["program_costs"]
    );
}

/// `run --no-probes` (the bench's baseline) attaches nothing and still
/// reports the command's times and faults; a traced run reports what
/// vmtrace itself cost, and that cost plus the command's equals the CPU
/// time the kernel charged to vmtrace's whole process tree (wait4).
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn no_probes_baseline_and_vmtrace_own_cost() {
    let _g = guard();
    let dir = fresh_scratch("no-probes");
    let faults = ["faults", "--mib", "4", "--passes", "100"];
    let touches = 4 * 256 * 100;

    let mut bare = vmtrace(&["run", "--json", "--progress", "none", "--no-probes"]);
    bare.args(faults).arg("-o").arg(dir.join("bare.json"));
    let r = json_ok(&mut bare);
    assert_eq!(r["untraced"], true);
    assert!(r["collector"].is_null() && r["program_costs"].is_null());
    assert!(r["memcg_reclaim"].is_null(), "nothing attached: {r}");
    let minor = r["usage"]["minor_faults"].as_u64().unwrap_or(0);
    assert!(
        minor >= touches,
        "{minor} minor faults for {touches} touches"
    );
    assert!(r["vmstat"]["pgfault"].as_u64().unwrap_or(0) >= touches);
    // While an untraced run runs, no program of its is loaded.
    let before = bpf_object_counts()[0];
    let mut sleeper = vmtrace(&["run", "--progress", "none", "--no-probes"])
        .args(["-o", "sleep.json", "--", "sleep", "2"])
        .current_dir(&dir)
        .stdout(Stdio::null())
        .spawn()
        .expect("start vmtrace");
    std::thread::sleep(Duration::from_secs(1));
    let during = bpf_object_counts()[0];
    assert!(sleeper.wait().expect("wait").success());
    assert!(
        during <= before,
        "{during} programs loaded, {before} before"
    );

    let mut traced = vmtrace(&["run", "--json", "--progress", "none"]);
    traced.args(faults).arg("-o").arg(dir.join("traced.json"));
    traced.stdout(Stdio::piped()).stderr(Stdio::piped());
    #[expect(
        clippy::zombie_processes,
        reason = "reaped by wait4 below, for its rusage"
    )]
    let child = traced.spawn().expect("start vmtrace");
    let pid = child.id() as i32;
    let mut status = 0;
    // SAFETY: zeroed rusage is a valid out-parameter.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // The output is small (a JSON report), so the pipes cannot fill while
    // we wait without reading them.
    // SAFETY: our own child, valid out-pointers.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    assert_eq!(waited, pid);
    let mut stdout = String::new();
    use std::io::Read;
    child
        .stdout
        .expect("stdout")
        .read_to_string(&mut stdout)
        .expect("read report");
    assert_eq!(status, 0, "vmtrace failed");
    let r: Value = crate::common::payload(&stdout);
    let c = &r["collector"];
    let f = |v: &Value| v.as_f64().unwrap_or(-1.0);
    let attach = f(&c["attach_s"]);
    assert!(attach > 0.0 && attach < 10.0, "attach took {attach} s");
    let rss = c["max_rss_bytes"].as_u64().unwrap_or(0);
    assert!((1 << 20..1 << 30).contains(&rss), "peak RSS {rss}");
    let own = f(&c["user_s"]) + f(&c["sys_s"]);
    let command = f(&r["usage"]["user_s"]) + f(&r["usage"]["sys_s"]);
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let tree = tv(ru.ru_utime) + tv(ru.ru_stime);
    // What vmtrace did before attaching (parsing, the environment, the
    // box) and after its report is not in its own figure.
    assert!(
        own > 0.0 && own + command <= tree + 0.02 && tree - (own + command) < 0.5,
        "vmtrace {own:.3} s + command {command:.3} s vs process tree {tree:.3} s"
    );
}

/// The reclaim stack is taken after the stall's end has stamped, and the
/// profile sampler only counts what it interrupts (issue 44): the same
/// hog's memcg stalls, in interleaved runs with stacks and with
/// `--no-stacks`, have a median and a mean within noise of each other
/// (Welch's test over the runs, the one compare uses, at p < 0.01 in two
/// fresh sets of rounds before it is called a difference). Each run
/// must have stalled and reclaimed what the box forces, so that runs
/// without stalls cannot pass as equal.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn stacks_leave_the_stall_histogram_within_noise() {
    let _g = guard();
    let mut last = String::new();
    for attempt in 1..=2 {
        let [on, off] = stall_rounds(4);
        let verdicts: Vec<(&str, Welch)> = [("p50", 0), ("mean", 1)]
            .into_iter()
            .filter_map(|(name, i)| {
                let pick = |g: &[[f64; 2]]| g.iter().map(|r| r[i]).collect::<Vec<_>>();
                Some((name, welch(&pick(&on), &pick(&off))?))
            })
            .collect();
        last = format!("with stacks {on:?}\nwithout {off:?}\n{verdicts:?}");
        println!("attempt {attempt}: {last}");
        assert_eq!(verdicts.len(), 2, "no variance to judge by: {last}");
        if verdicts.iter().all(|(_, w)| w.p >= 0.01) {
            return;
        }
    }
    panic!("stacks moved the memcg stall beyond noise twice:\n{last}");
}

/// `rounds` interleaved pairs of the same boxed hog, with stacks and
/// with `--no-stacks`: each run's memcg stall [p50, mean] in us. A run
/// the box OOM-kills is run again (three tries a run).
fn stall_rounds(rounds: usize) -> [Vec<[f64; 2]>; 2] {
    let mut groups = [Vec::new(), Vec::new()];
    for _ in 0..rounds {
        for (g, extra) in [(0, None), (1, Some("--no-stacks"))] {
            let r = (1..=3)
                .find_map(|_| {
                    let mut opts = vec!["--mem", "96M", "--swap", "1G"];
                    opts.extend(extra);
                    let out = run_memhog(true, &opts, &["--mib", "192", "--passes", "2"])
                        .output()
                        .expect("run vmtrace");
                    let r = crate::common::json_of(&out);
                    (out.status.success() || r["exit"]["oom_killed"] != true).then_some(r)
                })
                .expect("three runs of the hog OOM-killed by its box");
            assert_eq!(r["exit"]["code"], 0, "{r:#}");
            let m = &r["memcg_reclaim"];
            let s = &m["stalls"];
            let count = s["count"].as_u64().unwrap_or(0);
            let total = s["total_ns"].as_u64().unwrap_or(0);
            let reclaimed = m["pages_reclaimed"].as_u64().unwrap_or(0);
            // 192 MiB through a 96 MiB box, twice: at least 96 MiB reclaimed.
            assert!(count > 100 && reclaimed > 24_576, "{m:#}");
            let p50 = s["p50_ns"].as_u64().unwrap_or(0) as f64 / 1e3;
            groups[g].push([p50, total as f64 / count as f64 / 1e3]);
        }
    }
    groups
}
