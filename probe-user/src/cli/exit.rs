//! vmtrace's exit status. When vmtrace ran the command, the command's
//! own (a signal N: 128 + N); vmtrace's own failures take the codes GNU
//! env, nice and time use for a wrapper's, so that they never read as
//! the command's:
//!
//! - 125: vmtrace failed (a bad option included); `git bisect run`
//!   skips such a step instead of calling it bad;
//! - 126: the command was found but could not be started;
//! - 127: the command was not found;
//! - 128 + N: signal N stopped vmtrace while it waited for a lock,
//!   before the command ran.
//!
//! `compare --fail-if` exits 1 when its condition holds, 0 when not.

use crate::{host::lock::Interrupted, session::preflight::CannotStart};

/// vmtrace itself failed.
pub const FAILED: i32 = 125;

/// `compare --fail-if`: the condition holds.
pub const CONDITION_MET: i32 = 1;

/// The exit status for an error that ended vmtrace.
pub fn code_of(e: &anyhow::Error) -> i32 {
    if let Some(i) = e.downcast_ref::<Interrupted>() {
        return 128 + i.signal;
    }
    if let Some(c) = e.downcast_ref::<CannotStart>() {
        return c.code;
    }
    FAILED
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vmtraces_own_failures_are_never_the_commands_codes() {
        assert_eq!(code_of(&anyhow::anyhow!("no root")), FAILED);
        let missing = anyhow::Error::new(CannotStart::not_found("command `x` not found".into()));
        assert_eq!(code_of(&missing), 127);
        let denied =
            anyhow::Error::new(CannotStart::not_executable("`x`: permission denied".into()));
        assert_eq!(code_of(&denied.context("starting the run")), 126);
    }
}
