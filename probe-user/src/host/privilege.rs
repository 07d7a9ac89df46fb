//! Can this process do what vmtrace needs? Checked before anything is
//! created, so that a refusal leaves nothing behind. And whose identity
//! the traced command takes: under sudo, the invoking user's.

use std::ffi::CString;

use anyhow::{Context, Result, bail};

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

/// The needed capabilities `caps` lacks, by name.
pub fn missing_caps(caps: u64) -> Vec<&'static str> {
    [
        (CAP_BPF, "CAP_BPF"),
        (CAP_PERFMON, "CAP_PERFMON"),
        (CAP_SYS_ADMIN, "CAP_SYS_ADMIN"),
    ]
    .iter()
    .filter(|(c, _)| caps & (1 << c) == 0)
    .map(|&(_, n)| n)
    .collect()
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
    let caps = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| effective_caps(&s));
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    match caps {
        Some(c) if has_needed_caps(c) => return Ok(()),
        // No /proc to tell: root is assumed able.
        None if root => return Ok(()),
        Some(c) if root => bail!(
            "vmtrace runs as root but without {} (a container, or a dropped \
             bounding set?); run it on the host, or grant those capabilities",
            missing_caps(c).join(", ")
        ),
        _ => {}
    }
    bail!(
        "vmtrace needs root to load eBPF programs and set up its memory box; \
         run it with sudo (or grant CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN)"
    )
}

/// The user a command runs as: sudo's invoker (SUDO_UID/SUDO_GID), so
/// that a traced build in the user's tree creates no root-owned files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    pub uid: u32,
    pub gid: u32,
    /// Supplementary groups (the user's, from the group database).
    pub groups: Vec<libc::gid_t>,
    pub user: String,
    pub home: Option<String>,
}

impl Identity {
    /// The invoking user when vmtrace runs under sudo for someone else;
    /// None when not under sudo, or when that user is root.
    pub fn of_sudo_invoker() -> Result<Option<Identity>> {
        let var = |name: &str| std::env::var(name).ok();
        let (Some(uid), Some(gid)) = (var("SUDO_UID"), var("SUDO_GID")) else {
            return Ok(None);
        };
        let (Ok(uid), Ok(gid)) = (uid.trim().parse::<u32>(), gid.trim().parse::<u32>()) else {
            bail!(
                "SUDO_UID/SUDO_GID ({uid}/{gid}) are not numbers; unset them, \
                 or pass --as-root to run the command as root"
            );
        };
        if uid == 0 {
            return Ok(None);
        }
        let (user, home) = passwd_entry(uid).unwrap_or_else(|| (uid.to_string(), None));
        let groups = group_list(&user, gid);
        Ok(Some(Identity {
            uid,
            gid,
            groups,
            user,
            home,
        }))
    }

    /// Takes this identity: supplementary groups, group, then user (the
    /// order that leaves no privilege behind). Called in the child
    /// between fork and exec: only async-signal-safe system calls.
    pub fn become_in_child(&self) -> std::io::Result<()> {
        // SAFETY: plain system calls on data prepared before fork.
        unsafe {
            if libc::setgroups(self.groups.len(), self.groups.as_ptr()) != 0
                || libc::setgid(self.gid) != 0
                || libc::setuid(self.uid) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }

    /// How reports name it: `alice (uid 1000)`.
    pub fn describe(&self) -> String {
        format!("{} (uid {}, gid {})", self.user, self.uid, self.gid)
    }
}

/// Name and home directory of a uid, from the password database.
fn passwd_entry(uid: u32) -> Option<(String, Option<String>)> {
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: zeroed passwd is a valid out-parameter.
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: valid buffers; the strings point into `buf`, read below
    // while it lives.
    let r = unsafe { libc::getpwuid_r(uid, &mut pw, buf.as_mut_ptr(), buf.len(), &mut found) };
    if r != 0 || found.is_null() {
        return None;
    }
    // SAFETY: NUL-terminated strings inside `buf`.
    let text = |p: *const libc::c_char| unsafe {
        (!p.is_null()).then(|| std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned())
    };
    Some((text(pw.pw_name)?, text(pw.pw_dir)))
}

/// The user's groups (primary included); just the primary one when the
/// group database does not know the user.
fn group_list(user: &str, gid: u32) -> Vec<libc::gid_t> {
    let Ok(name) = CString::new(user) else {
        return vec![gid];
    };
    let mut n: libc::c_int = 64;
    loop {
        let mut groups = vec![0 as libc::gid_t; n as usize];
        let want = n;
        // SAFETY: `groups` holds `n` entries; getgrouplist writes at most
        // that many and sets `n` to the number needed.
        let r = unsafe { libc::getgrouplist(name.as_ptr(), gid, groups.as_mut_ptr(), &mut n) };
        if r >= 0 {
            groups.truncate(n.max(0) as usize);
            return groups;
        }
        if n <= want || n > 65536 {
            return vec![gid];
        }
    }
}

/// A note for errors that starting the command as the user can cause.
pub fn start_hint(identity: Option<&Identity>) -> String {
    identity.map_or(String::new(), |i| {
        format!(
            " (as {}, sudo's invoker: it must be able to run it; --as-root runs it as root)",
            i.user
        )
    })
}

/// Resolves who the command runs as: the sudo invoker unless `as_root`.
pub fn command_identity(as_root: bool) -> Result<Option<Identity>> {
    if as_root {
        return Ok(None);
    }
    Identity::of_sudo_invoker().context("finding the user who ran sudo")
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
        assert_eq!(missing_caps(1 << CAP_BPF), ["CAP_PERFMON", "CAP_SYS_ADMIN"]);
        assert!(missing_caps(0x1ff_ffff_ffff).is_empty());
    }

    #[test]
    fn root_has_a_passwd_entry_and_groups() {
        let (name, home) = passwd_entry(0).expect("root in /etc/passwd");
        assert_eq!(name, "root");
        assert!(home.is_some());
        assert!(group_list("root", 0).contains(&0));
        assert_eq!(group_list("no-such-user-vmtrace", 4242), vec![4242]);
    }
}
