//! Can this process do what vmtrace needs? Checked before anything is
//! created, so that a refusal leaves nothing behind. And whose identity
//! the traced command takes: under sudo, the invoking user's.

use std::ffi::CString;

use anyhow::{Context, Result, bail};

/// Capability numbers (include/uapi/linux/capability.h).
pub const CAP_DAC_OVERRIDE: u32 = 1;
pub const CAP_DAC_READ_SEARCH: u32 = 2;
pub const CAP_SETGID: u32 = 6;
pub const CAP_SETUID: u32 = 7;
pub const CAP_SYS_ADMIN: u32 = 21;
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

/// What `attach` still needs once its programs are attached, tracefs
/// unmounted and delay accounting switched on: the capabilities kept by
/// `drop_all_but`, each with the kernel function that checks it.
/// `walks_cgroups`: the exporter names cgroups, or a `--cgroup` target is
/// watched for emptiness.
pub fn needed_after_attach(
    recording_dir: &std::path::Path,
    invoker: bool,
    walks_cgroups: bool,
) -> Vec<u32> {
    // CAP_SYS_ADMIN: restoring kernel.task_delayacct at exit; its
    // handler, kernel/delayacct.c sysctl_delayacct, refuses a write
    // without capable(CAP_SYS_ADMIN) (6.1, 6.12, 6.18; so does
    // kernel/bpf/syscall.c bpf_stats_handler for kernel.bpf_stats_enabled,
    // which `attach --bpf-stats` restores; root owns both files, so uid 0
    // writes them without CAP_DAC_OVERRIDE). On 6.1 it also keeps the maps readable:
    // __sys_bpf refuses every command when kernel.unprivileged_bpf_disabled
    // is set and !bpf_capable(), which CAP_SYS_ADMIN satisfies (6.5 moved
    // that check into map_create and bpf_prog_load).
    let mut keep = vec![CAP_SYS_ADMIN];
    // Under sudo the recording is written by a thread that takes the
    // invoker's identity (host::output::as_user): setgroups and setresgid
    // need CAP_SETGID, setresuid CAP_SETUID (kernel/groups.c
    // may_setgroups, kernel/sys.c __sys_setresgid/__sys_setresuid); as
    // the invoker that thread then needs nothing. Otherwise root writes
    // it: CAP_DAC_OVERRIDE when the directory is not root's and root-
    // writable (fs/namei.c may_create_in_dir, inode_permission: uid 0
    // passes as owner only there).
    if invoker {
        keep.extend([CAP_SETGID, CAP_SETUID]);
    } else if !root_may_write(recording_dir) {
        keep.push(CAP_DAC_OVERRIDE);
    }
    // CAP_DAC_READ_SEARCH: cgroupfs directories are owned by whoever the
    // subtree is delegated to (systemd's user@UID.service, containers),
    // who may make them 0700; fs/namei.c generic_permission lets uid 0
    // read and search such a directory only with this capability, and
    // without it a user could hide a cgroup from the walk or make a
    // watched target look empty.
    if walks_cgroups {
        keep.push(CAP_DAC_READ_SEARCH);
    }
    keep
}

/// Whether uid 0 without CAP_DAC_OVERRIDE may create files in `dir`:
/// root owns it and has write and search permission.
fn root_may_write(dir: &std::path::Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(dir).is_ok_and(|m| m.uid() == 0 && m.mode() & 0o300 == 0o300)
}

/// Mask of capabilities from their numbers.
pub fn cap_mask(caps: &[u32]) -> u64 {
    caps.iter().filter(|&&c| c < 64).fold(0, |m, &c| m | 1 << c)
}

/// Drops every capability but `keep` from this thread's bounding,
/// ambient, inheritable, permitted and effective sets, and sets
/// no_new_privs, so that nothing vmtrace executes regains one. Call it
/// while the process has one thread: capabilities are per thread
/// (capset(2) changes only the caller's), and the check below refuses
/// otherwise.
pub fn drop_all_but(keep: &[u32]) -> Result<()> {
    let threads = std::fs::read_dir("/proc/self/task").map_or(1, |d| d.count());
    if threads != 1 {
        bail!(
            "{threads} threads: capabilities are per thread and could not all be \
             dropped; report this as a vmtrace bug"
        );
    }
    let keep = cap_mask(keep);
    let os = |what: &str| {
        let e = std::io::Error::last_os_error();
        anyhow::anyhow!("{what}: {e}")
    };
    // The bounding set first: dropping from it needs CAP_SETPCAP, which
    // the capset below takes away. A service manager may have left
    // CAP_SETPCAP out (docs/vmtrace-serve.service): then the bounding set
    // stays as it was given, and no_new_privs still keeps an execve from
    // gaining anything beyond the permitted set below.
    for cap in 0..64u32 {
        // SAFETY: prctl with integer arguments only.
        let held = unsafe { libc::prctl(libc::PR_CAPBSET_READ, cap as libc::c_ulong, 0, 0, 0) };
        if held < 0 {
            // EINVAL: past the last capability this kernel knows.
            break;
        }
        if held == 0 || keep & 1 << cap != 0 {
            continue;
        }
        // SAFETY: prctl with integer arguments only.
        let r = unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) };
        if r != 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM) {
                break;
            }
            return Err(os("dropping from the bounding set"));
        }
    }
    // SAFETY: prctl with integer arguments only.
    let r = unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
            0,
            0,
            0,
        )
    };
    if r != 0 {
        return Err(os("clearing the ambient set"));
    }
    capset(keep).map_err(|e| anyhow::anyhow!("capset: {e}"))?;
    // SAFETY: prctl with integer arguments only.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(os("setting no_new_privs"));
    }
    Ok(())
}

/// Empties this thread's effective, permitted and inheritable sets.
pub(crate) fn capset_none() -> Result<()> {
    capset(0).map_err(|e| anyhow::anyhow!("capset: {e}"))
}

/// capset(2), version 3: effective and permitted become what this thread
/// permits of `keep`, inheritable nothing.
fn capset(keep: u64) -> std::io::Result<()> {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    let mut header = Header {
        version: VERSION_3,
        pid: 0,
    };
    let mut now = [Data::default(); 2];
    // SAFETY: capget fills two Data records for version 3.
    if unsafe { libc::syscall(libc::SYS_capget, &mut header, now.as_mut_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let permitted = u64::from(now[0].permitted) | u64::from(now[1].permitted) << 32;
    let set = keep & permitted;
    let data = [
        Data {
            effective: set as u32,
            permitted: set as u32,
            inheritable: 0,
        },
        Data {
            effective: (set >> 32) as u32,
            permitted: (set >> 32) as u32,
            inheritable: 0,
        },
    ];
    // SAFETY: capset reads two Data records for version 3.
    if unsafe { libc::syscall(libc::SYS_capset, &header, data.as_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
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
    fn keeps_only_what_the_exit_path_needs() {
        assert_eq!(cap_mask(&[CAP_SYS_ADMIN, CAP_DAC_OVERRIDE]), 1 << 21 | 2);
        assert_eq!(cap_mask(&[64, 99]), 0);
        let proc = std::path::Path::new("/proc");
        // Under sudo the invoker writes: the identity change is kept.
        let k = needed_after_attach(proc, true, false);
        assert_eq!(k, [CAP_SYS_ADMIN, CAP_SETGID, CAP_SETUID]);
        // /proc is root's and not writable: the override is kept.
        let k = needed_after_attach(proc, false, true);
        assert_eq!(k, [CAP_SYS_ADMIN, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH]);
        let k = needed_after_attach(std::path::Path::new("/tmp"), false, false);
        assert_eq!(k, [CAP_SYS_ADMIN]);
        assert!(!root_may_write(std::path::Path::new("/no/such/dir")));
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
