//! Fuzzing of the two parsers that read what vmtrace does not control:
//! tracefs `format` files (the kernel's, of any version) and recordings
//! (files users pass around). A mutational fuzzer over the corpora kept in
//! the repository (tests/kernel-formats: real format files of three
//! kernels; tests/corpus/recording: real and broken recordings, plus
//! tests/corpus/fuzz/*: inputs that once broke a parser): byte flips,
//! insertions, deletions, duplicated and spliced ranges, truncation and
//! extreme numbers. Neither parser may panic; a format that parses names
//! its fields plainly.
//!
//! Each target runs for VMTRACE_FUZZ_SECS seconds (default 3; `cargo
//! xtask test` runs 20). A failing input is written to
//! target/fuzz-failures/ and the seed is printed: VMTRACE_FUZZ_SEED=N
//! replays a run. Copy a failing input into tests/corpus/fuzz/ once fixed.

use std::{
    panic::{AssertUnwindSafe, catch_unwind},
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use vmtrace::{kernel::tracefs::Format, model::recording::Recording};
// The workloads' xorshift64*: deterministic from the seed, so a failure
// replays.
use vmtrace_workloads::memhog::Rng;

fn tests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests")
}

/// Every file under `dir` whose name satisfies `keep`.
fn files(dir: &Path, keep: &dyn Fn(&str) -> bool) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        let mut entries: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| keep(&n.to_string_lossy()))
                && let Ok(b) = std::fs::read(&p)
            {
                out.push(b);
            }
        }
    }
    out
}

const NUMBERS: &[&str] = &[
    "0",
    "-1",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999",
    "1e308",
    "NaN",
    "-0",
];

/// One to four mutations of `input`, sometimes spliced with `other`.
fn mutate(rng: &mut Rng, input: &[u8], other: &[u8]) -> Vec<u8> {
    let mut v = input.to_vec();
    for _ in 0..=rng.below(4) {
        let len = v.len();
        match rng.below(8) {
            0 if len > 0 => {
                let i = rng.below(len);
                v[i] ^= 1 << rng.below(8);
            }
            1 => {
                let i = rng.below(len + 1);
                let b = [b':', b';', b'"', b'{', b'}', b'[', b'\n', b'\t', 0xff, 0][rng.below(10)];
                v.insert(i, b);
            }
            2 if len > 0 => {
                let a = rng.below(len);
                let b = (a + 1 + rng.below(64)).min(len);
                v.drain(a..b);
            }
            3 if len > 0 => {
                let a = rng.below(len);
                let b = (a + 1 + rng.below(256)).min(len);
                let chunk = v[a..b].to_vec();
                let at = rng.below(len + 1);
                v.splice(at..at, chunk);
            }
            4 => v.truncate(rng.below(len + 1)),
            5 if len > 0 => {
                // A run of digits becomes an extreme number.
                let start = rng.below(len);
                if let Some(off) = v[start..].iter().position(u8::is_ascii_digit) {
                    let a = start + off;
                    let b = a + v[a..].iter().take_while(|c| c.is_ascii_digit()).count();
                    let n = NUMBERS[rng.below(NUMBERS.len())].as_bytes().to_vec();
                    v.splice(a..b, n);
                }
            }
            6 if !other.is_empty() => {
                let cut = rng.below(len + 1);
                let from = rng.below(other.len());
                v.truncate(cut);
                v.extend_from_slice(&other[from..]);
            }
            _ => {
                // A line removed (formats and JSON are line- or
                // token-structured; this keeps the rest well formed).
                if let Some(a) = v.iter().position(|&c| c == b'\n') {
                    let b = v[a + 1..]
                        .iter()
                        .position(|&c| c == b'\n')
                        .map_or(v.len(), |p| a + 1 + p);
                    v.drain(a..b);
                }
            }
        }
    }
    v
}

fn budget() -> Duration {
    let secs = std::env::var("VMTRACE_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(3.0);
    Duration::from_secs_f64(secs.max(0.1))
}

fn seed() -> u64 {
    std::env::var("VMTRACE_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
                | 1
        })
}

/// Runs `check` on mutations of `corpus` for the budget; returns how many
/// inputs were tried. On a panic or a failed check, saves the input and
/// fails with the seed.
fn fuzz(name: &str, corpus: &[Vec<u8>], check: &dyn Fn(&[u8]) -> Result<(), String>) -> u64 {
    assert!(!corpus.is_empty(), "{name}: empty corpus");
    let seed = seed();
    let mut rng = Rng::new(seed);
    let deadline = Instant::now() + budget();
    let mut tried = 0u64;
    // The corpus itself first, then mutations.
    let mut inputs: Box<dyn Iterator<Item = Vec<u8>>> = Box::new(corpus.iter().cloned());
    loop {
        let input = match inputs.next() {
            Some(i) => i,
            None => {
                if Instant::now() >= deadline {
                    break;
                }
                let a = &corpus[rng.below(corpus.len())];
                let b = &corpus[rng.below(corpus.len())];
                inputs = Box::new(std::iter::once(mutate(&mut rng, a, b)));
                continue;
            }
        };
        tried += 1;
        let outcome = catch_unwind(AssertUnwindSafe(|| check(&input)));
        let problem = match outcome {
            Ok(Ok(())) => continue,
            Ok(Err(why)) => why,
            Err(_) => "panicked".to_string(),
        };
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-failures");
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join(format!("{name}-{seed}-{tried}"));
        let _ = std::fs::write(&path, &input);
        panic!(
            "{name}: {problem} on input {} (seed {seed}: VMTRACE_FUZZ_SEED={seed} replays)",
            path.display()
        );
    }
    eprintln!("fuzz {name}: {tried} inputs, seed {seed}, no failure");
    tried
}

fn fuzz_corpus(sub: &str) -> Vec<Vec<u8>> {
    files(&tests_dir().join("corpus/fuzz").join(sub), &|_| true)
}

#[test]
fn tracefs_format_parser_never_panics() {
    let mut corpus = files(&tests_dir().join("kernel-formats"), &|n| n == "format");
    assert!(corpus.len() > 200, "{} format files", corpus.len());
    corpus.extend(fuzz_corpus("tracefs"));
    let tried = fuzz("tracefs-format", &corpus, &|bytes| {
        let text = String::from_utf8_lossy(bytes);
        let Ok(f) = Format::parse(&text) else {
            return Ok(());
        };
        for name in f.fields.keys() {
            if name.is_empty() || name.contains(char::is_whitespace) {
                return Err(format!("bad field name {name:?}"));
            }
        }
        Ok(())
    });
    assert!(tried > corpus.len() as u64);
}

#[test]
fn recording_reader_never_panics() {
    let mut corpus = files(&tests_dir().join("corpus/recording"), &|n| {
        n.ends_with(".vmtrace.json")
    });
    corpus.extend(fuzz_corpus("recording"));
    let tried = fuzz("recording", &corpus, &|bytes| {
        if let Ok(r) = Recording::from_bytes(bytes) {
            // What report and export do with it must not panic either.
            let _ = vmtrace::view::export::text::render(&r);
        }
        Ok(())
    });
    assert!(tried > corpus.len() as u64);
}
