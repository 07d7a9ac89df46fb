//! Can this process do what vmtrace needs? Checked before anything is
//! created, so that a refusal leaves nothing behind.

use anyhow::{Result, bail};

const CAP_SYS_ADMIN: u32 = 21;
const CAP_PERFMON: u32 = 38;
const CAP_BPF: u32 = 39;

/// Effective capability mask from /proc/self/status text.
pub fn effective_caps(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
}

pub fn has_needed_caps(caps: u64) -> bool {
    [CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN]
        .iter()
        .all(|&c| caps & (1 << c) != 0)
}

/// Ok when root, or when holding CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN
/// (eBPF, perf events, cgroups and swapon); otherwise one line that says
/// what to do.
pub fn require() -> Result<()> {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        return Ok(());
    }
    let caps = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| effective_caps(&s))
        .unwrap_or(0);
    if has_needed_caps(caps) {
        return Ok(());
    }
    bail!(
        "vmtrace needs root to load eBPF programs and set up its memory box; \
         run it with sudo (or grant CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_capeff() {
        let s = "Name:\tx\nCapInh:\t0000000000000000\nCapEff:\t000001ffffffffff\n";
        assert_eq!(effective_caps(s), Some(0x1ff_ffff_ffff));
        assert!(has_needed_caps(0x1ff_ffff_ffff));
        assert!(!has_needed_caps(0));
        assert!(!has_needed_caps(1 << CAP_BPF | 1 << CAP_PERFMON));
        assert_eq!(effective_caps("Name:\tx\n"), None);
    }
}
