//! Standard output, written so that nothing is lost and nothing panics:
//! a reader that went away (a closed pipe, `| head`) ends the printing
//! quietly, and any other failure (`> /dev/full`: no space) is an error
//! the caller says in one line. `print!` panics on both, and a panic
//! before a recording is written loses it: callers write the recording
//! first and print after.

use std::{
    io::{self, Write},
    sync::atomic::{AtomicBool, Ordering},
};

/// Set once a write found the pipe closed: later output is dropped.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes `text` to standard output and flushes it. Ok when the reader
/// is gone (EPIPE: nothing more is written, quietly); the error
/// otherwise.
pub fn print(text: &str) -> io::Result<()> {
    write_to(&mut io::stdout().lock(), text)
}

/// `print` with a newline after.
pub fn println(text: &str) -> io::Result<()> {
    let mut out = io::stdout().lock();
    write_to(&mut out, text)?;
    write_to(&mut out, "\n")
}

/// Streams what `f` writes to standard output (buffered, flushed at the
/// end), with `print`'s rules: a closed pipe ends it quietly.
pub fn stream(f: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> io::Result<()> {
    if closed() {
        return Ok(());
    }
    let mut out = io::BufWriter::new(io::stdout().lock());
    quiet_if_closed(f(&mut out).and_then(|()| out.flush()))
}

/// A write's result, with a closed pipe made Ok and remembered.
fn quiet_if_closed(r: io::Result<()>) -> io::Result<()> {
    match r {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
            CLOSED.store(true, Ordering::Relaxed);
            Ok(())
        }
        r => r,
    }
}

/// Whether a reader went away from standard output.
pub fn closed() -> bool {
    CLOSED.load(Ordering::Relaxed)
}

fn write_to(out: &mut impl Write, text: &str) -> io::Result<()> {
    if closed() {
        return Ok(());
    }
    quiet_if_closed(out.write_all(text.as_bytes()).and_then(|()| out.flush()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer that fails as a full disk or a closed pipe does.
    struct Failing(io::ErrorKind);
    impl Write for Failing {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from(self.0))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_full_disk_is_an_error_and_a_closed_pipe_ends_quietly() {
        let e = write_to(&mut Failing(io::ErrorKind::StorageFull), "x").expect_err("full");
        assert_eq!(e.kind(), io::ErrorKind::StorageFull);
        assert!(!closed());
        write_to(&mut Failing(io::ErrorKind::BrokenPipe), "x").expect("quiet");
        assert!(closed());
        // Once closed, nothing more is written, and nothing fails.
        write_to(&mut Failing(io::ErrorKind::StorageFull), "x").expect("dropped");
        CLOSED.store(false, Ordering::Relaxed);
    }
}
