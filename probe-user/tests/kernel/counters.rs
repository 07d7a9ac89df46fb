//! The kernel's THP, mTHP, compaction and swap readahead counters in the
//! report against the same counters read around the run: a memory hog
//! that faults transparent huge pages (MADV_HUGEPAGE, 2 MiB aligned) in
//! a box smaller than itself, so that it also swaps out and reads back
//! (swap_ra). The counters are machine-wide: the report's window lies
//! inside the test's, so each report figure is at most the test's delta
//! and at most a little below it (other tasks' events in the gaps).

use std::path::Path;

use serde_json::Value;

use crate::common::{delta, fresh_scratch, guard, memhog, recording, text_ok, vmstat, vmtrace};

pub const THP: &str = "/sys/kernel/mm/transparent_hugepage/enabled";
const MTHP_2M: &str = "/sys/kernel/mm/transparent_hugepage/hugepages-2048kB/stats/anon_fault_alloc";

/// THP set to `madvise` for the test when it was `never`, put back when
/// dropped (also when the test fails).
pub struct ThpSetting(Option<String>);

impl ThpSetting {
    pub fn not_never() -> ThpSetting {
        let now = std::fs::read_to_string(THP).unwrap_or_default();
        if now.contains("[never]") {
            std::fs::write(THP, "madvise").expect("set THP to madvise");
            ThpSetting(Some("never".into()))
        } else {
            ThpSetting(None)
        }
    }
}

impl Drop for ThpSetting {
    fn drop(&mut self) {
        if let Some(v) = &self.0 {
            let _ = std::fs::write(THP, v);
        }
    }
}

fn mthp_2m() -> Option<u64> {
    std::fs::read_to_string(MTHP_2M).ok()?.trim().parse().ok()
}

/// The report's figure for a counter is the test's delta, give or take
/// what other tasks did while vmtrace was starting and stopping.
fn check(name: &str, report: Option<u64>, test: u64, slack: u64) {
    let report = report.unwrap_or_else(|| panic!("{name}: not in the report"));
    eprintln!("{name}: report {report}, /proc/vmstat delta {test}");
    assert!(report <= test, "{name}: report {report} > delta {test}");
    assert!(
        test - report <= slack.max(test / 100),
        "{name}: report {report}, delta {test}"
    );
}

fn field(v: &Value, key: &str) -> Option<u64> {
    v[key].as_u64()
}

/// THP faults equal thp_fault_alloc (and the 2048kB mTHP count where
/// the kernel has it), compaction and readahead counters equal their
/// deltas, the text report shows them with their sources, and the
/// series CSV has the machine's LRU sizes at every sample.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn thp_compaction_and_readahead_equal_the_vmstat_deltas() {
    if !Path::new(THP).exists() {
        eprintln!("skipped: this kernel has no transparent huge pages");
        return;
    }
    let _g = guard();
    let _thp = ThpSetting::not_never();
    let dir = fresh_scratch("counters");
    let path = dir.join("thp.vmtrace.json");
    let path_s = path.to_string_lossy().into_owned();
    let (before, mthp_before) = (vmstat(), mthp_2m());
    // The job first compacts every zone (vm.compact_memory: the
    // compaction scanners run, machine-wide, so compact_*_scanned move;
    // compact_stall counts only direct compaction, which a machine with
    // free 2 MiB blocks does not need), then faults its THPs.
    let out = vmtrace(&["run", "--progress", "none", "--mem", "192M", "--swap", "1G"])
        .args(["-o", &path_s, "--", "sh", "-c"])
        .arg("echo 1 > /proc/sys/vm/compact_memory && exec \"$0\" \"$@\"")
        .arg(memhog())
        .args(["--mib", "320", "--passes", "1", "--thp"])
        .output()
        .expect("run vmtrace");
    let (after, mthp_after) = (vmstat(), mthp_2m());
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let rec = recording(&path);
    let r = &rec["runs"][0]["report"];
    // The box's v1 memcg may OOM-kill the hog when reclaim keeps finding
    // its THP swap-outs still under writeback (one CI run in many); the
    // counters over the window must still equal the deltas.
    if !out.status.success() {
        assert_eq!(r["exit"]["oom_killed"], true, "{text}");
        eprintln!("notice: the hog was OOM-killed by its box; counters still checked");
    }
    let d = |k: &str| delta(&before, &after, &[k]);

    let thp = &r["thp"];
    // 320 MiB in 2 MiB frames: 160 THP faults, less any fallbacks.
    let faults = field(thp, "fault_alloc");
    check("thp_fault_alloc", faults, d("thp_fault_alloc"), 2);
    assert!(faults.unwrap_or(0) >= 80, "few THP faults: {thp}");
    for (k, v) in [
        ("thp_fault_fallback", "fault_fallback"),
        ("thp_fault_fallback_charge", "fault_fallback_charge"),
        ("thp_swpout", "swpout"),
        ("thp_swpout_fallback", "swpout_fallback"),
        ("thp_split_page", "split_page"),
    ] {
        check(k, field(thp, v), d(k), 2);
    }
    if let (Some(b), Some(a)) = (mthp_before, mthp_after) {
        let sizes = thp["sizes"].as_array().expect("mTHP sizes");
        let big = sizes
            .iter()
            .find(|s| s["size"] == "2048kB")
            .expect("2048kB");
        check(
            "2048kB anon_fault_alloc",
            field(big, "anon_fault_alloc"),
            a - b,
            2,
        );
        assert_eq!(field(big, "anon_fault_alloc"), faults, "mTHP vs thp_*");
    }
    let c = &r["compaction_counters"];
    for (k, v, slack) in [
        ("compact_stall", "stall", 2),
        ("compact_fail", "fail", 2),
        ("compact_success", "success", 2),
        ("compact_daemon_wake", "daemon_wake", 2),
        ("compact_migrate_scanned", "migrate_scanned", 4096),
        ("compact_free_scanned", "free_scanned", 4096),
    ] {
        check(k, field(c, v), d(k), slack);
    }
    let ra = field(&r["swap_causes"], "swap_ra");
    check("swap_ra", ra, d("swap_ra"), 64);
    check(
        "swap_ra_hit",
        field(&r["swap_causes"], "swap_ra_hit"),
        d("swap_ra_hit"),
        64,
    );
    assert!(d("pswpout") > 0, "the job did not swap");
    assert!(d("compact_migrate_scanned") > 0, "no compaction ran");
    // vmtrace's own compaction runs (eBPF) saw the same compaction.
    assert!(
        r["compaction"]["all_tasks"].as_u64() > Some(0),
        "{}",
        r["compaction"]
    );
    direct_compaction_ways(r, d("compact_stall"));

    assert!(
        text.contains("transparent huge pages (all tasks, /proc/vmstat)"),
        "{text}"
    );
    assert!(text.contains("thp_fault_alloc"), "{text}");
    assert!(text.contains("LRU lists, whole machine"), "{text}");
    assert!(
        text.contains("compaction events (all tasks, /proc/vmstat)"),
        "{text}"
    );
    let series = text_ok(&mut vmtrace(&["export", &path_s, "--format", "series-csv"]));
    let mut lines = series.lines();
    let head: Vec<&str> = lines.next().expect("header").split(',').collect();
    // Each list may be empty at a sample (this machine's active anon
    // list holds 15-25 pages, and read 0 once at a run's last sample);
    // the four together never are while the hog runs.
    let cols: Vec<usize> = [
        "machine_nr_inactive_anon",
        "machine_nr_active_anon",
        "machine_nr_inactive_file",
        "machine_nr_active_file",
    ]
    .iter()
    .map(|c| head.iter().position(|h| h == c).expect("LRU column"))
    .collect();
    let rows: Vec<&str> = lines.collect();
    assert!(!rows.is_empty(), "no samples");
    for row in rows {
        let fields: Vec<&str> = row.split(',').collect();
        let sizes: Vec<Option<u64>> = cols
            .iter()
            .map(|&c| fields.get(c).and_then(|v| v.parse().ok()))
            .collect();
        assert!(sizes.iter().all(Option::is_some), "{row}");
        assert!(sizes.iter().flatten().sum::<u64>() > 0, "{row}");
    }
}

/// Where direct compaction was entered (probe-ebpf entry): the job's own
/// compact_memory write runs compaction too, but not as an allocation's
/// direct compaction (no PF_MEMALLOC), so with no compact_stall there is
/// no way in; with some, each way begins at try_to_compact_pages and
/// their time lies within the target's compaction runs.
fn direct_compaction_ways(r: &Value, compact_stall: u64) {
    let ways = crate::entries::compaction_ways(r);
    let n = |v: &Value, k: &str| v[k].as_u64().unwrap_or(0);
    let runs: u64 = ways.iter().map(|w| n(w, "count")).sum();
    eprintln!(
        "direct compaction: {} ways, {runs} runs; compact_stall {compact_stall}",
        ways.len()
    );
    if compact_stall == 0 {
        assert!(ways.is_empty(), "{ways:#?}");
        return;
    }
    assert!(runs > 0, "compact_stall {compact_stall} but no way in");
    for w in &ways {
        assert_eq!(w["frames"][0], "try_to_compact_pages", "{w:#}");
    }
    // The ways' time is within the target's compaction runs (the
    // compact_memory ones too).
    let total: u64 = ways.iter().map(|w| n(w, "stall_ns")).sum();
    let all = n(&r["compaction"]["split"], "wall_ns");
    assert!(total <= all + all / 100, "ways {total} > runs {all}");
}
