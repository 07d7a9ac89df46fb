//! The shape of probe-user's source, checked: every import follows an
//! allowed edge between layers (`EDGES`, a table, not a line), the pure
//! layers (model, analysis, view) never touch the eBPF crates, the file
//! system or the environment, no layer but host names a /proc or /sys
//! path (a few named exceptions, each with its reason), and every unit
//! is one a reader can hold (files <= 700 lines of code, functions <= 100
//! lines; the size rule in every crate of the workspace), and no two
//! modules of a crate import each other, directly or round a circle
//! (`circles`). Unit-test
//! modules are left out of every rule (a test may build its input from
//! any layer and read its fixtures): a top-level `#[cfg(test)] mod` to
//! the end of its file, and the files such a `mod x;` names. Only those:
//! a `#[cfg(test)]` inside a macro or on a helper function does not end
//! the code. docs/ARCHITECTURE.md says what each layer holds.

use std::path::{Path, PathBuf};

#[path = "architecture/circles.rs"]
mod circles;

/// The layers and the layers each may import besides its own: view
/// prints what analysis computes from the model; kernel reads the
/// machine through host; session and cli may use everything below them.
const EDGES: &[(&str, &[&str])] = &[
    ("model", &[]),
    ("host", &["model"]),
    ("kernel", &["host", "model"]),
    ("analysis", &["model"]),
    ("view", &["analysis", "model"]),
    ("session", &["view", "analysis", "kernel", "host", "model"]),
    (
        "cli",
        &["session", "view", "analysis", "kernel", "host", "model"],
    ),
];

/// Crates a layer must not use: the model is plain data, analysis and
/// views compute and print from it (no eBPF, no async runtime).
const FORBIDDEN: &[(&str, &[&str])] = &[
    ("model", &["aya", "aya_log", "tokio"]),
    ("analysis", &["aya", "aya_log", "tokio"]),
    ("view", &["aya", "aya_log", "tokio"]),
];

/// The layers that do no I/O of their own: no `std::fs`, `std::env`,
/// `File`, `OpenOptions` (their callers hand them data and write what
/// they return).
const PURE: &[&str] = &["model", "analysis", "view"];

/// Files outside host/ that may name a /proc or /sys path, and why.
const MACHINE_PATHS: &[(&str, &str)] = &[
    (
        "kernel/btf.rs",
        "the kernel's BTF (/sys/kernel/btf/vmlinux), read by the loader",
    ),
    (
        "kernel/tracefs.rs",
        "tracefs itself: where it is mounted, and mounting it",
    ),
    (
        "view/prometheus/mod.rs",
        "names /proc/vmstat in a HELP text as the counter's source; reads nothing",
    ),
    (
        "view/report/text/lru.rs",
        "names /proc/vmstat in a row as its source; reads nothing",
    ),
];

const MAX_FILE_LINES: usize = 700;
const MAX_FN_LINES: usize = 100;

/// Files whose bulk is a table of data, not code: exempt from the file
/// size rule (never from the function rule), each with its reason.
const DATA_TABLES: &[(&str, &str)] = &[];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

struct Source {
    /// Path under src/, with `/`.
    rel: String,
    /// The module path of the file (`view::report::text`).
    module: Vec<String>,
    /// The lines before the unit tests, comments blanked.
    code: Vec<String>,
}

/// probe-user's sources, under the layer rules, with the model's crate
/// (probe-user/model, re-exported as `vmtrace::model`) as its `model`
/// layer: its files' `crate::` is the model's root, so it reads here as
/// `crate::model::`, and the crate boundary itself keeps it from
/// importing anything above.
fn sources() -> Vec<Source> {
    let mut all = sources_under(&src());
    let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("model/src");
    for mut s in sources_under(&model) {
        s.rel = format!("model/{}", s.rel);
        s.module.insert(0, "model".to_string());
        for line in &mut s.code {
            *line = line.replace("crate::", "crate::model::");
        }
        all.push(s);
    }
    all
}

/// Every crate's sources in the workspace, under the size rule (`rel`
/// then starts with the crate's directory).
fn workspace_sources() -> Vec<Source> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut all = Vec::new();
    for krate in [
        "probe-user",
        "probe-user/model",
        "probe-ebpf",
        "probe-ebpf/common",
        "xtask",
        "xtask/bench",
        "workloads",
    ] {
        let dir = root.join(krate).join("src");
        assert!(dir.is_dir(), "{} is gone: update this list", dir.display());
        for mut s in sources_under(&dir) {
            s.rel = format!("{krate}/src/{}", s.rel);
            all.push(s);
        }
    }
    all
}

/// The lines of a file before its unit tests (a top-level
/// `#[cfg(test)]` whose item is a `mod`), comments blanked.
fn code_of(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let tests_at = (0..lines.len()).find(|&i| {
        lines[i] == "#[cfg(test)]"
            && lines[i + 1..]
                .iter()
                .find(|l| !l.starts_with("#["))
                .is_some_and(|l| is_mod_item(l))
    });
    lines[..tests_at.unwrap_or(lines.len())]
        .iter()
        .map(|l| {
            if l.trim_start().starts_with("//") {
                String::new()
            } else {
                l.to_string()
            }
        })
        .collect()
}

/// `mod x {`, `mod x;`, `pub(crate) mod x;` ... at the start of a line.
fn is_mod_item(line: &str) -> bool {
    let mut l = line;
    for prefix in ["pub(crate) ", "pub(super) ", "pub "] {
        l = l.strip_prefix(prefix).unwrap_or(l);
    }
    l.starts_with("mod ")
}

/// The files that unit-test modules declared `#[cfg(test)] mod x;` are
/// (with everything below them).
fn test_module_files(files: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for path in files {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        let lines: Vec<&str> = text.lines().collect();
        // Where a child module's file lives: beside mod.rs, lib.rs and
        // main.rs, else in the directory named like this file.
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let dir = match stem {
            "mod" | "lib" | "main" => path.parent().map(Path::to_path_buf),
            _ => path.parent().map(|p| p.join(stem)),
        };
        let Some(dir) = dir else { continue };
        for (i, l) in lines.iter().enumerate() {
            let Some(name) = l
                .trim()
                .strip_prefix("mod ")
                .and_then(|r| r.strip_suffix(';'))
            else {
                continue;
            };
            if i > 0 && lines[i - 1].trim() == "#[cfg(test)]" {
                out.push(dir.join(format!("{name}.rs")));
                out.push(dir.join(name));
            }
        }
    }
    out
}

fn sources_under(root: &Path) -> Vec<Source> {
    let mut files = Vec::new();
    walk(root, &mut files);
    files.sort();
    let tests = test_module_files(&files);
    files
        .into_iter()
        .filter(|f| !tests.iter().any(|t| f.starts_with(t)))
        .map(|path| {
            let rel = path
                .strip_prefix(root)
                .expect("under src")
                .to_string_lossy()
                .replace('\\', "/");
            let mut module: Vec<String> = rel
                .trim_end_matches(".rs")
                .split('/')
                .map(str::to_string)
                .collect();
            if module
                .last()
                .is_some_and(|m| m == "mod" || m == "lib" || m == "main")
            {
                module.pop();
            }
            let text = std::fs::read_to_string(&path).expect("read source");
            let code = code_of(&text);
            Source { rel, module, code }
        })
        .collect()
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
        let p = entry.path();
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The layers `layer` may import besides itself (None: not a layer).
fn allowed(layer: &str) -> Option<&'static [&'static str]> {
    EDGES.iter().find(|(l, _)| *l == layer).map(|(_, a)| *a)
}

fn layer_names() -> Vec<&'static str> {
    EDGES.iter().map(|(l, _)| *l).collect()
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The top-level modules named by `crate::x`, `crate::{x, y::z}` and
/// `super::` chains that climb to the crate root, in one file.
fn top_level_names(s: &Source) -> Vec<String> {
    let text = s.code.join("\n");
    let mut names = Vec::new();
    let mut rest = text.as_str();
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().last();
        rest = &rest[i + "crate::".len()..];
        if before.is_some_and(is_ident) {
            continue; // vmtrace_crate:: or similar
        }
        names.extend(path_heads(rest));
    }
    // super::super::...: climbs from the file's module.
    for line in &s.code {
        let mut l = line.as_str();
        while let Some(i) = l.find("super::") {
            let mut tail = &l[i..];
            let mut ups = 0;
            while let Some(t) = tail.strip_prefix("super::") {
                ups += 1;
                tail = t;
            }
            // Climbing to the crate root names a layer next; short of
            // it, the path stays inside the file's own layer.
            if ups >= s.module.len() {
                names.extend(path_heads(tail));
            }
            l = tail;
        }
    }
    names
}

/// The first identifiers of a path's rest: `x::...` gives x,
/// `{x, y::{..}}` gives x and y.
fn path_heads(rest: &str) -> Vec<String> {
    if let Some(group) = rest.strip_prefix('{') {
        let mut depth = 0;
        let mut heads = Vec::new();
        let mut at_start = true;
        let mut word = String::new();
        for c in group.chars() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => break,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    at_start = true;
                    continue;
                }
                _ => {}
            }
            if at_start && depth == 0 {
                if is_ident(c) {
                    word.push(c);
                    continue;
                }
                if !word.is_empty() {
                    heads.push(std::mem::take(&mut word));
                    at_start = false;
                } else if !c.is_whitespace() {
                    at_start = false;
                }
            }
        }
        if !word.is_empty() {
            heads.push(word);
        }
        heads
    } else {
        vec![rest.chars().take_while(|&c| is_ident(c)).collect()]
    }
}

#[test]
fn every_import_points_down_the_layers() {
    let sources = sources();
    let layered = sources.iter().filter(|s| !s.module.is_empty()).count();
    assert!(layered > 20, "found only {layered} layered files");
    let wrong = layer_violations(&sources);
    assert!(wrong.is_empty(), "layering broken:\n{}", wrong.join("\n"));
}

/// Every import of a higher layer, every file outside a layer, every
/// forbidden crate, one line each.
fn layer_violations(sources: &[Source]) -> Vec<String> {
    let mut wrong = Vec::new();
    for s in sources {
        let Some(layer) = s.module.first() else {
            continue; // lib.rs, main.rs: the crate's root
        };
        let Some(may) = allowed(layer) else {
            wrong.push(format!("{}: not in a layer ({:?})", s.rel, layer_names()));
            continue;
        };
        for name in top_level_names(s) {
            if name == *layer || may.contains(&name.as_str()) {
                continue;
            }
            if allowed(&name).is_some() {
                wrong.push(format!(
                    "{}: {layer} imports crate::{name}, not an allowed edge",
                    s.rel
                ));
            } else {
                wrong.push(format!("{}: crate::{name} is not a layer", s.rel));
            }
        }
        for (l, crates) in FORBIDDEN {
            if l != layer {
                continue;
            }
            for c in *crates {
                let hit = s.code.iter().any(|line| {
                    line.split(|ch: char| !is_ident(ch) && ch != ':')
                        .any(|w| w.starts_with(&format!("{c}::")))
                });
                if hit {
                    wrong.push(format!("{}: {layer} uses the {c} crate", s.rel));
                }
            }
        }
    }
    wrong
}

#[test]
fn machine_reads_live_in_host() {
    let wrong = io_violations(&sources());
    assert!(
        wrong.is_empty(),
        "machine I/O outside host/:\n{}",
        wrong.join("\n")
    );
}

/// Paths of the standard library that do I/O on the machine.
const IO_PATHS: &[&str] = &[
    "std::fs",
    "fs::",
    "std::env",
    "env::",
    "File::",
    "OpenOptions",
];

/// Every file-system or environment use in a pure layer, and every
/// /proc or /sys path named outside host/ (but the exceptions), one line
/// each.
fn io_violations(sources: &[Source]) -> Vec<String> {
    let mut wrong = Vec::new();
    for s in sources {
        let Some(layer) = s.module.first() else {
            continue;
        };
        let code = s.code.join("\n");
        if PURE.contains(&layer.as_str()) {
            let uses_io = |p: &str| {
                code.match_indices(p).any(|(i, _)| {
                    let before = code[..i].chars().last();
                    !before.is_some_and(|c| is_ident(c) || (c == ':' && !p.starts_with("std")))
                })
            };
            let group = code.contains("use std::{")
                && code.split("use std::{").skip(1).any(|g| {
                    let items = g.split('}').next().unwrap_or("");
                    items
                        .split(|c: char| !is_ident(c))
                        .any(|w| w == "fs" || w == "env")
                });
            for p in IO_PATHS.iter().filter(|p| uses_io(p)) {
                wrong.push(format!("{}: {layer} does I/O ({p})", s.rel));
            }
            if group {
                wrong.push(format!("{}: {layer} imports std's fs or env", s.rel));
            }
        }
        let exempt = MACHINE_PATHS.iter().any(|(f, _)| *f == s.rel);
        if layer != "host" && !exempt && (code.contains("\"/proc/") || code.contains("\"/sys/")) {
            wrong.push(format!(
                "{}: names a /proc or /sys path outside host/",
                s.rel
            ));
        }
    }
    wrong
}

/// A function's line count: from its `fn` line to the `}` at the same
/// indentation (rustfmt's layout).
fn long_functions(s: &Source) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for (i, line) in s.code.iter().enumerate() {
        let trimmed = line.trim_start();
        let indent = &line[..line.len() - trimmed.len()];
        let mut sig = trimmed;
        for prefix in [
            "pub(crate) ",
            "pub(super) ",
            "pub ",
            "const ",
            "async ",
            "unsafe ",
        ] {
            sig = sig.strip_prefix(prefix).unwrap_or(sig);
        }
        let Some(name) = sig.strip_prefix("fn ") else {
            continue;
        };
        if trimmed.ends_with(';') {
            continue;
        }
        let close = format!("{indent}}}");
        let Some(len) = s.code[i + 1..].iter().position(|l| *l == close) else {
            continue;
        };
        let name: String = name.chars().take_while(|&c| is_ident(c)).collect();
        out.push((name, len + 2));
    }
    out
}

#[test]
fn files_and_functions_fit_in_a_readers_head() {
    let wrong = size_violations(&workspace_sources());
    assert!(wrong.is_empty(), "too long:\n{}", wrong.join("\n"));
}

/// Every file and function over the size rule, one line each.
fn size_violations(sources: &[Source]) -> Vec<String> {
    let mut wrong = Vec::new();
    for s in sources {
        let exempt = DATA_TABLES.iter().any(|(f, _)| *f == s.rel);
        if s.code.len() > MAX_FILE_LINES && !exempt {
            wrong.push(format!(
                "{}: {} lines of code (at most {MAX_FILE_LINES})",
                s.rel,
                s.code.len()
            ));
        }
        for (name, len) in long_functions(s) {
            if len > MAX_FN_LINES {
                wrong.push(format!(
                    "{}: fn {name} is {len} lines (at most {MAX_FN_LINES})",
                    s.rel
                ));
            }
        }
    }
    wrong
}

/// probe-user with its model (one graph: the model's paths read as
/// `crate::model::`), the eBPF programs, the types they share with
/// userspace, and xtask, the bench and the workloads.
#[test]
fn no_modules_import_each_other_round_a_circle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    // With at least this many edges each (below what each has now): a
    // graph read, not one left empty by a parser gone blind.
    let crates = [
        ("probe-user", sources(), 100),
        (
            "probe-ebpf",
            sources_under(&root.join("probe-ebpf/src")),
            20,
        ),
        (
            "probe-ebpf/common",
            sources_under(&root.join("probe-ebpf/common/src")),
            3,
        ),
        ("xtask", sources_under(&root.join("xtask/src")), 10),
        (
            "xtask/bench",
            sources_under(&root.join("xtask/bench/src")),
            8,
        ),
        ("workloads", sources_under(&root.join("workloads/src")), 4),
    ];
    let mut found = Vec::new();
    for (krate, sources, least) in &crates {
        let edges = circles::sibling_edges(sources).len();
        assert!(
            edges >= *least,
            "{krate}: only {edges} edges between modules"
        );
        found.extend(
            circles::circles(sources)
                .into_iter()
                .map(|c| format!("{krate}: {c}")),
        );
    }
    assert!(
        found.is_empty(),
        "modules import each other round a circle (move what both need \
         down, into the lower one or a module of its own):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_checks_themselves_catch_what_they_must() {
    let fake = |rel: &str, module: &[&str], code: &str| Source {
        rel: rel.into(),
        module: module.iter().map(|m| m.to_string()).collect(),
        code: code.lines().map(str::to_string).collect(),
    };
    let s = fake(
        "model/x.rs",
        &["model", "x"],
        "use crate::{\n    host::proc,\n    model::units::human,\n};\nfn f() { crate::view::report::x(); super::super::session::run(); }",
    );
    assert_eq!(top_level_names(&s), ["host", "model", "view", "session"]);
    // A `#[cfg(test)]` inside a macro (indented) or on a helper does not
    // end the code: a call planted after it into a layer above is seen.
    let planted = code_of(
        "macro_rules! measures {\n    () => {\n        #[cfg(test)]\n        fn t() {}\n        \
         fn f() { crate::host::proc::x(); }\n    };\n}\n#[cfg(test)]\nfn helper() {}\n\
         fn g() { crate::session::run(); }\n#[cfg(test)]\nmod tests {\n    fn h() { crate::cli::x(); }\n}\n",
    );
    assert_eq!(planted.len(), 10, "{planted:#?}");
    let planted = Source {
        rel: "analysis/measures.rs".into(),
        module: vec!["analysis".into(), "measures".into()],
        code: planted,
    };
    assert_eq!(top_level_names(&planted), ["host", "session"]);
    assert_eq!(
        layer_violations(&[planted]),
        [
            "analysis/measures.rs: analysis imports crate::host, not an allowed edge",
            "analysis/measures.rs: analysis imports crate::session, not an allowed edge",
        ]
    );
    let long = fake(
        "view/y.rs",
        &["view", "y"],
        &format!("pub fn f() {{\n{}}}\n", "    x();\n".repeat(120)),
    );
    assert_eq!(long_functions(&long), [("f".to_string(), 122)]);
    // A lower layer naming a higher one, an unlayered file, the model
    // using aya, a long function and a long file are each reported.
    let layers = layer_violations(&[
        s,
        fake("stray/z.rs", &["stray", "z"], ""),
        fake("model/w.rs", &["model", "w"], "use aya::maps::HashMap;"),
        fake(
            "kernel/ok.rs",
            &["kernel", "ok"],
            "use crate::{host::proc, model::report};",
        ),
    ]);
    assert_eq!(
        layers,
        [
            "model/x.rs: model imports crate::host, not an allowed edge",
            "model/x.rs: model imports crate::view, not an allowed edge",
            "model/x.rs: model imports crate::session, not an allowed edge",
            "stray/z.rs: not in a layer ([\"model\", \"host\", \"kernel\", \"analysis\", \"view\", \"session\", \"cli\"])",
            "model/w.rs: model uses the aya crate",
        ]
    );
    // Edges that skip the table: view reading the kernel, analysis
    // reading the host; an edge the table allows passes.
    let edges = layer_violations(&[
        fake(
            "view/v.rs",
            &["view", "v"],
            "use crate::kernel::probes::Listed;",
        ),
        fake(
            "analysis/a.rs",
            &["analysis", "a"],
            "use crate::{host::proc, model::report};",
        ),
        fake(
            "view/ok.rs",
            &["view", "ok"],
            "use crate::analysis::Measure;",
        ),
    ]);
    assert_eq!(
        edges,
        [
            "view/v.rs: view imports crate::kernel, not an allowed edge",
            "analysis/a.rs: analysis imports crate::host, not an allowed edge",
        ]
    );
    // A file read in a pure layer, env in another, a /proc path in the
    // kernel layer; host may name /proc; a fixture read in a test is fine.
    let io = io_violations(&[
        fake(
            "model/r.rs",
            &["model", "r"],
            "fn f() { let _ = std::fs::read_to_string(p); }",
        ),
        fake("analysis/e.rs", &["analysis", "e"], "use std::{env, fmt};"),
        fake(
            "kernel/p.rs",
            &["kernel", "p"],
            "const Z: &str = \"/sys/module/zswap/parameters/enabled\";",
        ),
        fake(
            "host/ok.rs",
            &["host", "ok"],
            "let _ = fs::read(\"/proc/vmstat\");",
        ),
        fake("view/fmt.rs", &["view", "fmt"], "use std::fmt::Write as _;"),
    ]);
    assert_eq!(
        io,
        [
            "model/r.rs: model does I/O (std::fs)",
            "analysis/e.rs: analysis imports std's fs or env",
            "kernel/p.rs: names a /proc or /sys path outside host/",
        ]
    );
    let big = fake(
        "view/big.rs",
        &["view", "big"],
        &"x\n".repeat(MAX_FILE_LINES + 1),
    );
    assert_eq!(
        size_violations(&[long, big]),
        [
            "view/y.rs: fn f is 122 lines (at most 100)",
            "view/big.rs: 701 lines of code (at most 700)",
        ]
    );
}
