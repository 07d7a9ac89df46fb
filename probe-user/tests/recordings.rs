//! Recordings without root: the corpus under tests/corpus/recording holds
//! real recordings made on this project's machines (`memhog-*`) and broken
//! ones (`bad-*`). Every view must read the good ones and agree with
//! them; every broken one must give one line naming the file and the
//! problem; no mutation of a good one may panic the reader (proptest).

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use proptest::prelude::*;
use serde_json::Value;
use vmtrace::{model::recording::Recording, view::report};

#[path = "support/python.rs"]
mod python;
use python::python_path;

const VMTRACE: &str = env!("CARGO_BIN_EXE_vmtrace");

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/recording")
}

fn corpus_files(prefix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(corpus())
        .expect("corpus dir")
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
        })
        .collect();
    v.sort();
    assert!(!v.is_empty(), "no {prefix}* files in the corpus");
    v
}

fn good() -> Vec<PathBuf> {
    corpus_files("memhog-")
}

fn vmtrace(args: &[&str]) -> std::process::Output {
    Command::new(VMTRACE)
        .args(args)
        .output()
        .expect("run vmtrace")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn broken_recordings_give_one_line_errors() {
    let expect = [
        ("bad-binary", "not JSON"),
        ("bad-empty", "empty file"),
        ("bad-field-type", "runs[0].report.usage.wall_s"),
        ("bad-future-version", "upgrade vmtrace"),
        (
            "bad-histogram-4gib",
            "memcg_reclaim: histogram payload declares 4294967295 bytes of counts, holds 0",
        ),
        ("bad-histogram-payload", "memcg_reclaim"),
        ("bad-not-a-recording", "not a vmtrace recording"),
        (
            "bad-reclaim-context",
            "lru_shrink_inactive[0].context: unknown variant `writeback`, expected one of \
             `kswapd`, `direct`, `memcg`, `other`",
        ),
        ("bad-truncated", "truncated"),
    ];
    let files = corpus_files("bad-");
    assert_eq!(
        files.len(),
        expect.len(),
        "a bad-* file without an expectation"
    );
    for (stem, want) in expect {
        let path = corpus().join(format!("{stem}.vmtrace.json"));
        let p = path.to_string_lossy().into_owned();
        for args in [
            vec!["report", p.as_str()],
            vec!["export", p.as_str(), "--format", "csv"],
        ] {
            let out = vmtrace(&args);
            let err = text(&out.stderr);
            assert_eq!(out.status.code(), Some(125), "{args:?}: {err}");
            assert_eq!(err.lines().count(), 1, "{args:?}: not one line: {err}");
            assert!(
                err.starts_with(&format!("vmtrace: error: {p}: ")) && err.contains(want),
                "{args:?}: {err:?} lacks {want:?}"
            );
            assert!(out.stdout.is_empty(), "{args:?} printed a partial report");
        }
    }
    let out = vmtrace(&["report", "/nonexistent/x.vmtrace.json"]);
    assert_eq!(out.status.code(), Some(125));
    assert!(text(&out.stderr).contains("cannot read /nonexistent/x.vmtrace.json"));
}

#[test]
fn report_shows_every_run_as_recorded() {
    for path in good() {
        let rec = vmtrace::host::recording_file::read(&path).expect("corpus recording reads");
        let out = vmtrace(&["report", &path.to_string_lossy()]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let shown = text(&out.stdout);
        for run in &rec.runs {
            // Not a terminal: no colour, so the run's own text verbatim.
            assert!(
                shown.contains(&report::to_text(&run.report)),
                "{}",
                path.display()
            );
            assert!(shown.contains(&report::time_line(&run.report)));
        }
        if !rec.complete {
            assert!(
                shown.contains("INCOMPLETE RECORDING: interrupted"),
                "{shown}"
            );
        }
        let json = vmtrace(&["report", "--json", &path.to_string_lossy()]);
        let v: Value = serde_json::from_slice(&json.stdout).expect("report --json is JSON");
        assert_eq!(v["format"], "vmtrace-report");
        let one = &v["recordings"][0];
        assert_eq!(one["format"], "vmtrace-recording");
        assert_eq!(one["runs"].as_array().map(Vec::len), Some(rec.runs.len()));
    }
}

#[test]
fn text_export_is_mail_ready() {
    for path in good() {
        let out = vmtrace(&["export", &path.to_string_lossy(), "--format", "text"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let t = text(&out.stdout);
        assert_eq!(
            vmtrace::view::export::text::violations(&t),
            vec![],
            "{}",
            path.display()
        );
        assert!(t.lines().count() > 50, "too short to be the report: {t}");
        assert!(t.contains("memcg reclaim:"), "{t}");
    }
}

#[test]
fn csv_exports_hold_the_reports_numbers() {
    let path = corpus().join("memhog-2runs.vmtrace.json");
    let rec = vmtrace::host::recording_file::read(&path).expect("reads");
    let out = vmtrace(&["export", &path.to_string_lossy(), "--format", "csv"]);
    let csv = text(&out.stdout);
    assert!(csv.starts_with("run,label,kernel,metric,value\n"));
    for (i, run) in rec.runs.iter().enumerate() {
        let r = &run.report;
        let stalls = &r.memcg_reclaim.as_ref().expect("memcg reclaim").stalls;
        for (metric, value) in [
            ("memcg_reclaim.stalls.p99_ns", stalls.p99_ns.to_string()),
            ("memcg_reclaim.stalls.count", stalls.count.to_string()),
            ("vmstat.pgscan", r.vmstat.pgscan.to_string()),
            ("usage.wall_s", r.usage.wall_s.to_string()),
        ] {
            let row = format!(
                "{},,{},{metric},{value}\n",
                i + 1,
                rec.environment.kernel_release
            );
            assert!(csv.contains(&row), "missing {row:?}");
        }
    }
    for line in csv.lines() {
        assert_eq!(line.split(',').count(), 5, "{line}");
    }
    let out = vmtrace(&["export", &path.to_string_lossy(), "--format", "series-csv"]);
    let series = text(&out.stdout);
    let steps: usize = rec.runs.iter().map(|r| r.report.timeline.len()).sum();
    assert_eq!(series.lines().count(), steps + 1);
    let width = series.lines().next().map_or(0, |h| h.split(',').count());
    assert!(series.lines().all(|l| l.split(',').count() == width));
}

/// Writes `rec` (the corpus's two-run recording, edited) to a scratch
/// file and returns its path.
fn hostile(name: &str, edit: &dyn Fn(&mut Value)) -> PathBuf {
    let mut rec: Value = serde_json::from_slice(
        &std::fs::read(corpus().join("memhog-2runs.vmtrace.json")).expect("corpus"),
    )
    .expect("corpus JSON");
    edit(&mut rec);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hostile-text");
    std::fs::create_dir_all(&dir).expect("scratch");
    let path = dir.join(format!("{name}.vmtrace.json"));
    std::fs::write(&path, serde_json::to_vec(&rec).expect("ser")).expect("write");
    path
}

/// What a terminal would act on: ESC, CR, BEL, NUL, C1, bidi overrides.
fn controls(s: &str) -> Vec<char> {
    s.chars()
        .filter(|&c| (c.is_control() && c != '\n') || ('\u{202a}'..='\u{202e}').contains(&c))
        .collect()
}

/// Text from a recording (a run's label, the kernel release, the
/// workload, the writer's version) reaches csv, compare's errors and the
/// format-version error escaped: `\x1b[2J` printed, not a cleared screen.
#[test]
fn a_recordings_control_characters_are_escaped_everywhere() {
    const EVIL: &str = "\u{1b}[2J\u{1b}]0;owned\u{7}\r\u{202e}x";
    const SHOWN: &str = "\\x1b[2J\\x1b]0;owned\\x07\\r\\u{202e}x";
    let csv_file = hostile("csv", &|r| {
        r["runs"][0]["label"] = EVIL.into();
        r["environment"]["kernel_release"] = format!("6.18{EVIL}").into();
    });
    for format in ["csv", "series-csv"] {
        let out = vmtrace(&["export", &csv_file.to_string_lossy(), "--format", format]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let csv = text(&out.stdout);
        assert_eq!(controls(&csv), vec![], "{format}");
        assert!(
            csv.contains(&format!("1,{SHOWN},")),
            "{format}: label not escaped"
        );
    }
    let future = hostile("future", &|r| {
        r["format_version"] = 9.into();
        r["vmtrace_version"] = format!("9.0{EVIL}\nvmtrace: error: forged").into();
    });
    let other = hostile("other-workload", &|r| {
        r["workload"]["name"] = format!("memhog{EVIL}").into();
    });
    let a = corpus().join("memhog-2runs.vmtrace.json");
    let cases = [
        (
            vec!["report".to_string(), future.to_string_lossy().into_owned()],
            format!("written by vmtrace 9.0{SHOWN}\\nvmtrace: error: forged)"),
        ),
        (
            [
                "compare",
                &a.to_string_lossy(),
                "--vs",
                &other.to_string_lossy(),
            ]
            .map(String::from)
            .to_vec(),
            format!("different workloads: `memhog --mib 200 --passes 1` vs `memhog{SHOWN} --mib"),
        ),
    ];
    for (args, want) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = vmtrace(&args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(125), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: not one line: {err:?}");
        assert_eq!(controls(&err), vec![], "{args:?}: {err:?}");
        assert!(err.contains(&want), "{args:?}: {err:?} lacks {want:?}");
    }
    // Forced, the warning in compare's text is escaped too.
    let out = vmtrace(&[
        "compare",
        "--force",
        &a.to_string_lossy(),
        "--vs",
        &other.to_string_lossy(),
    ]);
    let shown = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(shown.contains(&format!("memhog{SHOWN}")), "{shown}");
    assert_eq!(controls(&shown), vec![], "{shown}");
}

/// The hlog export, decoded by HdrHistogram's Python port (PyPI
/// `hdrhistogram`, installed by `cargo xtask setup`), gives vmtrace's own
/// count, p50, p90, p99 and max for every histogram of every run, and
/// its intervals add up to the whole run.
#[test]
fn hlog_decodes_in_hdrhistogram_python() {
    let pythonpath = python_path();
    assert!(
        Path::new(&pythonpath).join("hdrh").is_dir(),
        "the PyPI hdrhistogram package is not in {}: run `cargo xtask setup`",
        Path::new(&pythonpath).display()
    );
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    for path in good() {
        let rec = vmtrace::host::recording_file::read(&path).expect("reads");
        let hlog = dir.join(format!(
            "{}.hlog",
            path.file_stem().unwrap_or_default().to_string_lossy()
        ));
        let out = vmtrace(&[
            "export",
            &path.to_string_lossy(),
            "--format",
            "hlog",
            "-o",
            &hlog.to_string_lossy(),
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let head = std::fs::read_to_string(&hlog).expect("hlog written");
        assert!(head.contains("#[Histogram log format version 1.3]"));
        assert!(head.contains("#[StartTime: ") && head.contains("#[BaseTime: "));
        let py = Command::new("python3")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hlog_check.py"))
            .arg(&hlog)
            .env("PYTHONPATH", &pythonpath)
            .output()
            .expect("python3 runs");
        assert!(py.status.success(), "{}", text(&py.stderr));
        let got: Value = serde_json::from_slice(&py.stdout).expect("checker prints JSON");
        let mut checked = 0;
        for (i, run) in rec.runs.iter().enumerate() {
            let prefix = if rec.runs.len() > 1 {
                format!("run{}/", i + 1)
            } else {
                String::new()
            };
            for (h, s) in run.report.histograms() {
                if s.count == 0 {
                    continue;
                }
                let tag = format!("{prefix}{}", h.name());
                let w = &got[&tag]["whole_run"];
                for (key, want) in [
                    ("count", s.count),
                    ("p50", s.p50_ns),
                    ("p90", s.p90_ns),
                    ("p99", s.p99_ns),
                    ("max", s.max_ns),
                ] {
                    assert_eq!(w[key].as_u64(), Some(want), "{tag} {key}: {w}");
                }
                // Requests still in flight at the last sample complete
                // before the whole-run read: intervals may hold a little
                // less, never more.
                let intervals = got[&tag]["interval_count"].as_u64().unwrap_or(0);
                assert!(
                    intervals <= s.count && intervals as f64 >= 0.95 * s.count as f64,
                    "{tag}: intervals hold {intervals} of {}",
                    s.count
                );
                checked += 1;
            }
        }
        assert!(checked >= 4, "only {checked} histograms checked");
    }
}

#[test]
fn plots_render_as_svg_and_png() {
    let path = corpus().join("memhog-2runs.vmtrace.json");
    let p = path.to_string_lossy();
    let out = vmtrace(&["export", &p, &p, "--format", "svg"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let svg = text(&out.stdout);
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert_eq!(svg.matches("<svg").count(), svg.matches("</svg>").count());
    for needle in [
        "memcg reclaim stall",
        "percentile",
        "latency",
        "pages scanned",
    ] {
        assert!(svg.contains(needle), "no {needle:?} in the SVG");
    }
    assert!(!svg.contains("NaN") && !svg.contains("inf"));
    let png = Path::new(env!("CARGO_TARGET_TMPDIR")).join("plots.png");
    let out = vmtrace(&[
        "export",
        &p,
        "--format",
        "png",
        "-o",
        &png.to_string_lossy(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let bytes = std::fs::read(&png).expect("png written");
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n") && bytes.len() > 10_000);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Truncations and byte edits of real recordings: the reader returns
    /// an error or a recording, never panics, and errors are one line.
    #[test]
    fn reader_survives_mutations(
        which in 0usize..2,
        cut in 0.0f64..1.0,
        edits in proptest::collection::vec((0.0f64..1.0, any::<u8>()), 0..8),
    ) {
        let files = good();
        let bytes = std::fs::read(&files[which % files.len()]).expect("corpus");
        let mut b = bytes[..((bytes.len() as f64 * cut) as usize).max(1)].to_vec();
        if edits.is_empty() {
            b = bytes.clone();
        }
        for (at, byte) in &edits {
            let i = ((b.len() as f64) * at) as usize;
            if i < b.len() {
                b[i] = *byte;
            }
        }
        match Recording::from_bytes(&b) {
            Ok(rec) => {
                // Whatever was accepted renders.
                let _ = vmtrace::view::export::text::render(&rec);
                let _ = vmtrace::view::export::csv::to_string(|w| {
                    vmtrace::view::export::csv::metrics(&rec, w)
                });
                prop_assert!(vmtrace::view::export::hlog::render(&rec).is_ok());
            }
            Err(e) => {
                let msg = format!("{e:#}");
                prop_assert!(!msg.contains('\n'), "not one line: {}", msg);
            }
        }
    }
}

/// Every view of every good recording, byte for byte as blessed in
/// tests/corpus/golden (`VMTRACE_BLESS=1 cargo test --test recordings
/// golden` rewrites them). A change to a view's output is a change to
/// these files, reviewed in the commit that makes it.
#[test]
fn views_match_the_golden_files() {
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/golden");
    let bless = std::env::var_os("VMTRACE_BLESS").is_some();
    let files = good();
    let mut views: Vec<(String, Vec<String>)> = Vec::new();
    for path in &files {
        let stem = path
            .file_name()
            .map(|n| n.to_string_lossy().replace(".vmtrace.json", ""))
            .expect("file name");
        let p = path.to_string_lossy().into_owned();
        for (kind, args) in [
            ("report.txt", vec!["report", &p]),
            ("report.json", vec!["report", "--json", &p]),
            ("export.csv", vec!["export", &p, "--format", "csv"]),
            ("series.csv", vec!["export", &p, "--format", "series-csv"]),
            ("export.txt", vec!["export", &p, "--format", "text"]),
            ("export.svg", vec!["export", &p, "--format", "svg"]),
        ] {
            views.push((
                format!("{stem}.{kind}"),
                args.iter().map(|s| s.to_string()).collect(),
            ));
        }
    }
    // compare: the two runs of memhog-2runs as groups of one (split into
    // files of their own), and the recording against itself (two runs a
    // group).
    let two = corpus().join("memhog-2runs.vmtrace.json");
    let split = std::env::temp_dir().join(format!("vmtrace-golden-{}", std::process::id()));
    std::fs::create_dir_all(&split).expect("temp dir");
    let whole: Value =
        serde_json::from_str(&std::fs::read_to_string(&two).expect("reads")).expect("JSON");
    let mut halves = Vec::new();
    for i in 0..2 {
        let mut one = whole.clone();
        one["runs"] = Value::Array(vec![whole["runs"][i].clone()]);
        let f = split.join(format!("run{i}.vmtrace.json"));
        std::fs::write(&f, one.to_string()).expect("write half");
        halves.push(f.to_string_lossy().into_owned());
    }
    let two = two.to_string_lossy().into_owned();
    for (name, args) in [
        (
            "compare.txt",
            vec!["compare", &halves[0], "--vs", &halves[1]],
        ),
        (
            "compare.json",
            vec!["compare", &halves[0], "--vs", &halves[1], "--json"],
        ),
        (
            "compare-same.txt",
            vec!["compare", &two, "--vs", &two, "--detail"],
        ),
        (
            "compare-same.json",
            vec!["compare", &two, "--vs", &two, "--json"],
        ),
    ] {
        views.push((name.into(), args.iter().map(|s| s.to_string()).collect()));
    }
    let root = format!("{}/", env!("CARGO_MANIFEST_DIR"));
    for (name, args) in views {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = vmtrace(&args);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        // Paths in the output are the corpus's, wherever the tree is.
        let got = text(&out.stdout)
            .replace(&root, "")
            .replace(&format!("{}/", split.display()), "");
        let file = golden.join(&name);
        if bless {
            std::fs::create_dir_all(&golden).expect("golden dir");
            std::fs::write(&file, &got).expect("write golden");
            continue;
        }
        let want = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("{}: {e}; bless with VMTRACE_BLESS=1", file.display()));
        if got != want {
            let line = got
                .lines()
                .zip(want.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(got.lines().count().min(want.lines().count()));
            let _ = std::fs::remove_dir_all(&split);
            panic!(
                "{name} ({args:?}) differs from {} at line {}:\n got: {:?}\nwant: {:?}",
                file.display(),
                line + 1,
                got.lines().nth(line),
                want.lines().nth(line)
            );
        }
    }
    let _ = std::fs::remove_dir_all(&split);
}

/// The bless command of the checked-in generated files: the schemas
/// and the doc tables (the filter runs both tests).
const BLESS_GENERATED: &str = "VMTRACE_BLESS=1 cargo test -p vmtrace --test recordings checked_in";

/// The JSON Schemas under docs/schema are the ones vmtrace generates
/// from its types (`BLESS_GENERATED` rewrites them): a change to the
/// JSON is a change to these files, reviewed in the commit that makes it.
#[test]
fn checked_in_schemas_are_the_generated_ones() {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/schema");
    let bless = std::env::var_os("VMTRACE_BLESS").is_some();
    for name in vmtrace::view::json::SCHEMAS {
        let out = vmtrace(&["generate", "schema", name]);
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
        let file = docs.join(format!("{name}.schema.json"));
        if bless {
            std::fs::create_dir_all(&docs).expect("docs/schema");
            std::fs::write(&file, &out.stdout).expect("write schema");
            continue;
        }
        let want = std::fs::read(&file).unwrap_or_default();
        assert!(
            out.stdout == want,
            "{} is not what `vmtrace generate schema {name}` prints: bless with \
             {BLESS_GENERATED}",
            file.display()
        );
    }
    let out = vmtrace(&["generate", "schema", "nonesuch"]);
    let err = text(&out.stderr);
    assert!(
        !out.status.success() && err.contains("name one of: run"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}

/// The doc tables that list signals (the README's metrics,
/// PROMETHEUS.md's families, RECORDING.md's histograms) are, between
/// their marker lines, what `vmtrace generate docs TABLE` prints from
/// the catalogue and the views; `BLESS_GENERATED` rewrites them there.
#[test]
fn checked_in_doc_tables_are_the_generated_ones() {
    use vmtrace::view::docs::{self, DocTable};
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let bless = std::env::var_os("VMTRACE_BLESS").is_some();
    for t in DocTable::ALL {
        let out = vmtrace(&["generate", "docs", t.name()]);
        assert!(out.status.success(), "{}: {}", t.name(), text(&out.stderr));
        let file = root.join(t.file());
        let was = std::fs::read_to_string(&file).expect("a doc file");
        let now =
            docs::splice(&was, t.file(), t, &text(&out.stdout)).unwrap_or_else(|e| panic!("{e}"));
        if bless && now != was {
            std::fs::write(&file, &now).expect("write the doc");
            continue;
        }
        assert!(
            now == was,
            "{}: its `{}` table is not what `vmtrace generate docs {}` prints: \
             bless with {BLESS_GENERATED}",
            t.file(),
            t.name(),
            t.name()
        );
    }
    let out = vmtrace(&["generate", "docs", "nonesuch"]);
    let err = text(&out.stderr);
    assert!(
        !out.status.success() && err.contains("name one of: metrics"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}

/// Checks `docs` against `vmtrace generate schema NAME` with the PyPI
/// jsonschema validator (probe-user/tests/schema_check.py): its output
/// and whether every document was valid.
fn validate(name: &str, docs: &[PathBuf]) -> (String, bool) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let schema = dir.join(format!("{name}.schema.json"));
    let out = vmtrace(&["generate", "schema", name]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    std::fs::write(&schema, &out.stdout).expect("write schema");
    let py = Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schema_check.py"))
        .arg(&schema)
        .args(docs)
        .env("PYTHONPATH", python_path())
        .output()
        .expect("python3 runs");
    (
        format!("{}{}", text(&py.stdout), text(&py.stderr)),
        py.status.success(),
    )
}

/// Every golden JSON output (report and compare, each recording as
/// `export --format json` writes it, and the run, attach and probes
/// documents under docs/schema/examples, printed by real runs on this
/// project's machines) is valid against its command's generated schema,
/// checked by an independent validator (PyPI jsonschema); a document
/// with a field the schema does not know, at the top or deep inside, is
/// not.
#[test]
fn golden_json_is_valid_against_the_generated_schemas() {
    assert!(
        python_path().join("jsonschema").is_dir(),
        "the PyPI jsonschema package is not in {}: run `cargo xtask setup`",
        python_path().display()
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let golden = root.join("tests/corpus/golden");
    let examples = root.join("../docs/schema/examples");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let mut exported = Vec::new();
    for path in good() {
        let out = dir.join(path.file_name().expect("file name"));
        let ran = vmtrace(&[
            "export",
            &path.to_string_lossy(),
            "--format",
            "json",
            "-o",
            &out.to_string_lossy(),
        ]);
        assert!(ran.status.success(), "{}", text(&ran.stderr));
        exported.push(out);
    }
    let reports = corpus_files_in(&golden, ".report.json");
    let compares = corpus_files_in(&golden, ".json")
        .into_iter()
        .filter(|p| p.to_string_lossy().contains("compare"))
        .collect::<Vec<_>>();
    for (name, docs) in [
        ("report", reports),
        ("compare", compares.clone()),
        ("recording", exported),
        ("run", vec![examples.join("run.json")]),
        ("attach", vec![examples.join("attach.json")]),
        ("probes", vec![examples.join("probes.json")]),
    ] {
        assert!(!docs.is_empty(), "no {name} documents");
        let (said, valid) = validate(name, &docs);
        assert!(valid, "{name}: {said}");
        assert!(said.contains(&format!("{} valid", docs.len())), "{said}");
    }
    // The validator and the schema refuse what vmtrace would never print.
    let mut doc: Value =
        serde_json::from_str(&std::fs::read_to_string(&compares[0]).expect("golden"))
            .expect("JSON");
    doc["columns"][0]["comparison"]["versus"][0]["bogus_field"] = 1.into();
    let bad = dir.join("bogus-compare.json");
    std::fs::write(&bad, doc.to_string()).expect("write");
    let (said, valid) = validate("compare", &[bad]);
    assert!(!valid && said.contains("bogus_field"), "{said}");
}

/// The files in `dir` whose names end in `suffix`, sorted.
fn corpus_files_in(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("golden dir")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    v.sort();
    v
}
