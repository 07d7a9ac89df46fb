//! Which kernel to boot: an image on disk (bzImage or vmlinuz, with its
//! modules directory), or a Debian kernel package that vmtrace downloads
//! with apt and unpacks into a cache. Nothing is ever installed as the
//! host's kernel: the package is only unpacked (`dpkg-deb -x`).

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use crate::host::root_program;
use anyhow::{Context, Result, bail};

/// Where downloaded kernels are unpacked (kept between runs).
pub const CACHE_DIR: &str = "/var/cache/vmtrace/kernels";

/// A kernel ready to boot.
#[derive(Clone, Debug)]
pub struct Kernel {
    /// How the user named it.
    pub spec: String,
    pub image: PathBuf,
    /// `lib/modules/<release>`: the modules the guest needs are taken
    /// from here (virtio, 9p, ext4).
    pub modules: Option<PathBuf>,
    /// The release, when known before booting (from the modules dir).
    pub release: Option<String>,
    /// How tables name it when its release would not tell it from
    /// another (a kernel built from a tree: the tree and its patches).
    pub label: Option<String>,
}

/// Every `--kernel`, in order (None: `host`): images found, Debian
/// kernels downloaded, trees built as sudo's invoker (`kbuild`).
pub fn resolve_all(
    specs: &[String],
    exe: &Path,
    build_cache: Option<&Path>,
) -> Result<Vec<Option<Kernel>>> {
    let mut resolved = Vec::new();
    for spec in specs {
        if spec == "host" {
            resolved.push(None);
        } else if let Some(tree) = super::kbuild::TreeSpec::parse(spec) {
            let built = super::kbuild::build_as_invoker(exe, &tree, build_cache)?;
            if crate::session::interrupt::take_pending().is_some() {
                bail!("stopped while building {}", built.label);
            }
            resolved.push(Some(Kernel {
                spec: spec.clone(),
                image: built.image,
                modules: None,
                release: Some(built.release),
                label: Some(crate::model::bounded::cut_label(&built.label)),
            }));
        } else {
            resolved.push(Some(resolve(spec)?));
        }
    }
    Ok(resolved)
}

/// Resolves `--kernel K`:
/// - a path to a kernel image (`--kernel /boot/vmlinuz-6.1.0-57-amd64`):
///   its modules from `/lib/modules/<release>` when the name tells the
///   release, or from `PATH:MODULES_DIR`;
/// - `debian:6.1`, `debian:6.12`: the newest Debian kernel of that line
///   that apt knows;
/// - a Debian package name (`linux-image-6.1.0-57-amd64`).
pub fn resolve(spec: &str) -> Result<Kernel> {
    let (path_part, modules) = match spec.split_once(':') {
        Some((p, m)) if Path::new(p).is_file() => (p, Some(PathBuf::from(m))),
        _ => (spec, None),
    };
    let path = Path::new(path_part);
    if path.is_file() {
        let release = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix("vmlinuz-"))
            .map(str::to_string);
        let modules = modules.or_else(|| {
            release
                .as_ref()
                .map(|r| Path::new("/lib/modules").join(r))
                .filter(|d| d.is_dir())
        });
        return Ok(Kernel {
            spec: spec.into(),
            image: path.into(),
            modules,
            release,
            label: None,
        });
    }
    if spec.contains('/') {
        bail!(
            "--kernel {spec}: no such kernel image; give a bzImage/vmlinuz path, debian:6.1 or a Debian package name"
        );
    }
    let package = || match spec.strip_prefix("debian:") {
        Some(line) => newest_package(line),
        None if spec.starts_with("linux-image-") => Ok(spec.to_string()),
        None => bail!(
            "--kernel {spec}: give a kernel image path, debian:6.1 / debian:6.12, or a \
             Debian package name like linux-image-6.1.0-57-amd64"
        ),
    };
    let k = match unpacked(&package()?) {
        Ok(k) => k,
        // Stale apt lists name packages the mirror no longer has: refresh
        // them once and look again.
        Err(e) => {
            eprintln!("vmtrace: {e:#}; running apt-get update and trying again");
            let _ = Command::new(root_program::system("apt-get", "apt")?)
                .args(["update", "-q"])
                .output();
            unpacked(&package()?)?
        }
    };
    Ok(Kernel {
        spec: spec.into(),
        ..k
    })
}

/// The newest amd64 kernel package of a Debian kernel line apt knows
/// (`6.1` -> linux-image-6.1.0-N-amd64, `6.12` ->
/// linux-image-6.12.N+deb12-amd64-unsigned).
fn newest_package(line: &str) -> Result<String> {
    if line.is_empty() || !line.chars().all(|c| c.is_ascii_digit() || c == '.') {
        bail!("--kernel debian:{line}: give a kernel line like debian:6.1 or debian:6.12");
    }
    let search = |pattern: &str| -> Result<Vec<String>> {
        let out = Command::new(root_program::system("apt-cache", "apt")?)
            .args(["search", "--names-only", pattern])
            .output()
            .context("running apt-cache (a Debian system is needed for debian:VERSION)")?;
        Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .filter(|n| !n.contains("-cloud-") && !n.contains("-rt-") && !n.ends_with("-dbg"))
            .map(str::to_string)
            .collect())
    };
    let escaped = line.replace('.', "\\.");
    let pattern = format!("^linux-image-{escaped}[.+0-9a-z-]*-amd64(-unsigned)?$");
    let of_line = |names: Vec<String>| -> Vec<String> {
        names
            .into_iter()
            .filter(|n| {
                n.strip_prefix("linux-image-")
                    .and_then(|v| v.strip_prefix(line))
                    .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('-'))
            })
            .collect()
    };
    let mut names = of_line(search(&pattern)?);
    if names.is_empty() {
        // apt's lists may predate the line (a fresh machine): refresh once.
        eprintln!("vmtrace: apt knows no Debian {line} kernel yet; running apt-get update");
        let _ = Command::new(root_program::system("apt-get", "apt")?)
            .args(["update", "-q"])
            .output();
        names = of_line(search(&pattern)?);
    }
    names.sort_by_key(|n| version_key(n));
    names.pop().with_context(|| {
        format!(
            "apt knows no Debian {line} kernel; run `apt-get update`, or give a \
             kernel image path"
        )
    })
}

/// Numbers in a package name, for "newest" ordering (6.1.0-57 > 6.1.0-9).
fn version_key(name: &str) -> Vec<u64> {
    name.split(|c: char| !c.is_ascii_digit())
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// The package downloaded (once) and unpacked into the cache.
fn unpacked(package: &str) -> Result<Kernel> {
    if !package
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "+-._".contains(c))
    {
        bail!("--kernel {package}: not a Debian package name");
    }
    let dir = Path::new(CACHE_DIR).join(package);
    let done = dir.join(".unpacked");
    if !done.exists() {
        let debs = Path::new(CACHE_DIR).join("debs");
        std::fs::create_dir_all(&debs).with_context(|| format!("creating {}", debs.display()))?;
        eprintln!("vmtrace: downloading {package} (apt-get download; not installed)");
        let out = Command::new(root_program::system("apt-get", "apt")?)
            .args(["download", "-q", package])
            .current_dir(&debs)
            .output()
            .context("running apt-get")?;
        if !out.status.success() {
            bail!(
                "apt-get download {package} failed: {}; check the name (apt-cache search linux-image)",
                String::from_utf8_lossy(&out.stderr)
                    .trim()
                    .lines()
                    .last()
                    .unwrap_or("")
            );
        }
        let deb = std::fs::read_dir(&debs)?
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&format!("{package}_")) && n.ends_with(".deb"))
            })
            .with_context(|| format!("apt-get download left no {package}_*.deb"))?;
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        let ok = Command::new(root_program::system("dpkg-deb", "dpkg")?)
            .arg("-x")
            .arg(&deb)
            .arg(&dir)
            .status()
            .context("running dpkg-deb")?
            .success();
        if !ok {
            bail!("dpkg-deb -x {} failed", deb.display());
        }
        std::fs::write(&done, b"")?;
    }
    let boot = dir.join("boot");
    let image = std::fs::read_dir(&boot)
        .with_context(|| format!("{} has no boot/", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("vmlinuz-"))
        })
        .with_context(|| format!("no vmlinuz in {}", boot.display()))?;
    let release = image
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix("vmlinuz-"))
        .map(str::to_string);
    let modules = release
        .as_ref()
        .map(|r| dir.join("lib/modules").join(r))
        .filter(|d| d.is_dir());
    Ok(Kernel {
        spec: package.into(),
        image,
        modules,
        release,
        label: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newest_is_by_numbers_not_text() {
        let mut v = [
            "linux-image-6.1.0-9-amd64",
            "linux-image-6.1.0-57-amd64",
            "linux-image-6.1.0-42-amd64",
        ];
        v.sort_by_key(|n| version_key(n));
        assert_eq!(v.last(), Some(&"linux-image-6.1.0-57-amd64"));
    }

    #[test]
    fn bad_specs_say_what_to_give() {
        for bad in ["/no/such/vmlinuz", "6.1", "debian:six", "debian:"] {
            let e = format!("{:#}", resolve(bad).expect_err(bad));
            assert!(e.contains("--kernel"), "{e}");
        }
    }
}
