//! xtask's units fit in a reader's head: the size rules that
//! probe-user/tests/architecture.rs applies to probe-user (files <= 700
//! lines of code, functions <= 100 lines), counted the same way. Unit-test
//! modules (`#[cfg(test)]` to the end of a file) are left out, and comment
//! lines count as blank.

use std::path::{Path, PathBuf};

const MAX_FILE_LINES: usize = 700;
const MAX_FN_LINES: usize = 100;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

struct Source {
    /// Path under src/, with `/`.
    rel: String,
    /// The lines before the unit tests, comments blanked.
    code: Vec<String>,
}

fn sources() -> Vec<Source> {
    let mut files = Vec::new();
    walk(&src(), &mut files);
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let rel = path
                .strip_prefix(src())
                .expect("under src")
                .to_string_lossy()
                .replace('\\', "/");
            let text = std::fs::read_to_string(&path).expect("read source");
            let code = text
                .lines()
                .take_while(|l| l.trim() != "#[cfg(test)]")
                .map(|l| {
                    if l.trim_start().starts_with("//") {
                        String::new()
                    } else {
                        l.to_string()
                    }
                })
                .collect();
            Source { rel, code }
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

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// A function's line count: from its `fn` line to the `}` at the same
/// indentation (rustfmt's layout).
fn functions(s: &Source) -> Vec<(String, usize)> {
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

/// Every file and function over the size rule, one line each.
fn size_violations(sources: &[Source]) -> Vec<String> {
    let mut wrong = Vec::new();
    for s in sources {
        if s.code.len() > MAX_FILE_LINES {
            wrong.push(format!(
                "{}: {} lines of code (at most {MAX_FILE_LINES})",
                s.rel,
                s.code.len()
            ));
        }
        for (name, len) in functions(s) {
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

#[test]
fn files_and_functions_fit_in_a_readers_head() {
    let sources = sources();
    assert!(sources.len() > 10, "found only {} files", sources.len());
    let wrong = size_violations(&sources);
    assert!(wrong.is_empty(), "too long:\n{}", wrong.join("\n"));
}

#[test]
fn the_check_itself_catches_what_it_must() {
    let fake = |rel: &str, code: &str| Source {
        rel: rel.into(),
        code: code.lines().map(str::to_string).collect(),
    };
    let long = fake(
        "bench/y.rs",
        &format!("pub fn f() {{\n{}}}\n", "    x();\n".repeat(120)),
    );
    assert_eq!(functions(&long), [("f".to_string(), 122)]);
    let big = fake("bench/big.rs", &"x\n".repeat(MAX_FILE_LINES + 1));
    assert_eq!(
        size_violations(&[long, big]),
        [
            "bench/y.rs: fn f is 122 lines (at most 100)",
            "bench/big.rs: 701 lines of code (at most 700)",
        ]
    );
}
