//! The recording file on disk: written atomically, as the user behind
//! sudo (`host::output`: a random temporary name in the same directory,
//! synced, renamed over the target), and read back with one-line errors naming the file.
//! The bytes themselves are the model's (`Recording::to_bytes`,
//! `Recording::from_bytes`).

use std::{fs, path::Path};

use anyhow::{Result, anyhow};

use crate::model::recording::Recording;

impl Recording {
    /// Writes the recording to `path` atomically, as the user behind
    /// sudo when there is one (`host::output`: a random temporary name
    /// created O_EXCL|O_NOFOLLOW, renamed over the final name; a final
    /// name that is a symbolic link is refused).
    pub fn write(&self, path: &Path) -> Result<()> {
        let bytes = self.to_bytes()?;
        crate::host::output::write_atomic(path, &bytes).map_err(|e| {
            anyhow!(
                "cannot write the recording to {}: {e}; choose another path with -o",
                path.display()
            )
        })
    }

    /// Reads a recording; every failure is one line naming the file.
    pub fn read(path: &Path) -> Result<Recording> {
        let bytes = fs::read(path).map_err(|e| anyhow!("cannot read {}: {e}", path.display()))?;
        Recording::from_bytes(&bytes).map_err(|e| anyhow!("{}: {e:#}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::recording::{Environment, RecordedRun, Workload};

    fn sample() -> Recording {
        let mut rec = Recording::new(
            Workload {
                name: "memhog".into(),
                arguments: vec!["--mib".into(), "64".into()],
                seed: Some(1),
            },
            Environment::capture(),
        );
        rec.runs.push(RecordedRun {
            label: String::new(),
            report: Default::default(),
        });
        rec
    }

    #[test]
    fn round_trips_through_a_file() {
        let rec = sample();
        let dir = crate::host::test_scratch("rec");
        fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("r.vmtrace.json");
        rec.write(&path).expect("writes");
        let back = Recording::read(&path).expect("reads");
        assert_eq!(
            serde_json::to_string(&back).expect("ser"),
            serde_json::to_string(&rec).expect("ser")
        );
        assert!(fs::read(&path).expect("bytes").ends_with(b"}\n"));
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn unreadable_and_unwritable_paths_are_one_clear_error() {
        let e = format!(
            "{:#}",
            Recording::read(Path::new("/nonexistent/r.vmtrace.json")).expect_err("fails")
        );
        assert!(
            e.starts_with("cannot read /nonexistent/r.vmtrace.json"),
            "{e}"
        );
        let e = format!(
            "{:#}",
            sample()
                .write(Path::new("/nonexistent-dir/r.vmtrace.json"))
                .expect_err("fails")
        );
        assert!(
            e.contains("/nonexistent-dir/r.vmtrace.json") && e.contains("-o"),
            "{e}"
        );
    }
}
