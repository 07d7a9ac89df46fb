//! The signals vmtrace catches (SIGINT, SIGTERM, SIGHUP): held from the
//! first instruction of `main` until a run or attach has its handlers in
//! place, then caught for the whole run so that the box is torn down and
//! the report still printed.

use anyhow::{Context, Result};
use tokio::signal::unix::{Signal, SignalKind, signal};

/// The signals vmtrace catches for a run: held (blocked) from the first
/// instruction of `main` until their handlers are installed, so that one
/// arriving while vmtrace starts up is acted on (the box torn down, the
/// run reported) instead of killing it half set up.
const CAUGHT: [libc::c_int; 3] = crate::host::lock::STOP_SIGNALS;

fn mask_signals(how: libc::c_int) {
    // SAFETY: a sigset we own, changed only through libc's functions.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in CAUGHT {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(how, &set, std::ptr::null_mut());
    }
}

/// Blocks SIGINT, SIGTERM and SIGHUP (first thing in `main`, before any
/// thread exists). Commands vmtrace starts get an empty mask (std resets
/// it in the child).
pub fn hold_signals() {
    mask_signals(libc::SIG_BLOCK);
}

/// Unblocks them: their handlers are in place, or the subcommand has
/// nothing to tear down. One that arrived meanwhile is delivered now.
pub fn release_signals() {
    mask_signals(libc::SIG_UNBLOCK);
}

/// For commands without an async runtime (`kernels`), which keep the
/// signals held and poll: takes one that arrived (SIGINT, SIGTERM or
/// SIGHUP) without waiting, None when none did.
pub fn take_pending() -> Option<i32> {
    // SAFETY: sigsets we own, changed only through libc's functions; a
    // zero timeout makes sigtimedwait a poll.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in CAUGHT {
            libc::sigaddset(&mut set, s);
        }
        let zero = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let s = libc::sigtimedwait(&set, std::ptr::null_mut(), &zero);
        (s > 0).then_some(s)
    }
}

/// SIGINT, SIGTERM and SIGHUP, caught for the whole run.
pub(crate) struct Signals {
    int: Signal,
    term: Signal,
    hup: Signal,
}

impl Signals {
    pub(crate) fn new() -> Result<Signals> {
        let s = |k| signal(k).context("installing signal handlers");
        let signals = Signals {
            int: s(SignalKind::interrupt())?,
            term: s(SignalKind::terminate())?,
            hup: s(SignalKind::hangup())?,
        };
        release_signals();
        Ok(signals)
    }

    pub(crate) async fn next(&mut self) -> i32 {
        tokio::select! {
            _ = self.int.recv() => libc::SIGINT,
            _ = self.term.recv() => libc::SIGTERM,
            _ = self.hup.recv() => libc::SIGHUP,
        }
    }

    /// A signal that already arrived, without waiting.
    pub(crate) async fn pending(&mut self) -> Option<i32> {
        tokio::select! {
            biased;
            s = self.next() => Some(s),
            _ = tokio::task::yield_now() => None,
        }
    }
}

/// A single-threaded async runtime for one run or attach, with the
/// signal handlers installed (and the held signals released): from here
/// on Ctrl-C during setup still tears down what was set up.
pub(crate) fn runtime_with_signals() -> Result<(tokio::runtime::Runtime, Signals)> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let signals = rt.block_on(async { Signals::new() })?;
    Ok((rt, signals))
}
