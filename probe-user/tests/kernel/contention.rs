//! Who the job waited for, measured at the scheduler (probe-ebpf
//! `contention`), against the kernel's own run_delay (delay accounting,
//! summed over the job's tasks at exit) and the job's rusage: a sorter
//! pinned to one CPU beside a hog pinned there too (outside the job),
//! and two sorters of one job pinned to one CPU (self-contention); and
//! the job cgroup's PSI (cpu.pressure, io.pressure) against its waits.

use std::process::{Command, Stdio};

use serde_json::Value;

use crate::common::{die_with_parent, guard, json_of, memhog, vmtrace};

/// The bundled qsbench binary, beside memhog.
fn qsbench() -> String {
    let hog = memhog();
    hog.with_file_name("qsbench").to_string_lossy().into_owned()
}

/// A busy loop pinned to CPU 0, killed when dropped.
struct Hog(std::process::Child);

impl Hog {
    fn start() -> Hog {
        let mut c = Command::new("taskset");
        c.args(["-c", "0", "sh", "-c", "while :; do :; done"])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        die_with_parent(&mut c);
        Hog(c.spawn().expect("start the hog"))
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The report of `vmtrace run --no-box` of `job` pinned to CPU 0.
fn pinned_run(job: &[&str]) -> Value {
    pinned_run_in(&["--no-box"], job)
}

/// The report of `vmtrace run <how>` of `job` pinned to CPU 0.
fn pinned_run_in(how: &[&str], job: &[&str]) -> Value {
    let mut args = vec!["run", "--json", "--progress", "none"];
    args.extend(how);
    args.extend(["--", "taskset", "-c", "0"]);
    args.extend(job);
    let out = vmtrace(&args).output().expect("run vmtrace");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = json_of(&out);
    assert_eq!(r["exit"]["code"], 0, "{r:#}");
    r
}

fn secs(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

fn ns(v: &Value) -> f64 {
    v.as_u64().map_or(f64::NAN, |n| n as f64 / 1e9)
}

/// The runnable time by holder, and their sum, in seconds.
fn runnable(r: &Value) -> (Value, f64) {
    let x = r["runnable"].clone();
    assert!(x.is_object(), "no runnable section: {r:#}");
    let sum = [
        "behind_job_ns",
        "behind_kswapd_ns",
        "behind_kcompactd_ns",
        "behind_kthreads_ns",
        "behind_others_ns",
        "behind_idle_ns",
    ]
    .iter()
    .map(|k| ns(&x[k]))
    .sum();
    (x, sum)
}

/// One thread, a hog on its CPU: elapsed is its CPU time, its runnable
/// time, its sleeps and its time lost to interrupts (within 2%); the runnable time per holder sums to
/// at most run_delay, and the hog (another task) holds nearly all of it.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn a_single_thread_is_its_cpu_its_waits_and_its_sleeps() {
    let _g = guard();
    let sorter = qsbench();
    let r = {
        let _hog = Hog::start();
        pinned_run(&[&sorter, "-m", "48"])
    };
    let u = &r["usage"];
    let wall = secs(&u["wall_s"]);
    let cpu = secs(&u["user_s"]) + secs(&u["sys_s"]);
    let run_delay = ns(&r["delays"]["cpu_ns"]);
    let io = ns(&r["io_waits"]["total_ns"]);
    // With CONFIG_IRQ_TIME_ACCOUNTING the interrupts' time is out of the
    // task's CPU time and in its irq delay (6.5+); else it is in the CPU
    // time and the delay is 0.
    let irq = ns(&r["delays"]["irq_ns"]);
    let parts = cpu + run_delay + io + irq;
    println!(
        "elapsed {wall:.3}s = CPU {cpu:.3} + runnable {run_delay:.3} + I/O {io:.3} \
         + interrupted {irq:.3} = {parts:.3}"
    );
    assert!(wall > 0.5, "too short to judge: {wall}s");
    assert!(
        (parts - wall).abs() <= 0.02 * wall,
        "{parts} vs {wall}: {r:#}"
    );
    let (x, sum) = runnable(&r);
    println!("runnable by holder {sum:.3}s of run_delay {run_delay:.3}s: {x}");
    // The counters and run_delay are each summed over the same waits:
    // the holders' sum ran 1.229-1.342 s against run_delay 1.233-1.346 s
    // (4 ms under), once 1.3274 s against 1.3235 s (3.8 ms, 0.29%, over:
    // not yet explained; bpf_ktime against the runqueue clock, stamped
    // at different points of the wake-up). At most 0.5% over.
    assert!(sum <= 1.005 * run_delay + 1e-4, "{sum} > {run_delay}: {x}");
    assert!(sum >= 0.9 * run_delay, "{sum} of {run_delay}: {x}");
    let others = ns(&x["behind_others_ns"]);
    assert!(others >= 0.8 * run_delay, "{others} of {run_delay}: {x}");
    assert!(ns(&x["behind_job_ns"]) < 0.05 * run_delay, "{x}");
}

/// Two sorters of one job on one CPU: they wait behind each other, which
/// is the job's own CPU time queueing, not contention from outside.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn two_sorters_on_one_cpu_wait_behind_the_job() {
    let _g = guard();
    let sorter = qsbench();
    let r = pinned_run(&[&sorter, "-m", "24", "-p", "2"]);
    let run_delay = ns(&r["delays"]["cpu_ns"]);
    let (x, sum) = runnable(&r);
    println!("runnable by holder {sum:.3}s of run_delay {run_delay:.3}s: {x}");
    assert!(run_delay > 0.2, "no queueing to judge: {run_delay}s");
    assert!(sum <= run_delay + 1e-4, "{sum} > {run_delay}: {x}");
    let job = ns(&x["behind_job_ns"]);
    assert!(job >= 0.8 * run_delay, "{job} of {run_delay}: {x}");
    assert!(ns(&x["behind_others_ns"]) < 0.15 * run_delay, "{x}");
}

/// The kernel's own reading of the same waits: one sorter pinned beside
/// a hog, swapping in a 64 MiB box, against its cgroup's cpu.pressure
/// and io.pressure (PSI). On one CPU, `some` is the time the thread was
/// runnable and not running, and the time it slept in io_schedule
/// (kernel/sched/psi.c: TSK_RUNNING beyond TSK_ONCPU, TSK_IOWAIT; the
/// per-CPU weights are all on the one CPU the group ran on): its
/// run_delay and vmtrace's I/O waits. Measured on 6.18.44, three runs:
/// PSI's CPU 4-5% above run_delay, its I/O 11-13% below the I/O waits,
/// their sums 1.7-2.2% apart: some sleeps are runnable to PSI for a
/// while, as a task whose dequeue is delayed (EEVDF, 6.12+) stays
/// queued when it blocks. So: the sums within 5% + 20 ms, each part
/// within 15% + 20 ms.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn the_job_pressure_agrees_with_its_measured_waits() {
    let _g = guard();
    let sorter = qsbench();
    // In its tight box the sorter is now and then OOM-killed although
    // swap is free (a charge whose reclaim passes free nothing while
    // swap-outs are in flight: what calibration case 04 plants); such a
    // run has no whole job to cross-check, so it is run once more.
    let mut attempts = 0;
    let r = loop {
        attempts += 1;
        let _hog = Hog::start();
        let out = vmtrace(&["run", "--json", "--progress", "none"])
            .args(["--mem", "64M", "--swap", "512M", "--", "taskset", "-c", "0"])
            .args([sorter.as_str(), "-m", "96"])
            .output()
            .expect("run vmtrace");
        let r = json_of(&out);
        if r["exit"]["oom_killed"] == true && attempts < 2 {
            println!("run {attempts} OOM-killed in its box; once more");
            continue;
        }
        assert_eq!(r["exit"]["code"], 0, "{r:#}");
        break r;
    };
    let b = &r["membox"];
    let (Some(cpu), Some(io)) = (b.get("cpu_pressure"), b.get("io_pressure")) else {
        println!("no cgroup v2 group or no PSI here: nothing to cross-check ({b})");
        return;
    };
    let us = |v: &Value| v.as_u64().map_or(f64::NAN, |n| n as f64 / 1e6);
    let (cpu_some, io_some) = (us(&cpu["some_us"]), us(&io["some_us"]));
    let run_delay = ns(&r["delays"]["cpu_ns"]);
    let io_waits = ns(&r["io_waits"]["total_ns"]);
    println!(
        "CPU: PSI some {cpu_some:.3}s, run_delay {run_delay:.3}s; \
         I/O: PSI some {io_some:.3}s, I/O waits {io_waits:.3}s"
    );
    assert!(run_delay > 0.5, "too little queueing to judge: {r:#}");
    assert!(io_waits > 0.1, "too little I/O to judge: {r:#}");
    let near = |a: f64, b: f64, by: f64| (a - b).abs() <= by * a.max(b) + 0.02;
    assert!(
        near(cpu_some + io_some, run_delay + io_waits, 0.05),
        "{cpu_some} + {io_some} vs {run_delay} + {io_waits}"
    );
    assert!(near(cpu_some, run_delay, 0.15), "{cpu_some} vs {run_delay}");
    assert!(near(io_some, io_waits, 0.15), "{io_some} vs {io_waits}");
}
