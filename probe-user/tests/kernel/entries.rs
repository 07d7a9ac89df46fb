//! Where reclaim was entered (issue 31): the ways in that vmtrace
//! records against the kernel's own view of the same reclaims: the GFP
//! flags as the tracepoint itself prints them (a tracefs instance of
//! its own, enabled by the job), the page-cache read path of a file
//! read in a small box, the folded export read by an independent
//! flame-graph tool; direct compaction entered from the THP fault under
//! global pressure.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::{
    common::{
        delta, fresh_scratch, global_hog_mib, guard, json_ok, memhog, run_memhog, vmstat, vmtrace,
    },
    counters::{THP, ThpSetting},
};

/// A `sh -c` script that records `events` (vmscan tracepoints) in a
/// tracefs instance of its own while `body` runs, and writes the
/// instance's `trace` to `out`; the instance goes whatever happens.
/// `body` should end with the box nearly empty (a hog that exits), so
/// that writing `out` enters no reclaim the trace does not show.
/// Used on the host and in the guests (`kernels` test). vmtrace
/// unmounts a tracefs it mounted once its programs are attached, so
/// the script mounts one when none is there, and unmounts it again.
pub fn traced_job(events: &[&str], body: &str, out: &str) -> String {
    let enable: String = events
        .iter()
        .map(|e| format!("echo 1 > $i/events/vmscan/{e}/enable; "))
        .collect();
    format!(
        "t=/sys/kernel/tracing; m=0; \
         [ -d $t/instances ] || {{ mount -t tracefs nodev $t && m=1; }} || exit 96; \
         i=$t/instances/vmtrace-test-$$; mkdir $i || exit 97; \
         trap 'echo 0 > $i/tracing_on; rmdir $i; [ $m = 0 ] || umount $t' EXIT; \
         echo 8192 > $i/buffer_size_kb; {enable}{body}; rc=$?; \
         echo 0 > $i/tracing_on; cat $i/trace > {out}; exit $rc"
    )
}

/// How many of each GFP flag string the kernel printed for `event`
/// (`gfp_flags=...` in its `trace` lines), for tasks named in `comms`.
pub fn traced_gfp(trace: &str, event: &str, comms: &[&str]) -> BTreeMap<String, u64> {
    let mut seen = BTreeMap::new();
    for line in trace.lines().filter(|l| !l.starts_with('#')) {
        let Some(at) = line.find(&format!(" {event}: ")) else {
            continue;
        };
        let task = line.split_whitespace().next().unwrap_or("");
        // `comm-pid`: the comm may hold dashes itself.
        let comm = task.rsplit_once('-').map_or(task, |(c, _)| c);
        if !comms.contains(&comm) {
            continue;
        }
        if let Some(gfp) = line[at..]
            .split_whitespace()
            .find_map(|w| w.strip_prefix("gfp_flags="))
        {
            *seen.entry(gfp.to_string()).or_default() += 1;
        }
    }
    seen
}

/// The GFP strings of a report's ways in of `context`, with their
/// reclaim counts.
pub fn entry_gfp(r: &Value, context: &str) -> BTreeMap<String, u64> {
    let mut seen = BTreeMap::new();
    for p in r["reclaim_entries"]["paths"]
        .as_array()
        .into_iter()
        .flatten()
    {
        if p["context"] == context {
            let name = p["gfp_names"].as_str().unwrap_or("?").to_string();
            *seen.entry(name).or_default() += p["count"].as_u64().unwrap_or(0);
        }
    }
    seen
}

/// `dir/big.data`, `mib` MiB written around the page cache (O_DIRECT):
/// a read in a box must bring it in, charged to the box.
fn uncached_file(dir: &std::path::Path, mib: u32) -> std::path::PathBuf {
    let file = dir.join("big.data");
    let st = std::process::Command::new("dd")
        .args(["if=/dev/zero", "bs=1M", "oflag=direct"])
        .arg(format!("count={mib}"))
        .arg(format!("of={}", file.display()))
        .status()
        .expect("dd");
    assert!(st.success());
    file
}

/// A report's ways into direct compaction.
pub fn compaction_ways(r: &Value) -> Vec<&Value> {
    r["reclaim_entries"]["paths"]
        .as_array()
        .expect("reclaim_entries.paths")
        .iter()
        .filter(|p| p["context"] == "compaction")
        .collect()
}

fn frames(p: &Value) -> Vec<&str> {
    p["frames"]
        .as_array()
        .map(|f| f.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// A file read, then a memory hog, in a 96 MiB box, the job recording
/// the memcg reclaim begins in a tracefs instance of its own:
/// (a) the GFP strings vmtrace decoded (from the running kernel's print
/// format) are those the kernel printed, with the same counts;
/// (b) the hog's reclaims come through handle_mm_fault, the read's
/// through the page cache (filemap_*, page_cache_ra_*, readahead) under
/// vfs_read; (c) the folded export, read by inferno-flamegraph
/// (installed by `cargo xtask setup`), draws both.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn ways_in_match_the_tracepoints_own_output_and_the_read_path() {
    let _g = guard();
    let dir = fresh_scratch("entries");
    let file = uncached_file(&dir, 192);
    let trace = dir.join("trace.txt");
    // The read first: the hog's exit then leaves the box nearly empty
    // for the write of the trace (`traced_job`).
    let body = format!(
        "dd if={} of=/dev/null bs=1M 2>/dev/null && {} --mib 192 --passes 1",
        file.display(),
        memhog().display()
    );
    let job = traced_job(
        &["mm_vmscan_memcg_reclaim_begin"],
        &body,
        &trace.display().to_string(),
    );
    let rec_path = dir.join("run.vmtrace.json");
    let out = vmtrace(&[
        "run",
        "--progress",
        "none",
        "--mem",
        "96M",
        "--swap",
        "1G",
        "-o",
    ])
    .arg(&rec_path)
    .args(["--", "sh", "-c", &job])
    .output()
    .expect("run vmtrace");
    let text = String::from_utf8_lossy(&out.stdout);
    let rec = crate::common::recording(&rec_path);
    let r = &rec["runs"][0]["report"];
    // The box's v1 memcg now and then OOM-kills the hog (a charge whose
    // reclaim passes free nothing while its swap-outs are still under
    // writeback: one CI run in many, 1 GiB of swap free). The shell
    // outlives the hog, writes the trace and exits 137, the box's own
    // kill count says why; every reclaim until the kill was both printed
    // and counted, so all of the checks below still hold.
    if !out.status.success() {
        let killed = r["exit"]["code"] == 137 && r["membox"]["oom_kills"].as_u64() >= Some(1);
        assert!(killed, "{text}\n{}", String::from_utf8_lossy(&out.stderr));
        eprintln!("notice: the hog was OOM-killed by its box; ways in still checked");
    }
    let e = &r["reclaim_entries"];

    // (a) The kernel's own strings, count for count.
    let printed = traced_gfp(
        &std::fs::read_to_string(&trace).expect("trace"),
        "mm_vmscan_memcg_reclaim_begin",
        &["memhog", "dd", "sh"],
    );
    let decoded = entry_gfp(r, "memcg");
    eprintln!("kernel printed {printed:?}\nvmtrace decoded {decoded:?}");
    assert!(!printed.is_empty(), "the trace holds no reclaim begin");
    assert_eq!(printed, decoded);

    // (b) The two jobs' ways in.
    let paths = e["paths"].as_array().expect("paths");
    let stall = |want: &dyn Fn(&[&str]) -> bool| -> u64 {
        paths
            .iter()
            .filter(|p| want(&frames(p)))
            .map(|p| p["stall_ns"].as_u64().unwrap_or(0))
            .sum()
    };
    let total = stall(&|_| true);
    let fault = stall(&|f| f.contains(&"handle_mm_fault"));
    let read = stall(&|f| f.contains(&"vfs_read"));
    let page_cache = |f: &str| {
        f.starts_with("filemap_") || f.starts_with("page_cache_ra") || f.contains("readahead")
    };
    let read_via_cache = stall(&|f| f.contains(&"vfs_read") && f.iter().any(|x| page_cache(x)));
    eprintln!("stall {total} ns: fault path {fault}, read {read} (page cache {read_via_cache})");
    assert!(fault > 0 && read > 0, "{e:#}");
    assert_eq!(read, read_via_cache, "{e:#}");
    assert!(fault + read >= total * 99 / 100, "{e:#}");
    assert!(text.contains("where reclaim was entered"), "{text}");

    // (c) The folded export through an independent flame-graph tool.
    let folded = vmtrace(&["export", "--format", "folded"])
        .arg(&rec_path)
        .output()
        .expect("export");
    assert!(folded.status.success());
    let folded = String::from_utf8_lossy(&folded.stdout).into_owned();
    let weights: u64 = folded
        .lines()
        .map(|l| {
            l.rsplit_once(' ')
                .and_then(|(_, w)| w.parse::<u64>().ok())
                .expect("weight")
        })
        .sum();
    assert!(weights.abs_diff(total / 1000) <= folded.lines().count() as u64);
    flame_graph_of(&folded, &dir);
}

/// Renders `folded` with inferno-flamegraph (installed by `cargo xtask
/// setup`), and checks the SVG names the anonymous fault and the page
/// cache read; the SVG is kept beside the recording.
fn flame_graph_of(folded: &str, dir: &std::path::Path) {
    use std::io::Write as _;
    let mut child = std::process::Command::new("inferno-flamegraph")
        .args(["--title", "where reclaim was entered"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("inferno-flamegraph (cargo xtask setup installs it)");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(folded.as_bytes())
        .expect("write folded");
    let out = child.wait_with_output().expect("inferno-flamegraph");
    assert!(out.status.success());
    let svg = String::from_utf8_lossy(&out.stdout);
    std::fs::write(dir.join("entries.svg"), svg.as_bytes()).expect("keep svg");
    let names: BTreeSet<&str> = ["handle_mm_fault", "vfs_read", "memcg_reclaim"]
        .into_iter()
        .filter(|n| !svg.contains(n))
        .collect();
    assert!(names.is_empty(), "the flame graph lacks {names:?}");
}

/// Compare (issue 31): the same hog in a 96 MiB box, A alone and B with
/// a 128 MiB file read over and over beside it (concurrently, so that
/// the read's page cache charges meet a box full of the hog's memory and
/// stall as long), in interleaved rounds A, B, A'. B against A names a way in
/// through vfs_read as the way that moved most (the hog's own anonymous
/// faults, slowed by the reader, may move too: seen +122 ms beside the
/// read's +193 ms); A' against A names none (or else fresh A/A rounds
/// do).
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn compare_names_the_file_read_that_moved_and_none_in_aa() {
    let _g = guard();
    let dir = fresh_scratch("entries-compare");
    let file = uncached_file(&dir, 128);
    let hog = format!("{} --mib 160 --passes 1", memhog().display());
    // B reads the file over and over while the hog runs, so that the
    // reads overlap the hog alike in every run; the file leaves the page
    // cache before each read (POSIX_FADV_DONTNEED through dd's nocache),
    // so that every read brings it in, charged to the box.
    let read = format!(
        "{hog} & p=$!; while kill -0 $p 2>/dev/null; do \
         dd if={f} iflag=nocache count=0 2>/dev/null; \
         dd if={f} of=/dev/null bs=1M 2>/dev/null; done; wait",
        f = file.display()
    );
    let compare = |x: &[std::path::PathBuf], y: &[std::path::PathBuf], json: bool| {
        let mut c = vmtrace(&["compare", "--force"]);
        c.args(x).arg("--vs").args(y);
        if json {
            c.arg("--json");
        }
        let out = c.output().expect("compare");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // The ways that moved, most change first.
    let moved = |c: &Value| -> Vec<Vec<String>> {
        let mut rows: Vec<&Value> = c["entries"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|r| r["moved"][0] == true)
            .collect();
        let diff = |r: &Value| r["changes"][0]["diff"].as_f64().unwrap_or(0.0).abs();
        rows.sort_by(|x, y| diff(y).total_cmp(&diff(x)));
        rows.iter()
            .map(|r| frames(r).into_iter().map(String::from).collect())
            .collect()
    };
    // Rounds of A, B, A': three, then more (up to six) while the read is
    // not yet the way that moved most. The A/A verdict is not used to
    // stop, so its false-alarm rate stays what compare's rules give.
    let run = |name: &str, job: &str| {
        let path = dir.join(name);
        let out = vmtrace(&["run", "-q", "--mem", "96M", "--swap", "1G", "-o"])
            .arg(&path)
            .args(["--", "sh", "-c", job])
            .output()
            .expect("run vmtrace");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        path
    };
    let (mut a, mut b, mut a2) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..6 {
        for (k, (job, group)) in [(&hog, &mut a), (&read, &mut b), (&hog, &mut a2)]
            .into_iter()
            .enumerate()
        {
            group.push(run(&format!("g{k}-r{round}.vmtrace.json"), job));
        }
        if round >= 2 {
            let ab: Value = crate::common::payload(&compare(&a, &b, true));
            if moved(&ab)
                .first()
                .is_some_and(|f| f.iter().any(|x| x == "vfs_read"))
            {
                break;
            }
        }
    }
    let ab: Value = crate::common::payload(&compare(&a, &b, true));
    let text = compare(&a, &b, false);
    let ab_moved = moved(&ab);
    eprintln!("ways that moved, B vs A: {}", ab_moved.len());
    // The reclaim mechanism's sentence, as the text writes it (the JSON
    // has its evidence, not its words).
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let reclaim_hint = words
        .split(". reclaim: ")
        .nth(1)
        .map(|rest| {
            let end = [
                " -- ",
                " where reclaim was entered",
                " also different",
                " CPU inside",
            ]
            .iter()
            .filter_map(|m| rest.find(m))
            .min()
            .unwrap_or(rest.len());
            rest[..end].to_string()
        })
        .unwrap_or_default();
    eprintln!("reclaim mechanism: {reclaim_hint}");
    // The mechanism line names that way where it leaves the charge path
    // every charging way shares (the read's page cache insertion).
    assert!(
        !reclaim_hint.contains("moved most:") || reclaim_hint.contains("filemap"),
        "{reclaim_hint}"
    );
    assert!(
        ab_moved
            .first()
            .is_some_and(|f| f.iter().any(|x| x == "vfs_read")),
        "the read is not the way that moved most: {ab_moved:?}\n{text}"
    );
    assert!(text.contains("ways in that moved"), "{text}");
    // The differential flame graph: the read drawn, in B's widths.
    let svg = dir.join("ab-entries.svg");
    let out = vmtrace(&["compare", "--force", "--flamegraph"])
        .arg(&svg)
        .args(&a)
        .arg("--vs")
        .args(&b)
        .output()
        .expect("compare --flamegraph");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let drawn = std::fs::read_to_string(&svg).expect("flame graph");
    assert!(drawn.contains("vfs_read") && drawn.contains("do_anonymous_page"));
    // A/A: the ways are tested at a family-wise 5% (Holm), so one A/A
    // pair in 20 may name a way by design. If this one does, fresh
    // interleaved A/A rounds must not (both false: 1 in 400; a bias
    // between A and A' names a way in both).
    let mut pair = (a, a2);
    for attempt in 0..2 {
        let aa: Value = crate::common::payload(&compare(&pair.0, &pair.1, true));
        let aa_text = compare(&pair.0, &pair.1, false);
        if moved(&aa).is_empty() {
            assert!(aa_text.contains("no way in moved"), "{aa_text}");
            break;
        }
        assert_eq!(attempt, 0, "A/A twice named a way:\n{aa_text}");
        eprintln!("A/A named a way: fresh A/A rounds decide");
        pair = (Vec::new(), Vec::new());
        for round in 0..3 {
            pair.0
                .push(run(&format!("aa0-r{round}.vmtrace.json"), &hog));
            pair.1
                .push(run(&format!("aa1-r{round}.vmtrace.json"), &hog));
        }
    }
    let _ = std::fs::remove_file(&file);
}

/// Global pressure with transparent huge pages (a hog 256 MiB larger
/// than the free memory, swap behind it, MADV_HUGEPAGE): its THP faults
/// find no free 2 MiB block and enter direct compaction (vmstat's
/// compact_stall moves). vmtrace's ways into compaction begin at
/// try_to_compact_pages, come through the THP fault
/// (do_huge_pmd_anonymous_page) for >= 90% of their time, with the THP
/// GFP mask as the kernel names it; all of it lies within the target's
/// compaction runs, and its time off the CPU is theirs.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn direct_compaction_is_entered_from_the_thp_fault() {
    if !std::path::Path::new(THP).exists() {
        eprintln!("skipped: this kernel has no transparent huge pages");
        return;
    }
    let _g = guard();
    let _thp = ThpSetting::not_never();
    let mib = global_hog_mib(256);
    let before = vmstat();
    let hog = ["--mib", &mib.to_string(), "--passes", "1", "--thp"];
    let r = json_ok(&mut run_memhog(true, &["--swap", "2G"], &hog));
    let stalls = delta(&before, &vmstat(), &["compact_stall"]);
    let n = |v: &Value, k: &str| v[k].as_u64().unwrap_or(0);
    let ways = compaction_ways(&r);
    let total: u64 = ways.iter().map(|w| n(w, "stall_ns")).sum();
    let thp: u64 = ways
        .iter()
        .filter(|w| frames(w).contains(&"do_huge_pmd_anonymous_page"))
        .map(|w| n(w, "stall_ns"))
        .sum();
    eprintln!(
        "compact_stall {stalls}; {} ways, {} runs, {total} ns, through the THP fault {thp} ns",
        ways.len(),
        ways.iter().map(|w| n(w, "count")).sum::<u64>()
    );
    assert!(stalls > 0, "no direct compaction happened: {r:#}");
    assert!(total > 0, "compact_stall {stalls} but no way in");
    assert!(thp as f64 >= 0.9 * total as f64, "{ways:#?}");
    let kallsyms = std::fs::read_to_string("/proc/kallsyms").expect("kallsyms");
    let functions: BTreeSet<&str> = kallsyms
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .collect();
    for w in &ways {
        assert_eq!(frames(w).first(), Some(&"try_to_compact_pages"), "{w:#}");
        for f in frames(w) {
            assert!(functions.contains(f), "{f} is not in /proc/kallsyms");
        }
        assert!(
            w["gfp_names"]
                .as_str()
                .is_some_and(|g| g.starts_with("GFP_TRANSHUGE")),
            "{w:#}"
        );
        assert_eq!(w["order"], 9, "{w:#}");
    }
    // The ways' time off the CPU is the target's compaction runs' (all
    // of them the hog's direct compaction here), measured apart.
    let split = &r["compaction"]["split"];
    let runs = n(split, "wall_ns");
    let off = |s: &Value| n(s, "runnable_ns") + n(s, "blocked_ns");
    let ways_off: u64 = ways.iter().map(|w| off(&w["split"])).sum();
    eprintln!("off the CPU: ways {ways_off} ns, runs {} ns", off(split));
    assert!(total <= runs + runs / 100, "ways {total} > runs {runs}");
    assert!(
        ways_off.abs_diff(off(split)) <= runs / 50 + 1_000_000,
        "ways {ways_off} vs runs {}",
        off(split)
    );
}
