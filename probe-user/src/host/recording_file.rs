//! The recording file on disk: written atomically, as the user behind
//! sudo (`host::output`: a random temporary name in the same directory,
//! synced, renamed over the target), and read back with one-line errors
//! naming the file: only a regular file (never a FIFO, a device or a
//! directory, which could block or never end), of at most
//! `MAX_RECORDING_BYTES`. The bytes themselves are the model's
//! (`Recording::to_bytes`, `Recording::from_reader`); this file is the
//! disk: `read`, `write`, `write_private`, `read_held`.

use std::{
    fs,
    os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _},
    path::Path,
};

use anyhow::{Result, anyhow, bail};

use crate::model::recording::Recording;

/// Writes the recording to `path` atomically, as the user behind
/// sudo when there is one (`host::output`: a random temporary name
/// created O_EXCL|O_NOFOLLOW, renamed over the final name; a final
/// name that is a symbolic link is refused).
pub fn write(rec: &Recording, path: &Path) -> Result<()> {
    write_with(rec, path, crate::host::output::write_atomic)
}

/// `write`, readable by its owner only (0600): a recording that lists
/// other users' processes (a system-wide or by-name attach).
pub fn write_private(rec: &Recording, path: &Path) -> Result<()> {
    write_with(rec, path, crate::host::output::write_atomic_private)
}

fn write_with(
    rec: &Recording,
    path: &Path,
    write: fn(&Path, &[u8]) -> std::io::Result<()>,
) -> Result<()> {
    let bytes = rec.to_bytes()?;
    write(path, &bytes).map_err(|e| {
        anyhow!(
            "cannot write the recording to {}: {e}; choose another path with -o",
            path.display()
        )
    })
}

/// Reads a recording; every failure is one line naming the file.
/// Only a regular file is read (opened without blocking, then
/// checked on the descriptor: a FIFO, a device or a directory is
/// refused at once), of at most `MAX_RECORDING_BYTES`, checked on
/// the descriptor and enforced while reading.
pub fn read(path: &Path) -> Result<Recording> {
    let name = path.display();
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| anyhow!("cannot read {name}: {e}"))?;
    read_open(file, &name.to_string())
}

/// Reads the recording `name` in a held directory (a guest's job
/// directory, the invoker's): opened through its descriptor, never
/// following a link (`HeldDir::open_file`), then as `read`.
pub fn read_held(dir: &crate::host::held_dir::HeldDir, name: &str) -> Result<Recording> {
    let shown = dir.path().join(name).display().to_string();
    let file = dir
        .open_file(name)
        .map_err(|e| anyhow!("cannot read {shown}: {e}"))?;
    read_open(file, &shown)
}

fn read_open(file: fs::File, name: &str) -> Result<Recording> {
    let meta = file
        .metadata()
        .map_err(|e| anyhow!("cannot read {name}: {e}"))?;
    let kind = meta.file_type();
    if !kind.is_file() {
        let what = if kind.is_dir() {
            "a directory"
        } else if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_socket() {
            "a socket"
        } else if kind.is_char_device() || kind.is_block_device() {
            "a device"
        } else {
            "not a regular file"
        };
        bail!("{name}: {what}, not a recording: give the path of a recording file");
    }
    if meta.len() > MAX_RECORDING_BYTES {
        bail!(
            "{name}: {} bytes, more than the {} a recording may be: not a vmtrace \
             recording, or split its runs into several files",
            meta.len(),
            crate::model::format::human(MAX_RECORDING_BYTES)
        );
    }
    // One byte past the cap: a file that grows while it is read is
    // refused, not followed.
    let bounded = Bounded(file, MAX_RECORDING_BYTES + 1);
    Recording::from_reader(bounded, MAX_RECORDING_BYTES).map_err(|e| anyhow!("{name}: {e:#}"))
}

/// The largest recording vmtrace reads: 256 MiB (a recording of a long
/// `--repeat` with a 1 s time line is a few MiB; the biggest made here,
/// hours of samples, is well below this).
pub const MAX_RECORDING_BYTES: u64 = 256 << 20;

/// A file read through at most `.1` bytes from its start, and seekable
/// back to the start (the parser reads twice).
struct Bounded(fs::File, u64);

impl std::io::Read for Bounded {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use std::io::Seek as _;
        let at = self.0.stream_position()?;
        let room = self.1.saturating_sub(at);
        let n = buf.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        self.0.read(&mut buf[..n])
    }
}

impl std::io::Seek for Bounded {
    fn seek(&mut self, pos: std::io::SeekFrom) -> std::io::Result<u64> {
        self.0.seek(pos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::recording::{RecordedRun, Workload};

    fn sample() -> Recording {
        let mut rec = Recording::new(
            Workload {
                name: "memhog".into(),
                arguments: vec!["--mib".into(), "64".into()],
                seed: Some(1),
            },
            crate::host::environment::capture(),
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
        write(&rec, &path).expect("writes");
        let back = read(&path).expect("reads");
        assert_eq!(
            serde_json::to_string(&back).expect("ser"),
            serde_json::to_string(&rec).expect("ser")
        );
        assert!(fs::read(&path).expect("bytes").ends_with(b"}\n"));
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn only_regular_files_within_the_cap_are_read() {
        let dir = crate::host::test_scratch("rec-kinds");
        fs::create_dir_all(&dir).expect("temp dir");
        let fifo = dir.join("fifo.vmtrace.json");
        let c = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).expect("path");
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // Blocks forever if it is opened for reading without O_NONBLOCK.
        let e = format!("{:#}", read(&fifo).expect_err("refused"));
        assert!(e.contains("a FIFO, not a recording"), "{e}");
        let e = format!("{:#}", read(&dir).expect_err("refused"));
        assert!(e.contains("a directory"), "{e}");
        let sparse = dir.join("sparse.vmtrace.json");
        let f = fs::File::create(&sparse).expect("create");
        f.set_len(MAX_RECORDING_BYTES + 1).expect("sparse");
        let e = format!("{:#}", read(&sparse).expect_err("refused"));
        assert!(e.contains("268435457 bytes, more than the 256 MiB"), "{e}");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn unreadable_and_unwritable_paths_are_one_clear_error() {
        let e = format!(
            "{:#}",
            read(Path::new("/nonexistent/r.vmtrace.json")).expect_err("fails")
        );
        assert!(
            e.starts_with("cannot read /nonexistent/r.vmtrace.json"),
            "{e}"
        );
        let e = format!(
            "{:#}",
            write(&sample(), Path::new("/nonexistent-dir/r.vmtrace.json")).expect_err("fails")
        );
        assert!(
            e.contains("/nonexistent-dir/r.vmtrace.json") && e.contains("-o"),
            "{e}"
        );
    }
}
