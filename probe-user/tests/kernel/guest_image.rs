//! The guests' image and disks (issue 30, finding 1): `vmtrace kernels`
//! used to copy the host's whole /etc (shadow, SSH host keys) into a
//! 0644 image in the output directory, where any local user could read
//! it with debugfs, and left it there after a kill -9. Now the image
//! holds only /etc's allowlist, is 0600 in root's 0700 directory under
//! /var/tmp, and the next vmtrace sweeps what a killed one left, and
//! nothing of another user's.

use std::{os::unix::fs::MetadataExt, path::Path, process::Command};

use vmtrace::{
    host::private_dir::{self, PrivateDir},
    session::guests::rootimg,
};

use crate::common::VMTRACE;

/// The names in the image's /etc (debugfs `ls -p`: /inode/mode/uid/gid/name/size/).
fn etc_names(image: &Path) -> Vec<String> {
    let out = Command::new("debugfs")
        .args(["-R", "ls -p /etc"])
        .arg(image)
        .output()
        .expect("debugfs (e2fsprogs)");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split('/').nth(5).map(str::to_string))
        .filter(|n| !n.is_empty() && n != "." && n != "..")
        .collect()
}

#[test]
#[ignore = "needs root"]
fn the_guest_image_holds_no_secret_and_only_root_reads_it() {
    assert!(
        Path::new("/etc/shadow").exists(),
        "the host has /etc/shadow"
    );
    let private = PrivateDir::create("kernels").expect("private dir");
    let image = rootimg::build(Path::new(VMTRACE), &private).expect("image");
    let dir = std::fs::metadata(private.path()).expect("stat dir");
    let file = std::fs::metadata(&image.path).expect("stat image");
    println!(
        "dir {} uid {} mode {:o}; image {} mode {:o}",
        private.path().display(),
        dir.uid(),
        dir.mode() & 0o7777,
        image.path.display(),
        file.mode() & 0o7777
    );
    assert_eq!((dir.uid(), dir.mode() & 0o7777), (0, 0o700));
    assert_eq!((file.uid(), file.mode() & 0o7777), (0, 0o600));

    let names = etc_names(&image.path);
    println!("image /etc: {names:?}");
    for needed in ["passwd", "group", "ld.so.cache"] {
        assert!(
            names.iter().any(|n| n == needed),
            "{needed} missing: {names:?}"
        );
    }
    for secret in [
        "shadow", "gshadow", "shadow-", "gshadow-", "ssh", "ssl", "sudoers",
    ] {
        assert!(!names.iter().any(|n| n == secret), "{secret} in the image");
    }
    for n in &names {
        assert!(
            rootimg::ETC_ALLOWED.contains(&n.as_str()),
            "{n} not allowed"
        );
    }

    // Another user can neither open the image nor the directory.
    let as_nobody = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "debugfs",
        ])
        .args(["-R", "cat /etc/passwd"])
        .arg(&image.path)
        .output()
        .expect("setpriv");
    let said = String::from_utf8_lossy(&as_nobody.stderr);
    println!("debugfs as nobody: {}", said.trim());
    assert!(as_nobody.stdout.is_empty(), "nobody read the image");
    assert!(said.contains("Permission denied"), "{said}");
    let path = private.path().to_path_buf();
    drop(image);
    drop(private);
    assert!(!path.exists(), "{} left behind", path.display());
}

#[test]
#[ignore = "needs root"]
fn a_killed_vmtraces_guest_files_are_swept_and_another_users_are_not() {
    let parent = Path::new(private_dir::PARENT);
    // pid_max is at most 2^22: these pids cannot run.
    let roots = parent.join("vmtrace-kernels-4194301-00");
    let theirs = parent.join("vmtrace-kernels-4194302-00");
    for d in [&roots, &theirs] {
        let _ = std::fs::remove_dir_all(d);
        std::fs::create_dir(d).expect("mkdir");
        std::fs::write(d.join("guest-root.img"), "x").expect("write");
    }
    std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).expect("chown");
    let made = PrivateDir::create("kernels").expect("private dir");
    let (roots_gone, theirs_kept) = (!roots.exists(), theirs.join("guest-root.img").exists());
    let _ = std::fs::remove_dir_all(&theirs);
    assert!(roots_gone, "a dead vmtrace's directory was kept");
    assert!(theirs_kept, "another user's directory was removed");
    drop(made);
}
