//! Patches on the scratch copy of a tree: what a patch is called (its
//! subject line), which files it touches (so that the next build can
//! put them back), and applying it with `patch -p1`, checked with
//! `--dry-run` first so that a patch that does not apply changes
//! nothing and is refused in one line naming its file and hunk.

use std::{path::Path, process::Command};

use anyhow::{Context, Result, bail};

/// A patch's name for tables: its `Subject:` without the `[PATCH ...]`
/// tag, else its first line of prose before the diff, else None.
pub fn subject(text: &str) -> Option<String> {
    let mut lines = text.lines();
    while let Some(l) = lines.next() {
        if let Some(s) = l.strip_prefix("Subject:") {
            let mut s = s.trim().to_string();
            // A folded header continues on indented lines.
            for more in lines.by_ref() {
                if more.starts_with(' ') || more.starts_with('\t') {
                    s.push(' ');
                    s.push_str(more.trim());
                } else {
                    break;
                }
            }
            let s = match s.strip_prefix('[') {
                Some(rest) => rest.split_once(']').map_or(s.as_str(), |(_, r)| r).trim(),
                None => s.trim(),
            };
            return (!s.is_empty()).then(|| s.to_string());
        }
    }
    text.lines()
        .take_while(|l| {
            !l.starts_with("diff ") && !l.starts_with("--- ") && !l.starts_with("Index:")
        })
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.contains(':'))
        .map(str::to_string)
}

/// The files a unified diff touches, as paths inside the tree (`-p1`:
/// the first component of `a/mm/vmscan.c` dropped), each once.
pub fn touched_files(text: &str) -> Vec<String> {
    let mut files: Vec<String> = Vec::new();
    let strip = |p: &str| -> Option<String> {
        let p = p.split('\t').next()?.trim();
        if p == "/dev/null" {
            return None;
        }
        let (_, rest) = p.split_once('/')?;
        Some(rest.to_string())
    };
    for l in text.lines() {
        let path = l
            .strip_prefix("--- ")
            .or_else(|| l.strip_prefix("+++ "))
            .and_then(strip);
        if let Some(p) = path
            && !files.contains(&p)
        {
            files.push(p);
        }
    }
    files
}

/// Whether a path from a patch stays inside the tree (no absolute path,
/// no `..`): a patch names the files it writes.
pub fn inside_tree(path: &str) -> bool {
    !path.starts_with('/') && !path.split('/').any(|c| c == ".." || c.is_empty())
}

/// Applies `patch_file` to the tree at `src` (`patch -p1`), after a dry
/// run: a patch that does not apply changes nothing, and the error names
/// the file and the hunk that failed.
pub fn apply(src: &Path, patch_file: &Path) -> Result<()> {
    let name = patch_file.display().to_string();
    let text = std::fs::read(patch_file).with_context(|| format!("reading {name}"))?;
    let text = String::from_utf8_lossy(&text);
    let files = touched_files(&text);
    if files.is_empty() {
        bail!(
            "{name}: no unified diff in it (no ---/+++ lines); give a patch made by git format-patch or diff -u"
        );
    }
    if let Some(bad) = files.iter().find(|f| !inside_tree(f)) {
        bail!("{name}: it writes {bad}, outside the tree; refused");
    }
    let run = |dry: bool| -> Result<(bool, String)> {
        let mut cmd = Command::new("patch");
        cmd.args([
            "-p1",
            "--forward",
            "--batch",
            "--no-backup-if-mismatch",
            "-r",
            "-",
        ])
        .arg("-i")
        .arg(patch_file)
        .current_dir(src);
        if dry {
            cmd.arg("--dry-run");
        }
        let out = cmd
            .output()
            .context("running patch (Debian package: patch)")?;
        let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&out.stderr));
        Ok((out.status.success(), text))
    };
    let (ok, out) = run(true)?;
    if !ok {
        bail!("{}", failure(&name, &out));
    }
    let (ok, out) = run(false)?;
    if !ok {
        bail!("{} (after a clean dry run)", failure(&name, &out));
    }
    Ok(())
}

/// One line from `patch`'s output: the file and hunk that failed.
pub fn failure(name: &str, output: &str) -> String {
    let mut file: Option<&str> = None;
    let mut failed: Vec<String> = Vec::new();
    let mut reversed = None;
    let mut missing = None;
    for l in output.lines() {
        if let Some(f) = l
            .strip_prefix("checking file ")
            .or_else(|| l.strip_prefix("patching file "))
        {
            file = Some(f.trim());
        } else if l.starts_with("Hunk #") && l.contains("FAILED") {
            let hunk = l.trim_end_matches('.');
            failed.push(format!("{}: {hunk}", file.unwrap_or("?")));
        } else if l.starts_with("Reversed (or previously applied) patch detected") {
            reversed = Some(file.unwrap_or("?").to_string());
        } else if l.starts_with("can't find file to patch") {
            missing = Some(l.to_string());
        } else if l.contains("Only garbage was found") {
            return format!("{name}: not a patch (patch found only garbage in it)");
        }
    }
    if let Some(f) = reversed {
        return format!(
            "{name} does not apply: {f} already has it (reversed or previously applied \
             patch); drop it from --kernel, or build from a tree without it"
        );
    }
    if !failed.is_empty() {
        return format!(
            "{name} does not apply: {}; rebase it on this tree",
            failed.join(", ")
        );
    }
    if missing.is_some() {
        let wanted = output
            .lines()
            .filter_map(|l| l.strip_prefix("|--- ").or_else(|| l.strip_prefix("|+++ ")))
            .next_back()
            .map(|p| p.split('\t').next().unwrap_or(p).trim().to_string());
        return format!(
            "{name} does not apply: it patches {}, which this tree does not have (a \
             patch for another tree, or made with another -p level; vmtrace applies \
             patches with -p1)",
            wanted.unwrap_or_else(|| "a file".into())
        );
    }
    let last = output
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    format!("{name} does not apply: {}", last.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATCH: &str = r#"From 1 Mon Sep 17 00:00:00 2001
From: Dev <dev@example.org>
Subject: [PATCH 2/3] mm/swap: read ahead one page

Planted.
---
 mm/swap_state.c | 2 +-

diff --git a/mm/swap_state.c b/mm/swap_state.c
--- a/mm/swap_state.c
+++ b/mm/swap_state.c
@@ -1,3 +1,3 @@
 int a;
-int b;
+int c;
 int d;
diff --git a/mm/new.c b/mm/new.c
--- /dev/null
+++ b/mm/new.c
@@ -0,0 +1 @@
+int e;
"#;

    #[test]
    fn subjects_and_files_of_a_patch() {
        assert_eq!(
            subject(PATCH).as_deref(),
            Some("mm/swap: read ahead one page")
        );
        assert_eq!(
            subject("Subject: mm: a long\n subject folded\n\n").as_deref(),
            Some("mm: a long subject folded")
        );
        assert_eq!(
            subject("fix the thing\n--- a/x\n+++ b/x\n").as_deref(),
            Some("fix the thing")
        );
        assert_eq!(subject("--- a/x\n+++ b/x\n"), None);
        assert_eq!(touched_files(PATCH), ["mm/swap_state.c", "mm/new.c"]);
        assert!(inside_tree("mm/vmscan.c"));
        for bad in ["/etc/passwd", "../x", "mm/../../x", "mm//x"] {
            assert!(!inside_tree(bad), "{bad}");
        }
    }

    /// A tiny tree patched by the real `patch`: a patch that applies,
    /// one whose hunk fails (named by file and hunk, the tree left as it
    /// was), one for a file the tree lacks, one applied twice, garbage,
    /// and one that would write outside the tree.
    #[test]
    fn patches_apply_or_are_refused_naming_file_and_hunk() {
        let dir = std::env::temp_dir().join(format!("vmtrace-patch-{}", std::process::id()));
        let src = dir.join("src");
        std::fs::create_dir_all(src.join("mm")).expect("mkdir");
        let original = "int a;\nint b;\nint d;\n";
        std::fs::write(src.join("mm/swap_state.c"), original).expect("write");
        let write = |name: &str, text: &str| {
            let p = dir.join(name);
            std::fs::write(&p, text).expect("write patch");
            p
        };
        // A second file with a hunk that cannot match: nothing applied.
        let failing = write(
            "fail.patch",
            &format!(
                "{PATCH}--- a/mm/swap_state.c\n+++ b/mm/swap_state.c\n@@ -10,3 +10,3 @@\n \
                 int x;\n-int y;\n+int z;\n int w;\n"
            ),
        );
        let e = format!("{:#}", apply(&src, &failing).expect_err("fails"));
        assert!(e.contains("fail.patch does not apply"), "{e}");
        assert!(e.contains("mm/swap_state.c: Hunk #1 FAILED"), "{e}");
        assert_eq!(
            std::fs::read_to_string(src.join("mm/swap_state.c")).expect("read"),
            original,
            "a failed patch changed the tree"
        );
        assert!(!src.join("mm/new.c").exists());

        let good = write("good.patch", PATCH);
        apply(&src, &good).expect("applies");
        assert_eq!(
            std::fs::read_to_string(src.join("mm/swap_state.c")).expect("read"),
            "int a;\nint c;\nint d;\n"
        );
        assert!(src.join("mm/new.c").is_file());
        let e = format!("{:#}", apply(&src, &good).expect_err("twice"));
        assert!(e.contains("already has it"), "{e}");

        let other = write(
            "other.patch",
            "--- a/kernel/nosuch.c\n+++ b/kernel/nosuch.c\n@@ -1 +1 @@\n-a\n+b\n",
        );
        let e = format!("{:#}", apply(&src, &other).expect_err("no file"));
        assert!(e.contains("it patches"), "{e}");
        assert!(e.contains("kernel/nosuch.c"), "{e}");

        let garbage = write("garbage.patch", "hello\n");
        let e = format!("{:#}", apply(&src, &garbage).expect_err("garbage"));
        assert!(e.contains("no unified diff"), "{e}");

        let escape = write(
            "escape.patch",
            "--- a/../outside\n+++ b/../outside\n@@ -0,0 +1 @@\n+x\n",
        );
        let e = format!("{:#}", apply(&src, &escape).expect_err("outside"));
        assert!(e.contains("outside the tree"), "{e}");
        assert!(!dir.join("outside").exists());
        std::fs::remove_dir_all(&dir).expect("rm");
    }
}
