//! Who the command runs as: under sudo the invoking user (with that
//! user's groups and HOME), unless --as-root.

use crate::common::{fresh_scratch, guard, vmtrace};

/// Under sudo the command runs as the user who ran sudo (so that a
/// traced build makes no root-owned files in the user's tree), with that
/// user's groups and HOME; --as-root keeps root.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn command_runs_as_the_sudo_invoker_unless_as_root() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let _g = guard();
    let dir = fresh_scratch("identity");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777)).expect("chmod");
    let script = format!(
        "id -u > {d}/uid; id -G > {d}/groups; echo \"$HOME\" > {d}/home; touch {d}/made",
        d = dir.display()
    );
    for as_root in [false, true] {
        for f in ["uid", "groups", "home", "made"] {
            let _ = std::fs::remove_file(dir.join(f));
        }
        let mut c = vmtrace(&["run", "--progress", "none", "--mem", "64M"]);
        if as_root {
            c.arg("--as-root");
        }
        let out = c
            .args(["-o", "identity.vmtrace.json", "--", "sh", "-c", &script])
            .current_dir(&dir)
            .env("SUDO_UID", "65534")
            .env("SUDO_GID", "65534")
            .output()
            .expect("run vmtrace");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
        let made = std::fs::metadata(dir.join("made")).expect("the command ran");
        if as_root {
            assert_eq!(read("uid").trim(), "0");
            assert_eq!(made.uid(), 0);
            assert!(!text.contains("run as:"), "{text}");
        } else {
            assert_eq!(read("uid").trim(), "65534");
            assert_eq!(made.uid(), 65534);
            assert_eq!(made.gid(), 65534);
            // No supplementary group of root's survives.
            assert!(
                read("groups").split_whitespace().all(|g| g != "0"),
                "{}",
                read("groups")
            );
            assert_ne!(read("home").trim(), "/root");
            assert!(text.contains("run as: nobody (uid 65534"), "{text}");
        }
        // The recording still belongs to the invoker in both cases.
        let rec = std::fs::metadata(dir.join("identity.vmtrace.json")).expect("recording");
        assert_eq!(rec.uid(), 65534);
    }
}
