//! The guest's initramfs: a static busybox, the kernel modules the guest
//! needs to reach its disks and the host (virtio, 9p, ext4, overlay; decompressed
//! on the host, in dependency order), and an /init that mounts the
//! host's root read-only over 9p (under the guest image, when given:
//! `vmtrace.root=` on the command line, an overlay), the job directory
//! read-write, and runs the job script inside that root with chroot.

use std::{
    collections::BTreeMap,
    io::Write,
    os::unix::fs::OpenOptionsExt,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, Result, bail};

/// Modules the guest needs, when the kernel has them as modules (built-in
/// ones are simply absent from modules.dep). crc32c: ext4's checksums.
const WANTED: &[&str] = &[
    "virtio_pci",
    "virtio_blk",
    "9pnet_virtio",
    "9p",
    "crc32c_generic",
    "crc32c_intel",
    "ext4",
    "overlay",
];

/// Where, inside the host root, the job directory is mounted in the guest
/// (an empty directory on any Debian system).
pub const GUEST_JOB_DIR: &str = "/mnt";

/// Builds the initramfs (newc cpio, uncompressed) at `out`.
pub fn build(modules: Option<&Path>, out: &Path) -> Result<()> {
    let busybox = ["/bin/busybox", "/usr/bin/busybox"]
        .iter()
        .map(Path::new)
        .find(|p| p.is_file())
        .context("busybox not found: install busybox-static (cargo xtask setup does)")?;
    let busybox_bytes = std::fs::read(busybox)?;
    // The initramfs has no C library: a dynamically linked busybox (the
    // `busybox` package, not `busybox-static`) cannot start there.
    if has_interpreter(&busybox_bytes) {
        bail!(
            "{} is dynamically linked; the guest needs a static busybox: install \
             busybox-static",
            busybox.display()
        );
    }
    let mut a = Cpio::default();
    for d in ["bin", "dev", "proc", "sys", "host", "modules"] {
        a.dir(d);
    }
    a.char_dev("dev/console", 5, 1);
    a.file("bin/busybox", 0o755, busybox_bytes);
    a.file("init", 0o755, INIT.as_bytes().to_vec());
    if let Some(dir) = modules {
        for (i, (name, bytes)) in module_order(dir)?.into_iter().enumerate() {
            a.file(&format!("modules/{i:02}-{name}.ko"), 0o644, bytes);
        }
    }
    std::fs::write(out, a.finish()).with_context(|| format!("writing {}", out.display()))
}

/// Whether an ELF64 executable names a program interpreter (PT_INTERP):
/// it is dynamically linked.
fn has_interpreter(elf: &[u8]) -> bool {
    let u16_at = |o: usize| {
        elf.get(o..o + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]) as usize)
    };
    let u64_at = |o: usize| {
        elf.get(o..o + 8)
            .and_then(|b| b.try_into().ok())
            .map(|b: [u8; 8]| u64::from_le_bytes(b) as usize)
    };
    if !elf.starts_with(b"\x7fELF") || elf.get(4) != Some(&2) {
        return false;
    }
    let (Some(phoff), Some(size), Some(count)) = (u64_at(0x20), u16_at(0x36), u16_at(0x38)) else {
        return false;
    };
    (0..count.min(256)).any(|i| {
        elf.get(phoff + i * size..phoff + i * size + 4)
            .is_some_and(|t| t == 3u32.to_le_bytes())
    })
}

/// The wanted modules and their dependencies, dependencies first, each
/// decompressed. Dependencies come from each module's own `.modinfo`
/// (`depends=`), so that no modules.dep is needed (packages leave it to
/// depmod at install time) and only these few modules are decompressed.
fn module_order(dir: &Path) -> Result<Vec<(String, Vec<u8>)>> {
    let mut index = BTreeMap::new();
    index_modules(dir, &mut index, 0);
    let mut order: Vec<(String, Vec<u8>)> = Vec::new();
    fn visit(
        name: &str,
        index: &BTreeMap<String, PathBuf>,
        order: &mut Vec<(String, Vec<u8>)>,
        depth: u32,
    ) -> Result<()> {
        if depth > 32 || order.iter().any(|(n, _)| n == name) {
            return Ok(());
        }
        // Not a module: built in (or absent, which insmod of its users
        // will say on the console).
        let Some(path) = index.get(name) else {
            return Ok(());
        };
        let bytes = decompressed(path)?;
        for dep in modinfo_depends(&bytes) {
            visit(&dep, index, order, depth + 1)?;
        }
        if !order.iter().any(|(n, _)| n == name) {
            order.push((name.to_string(), bytes));
        }
        Ok(())
    }
    for want in WANTED {
        visit(&want.replace('-', "_"), &index, &mut order, 0)?;
    }
    Ok(order)
}

/// Every module file under `dir`, by module name.
fn index_modules(dir: &Path, index: &mut BTreeMap<String, PathBuf>, depth: u32) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let path = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if e.file_type().is_ok_and(|t| t.is_dir()) && depth < 12 {
            index_modules(&path, index, depth + 1);
        } else if name.contains(".ko") {
            index.insert(module_name(&name), path);
        }
    }
}

/// The `depends=a,b` entry of a module's .modinfo strings.
fn modinfo_depends(module: &[u8]) -> Vec<String> {
    let key = b"depends=";
    module
        .windows(key.len() + 1)
        .position(|w| w[0] == 0 && &w[1..] == key)
        .map(|at| {
            let rest = &module[at + 1 + key.len()..];
            let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
            String::from_utf8_lossy(&rest[..end])
                .split(',')
                .filter(|d| !d.is_empty())
                .map(|d| d.replace('-', "_"))
                .collect()
        })
        .unwrap_or_default()
}

/// `kernel/fs/9p/9p.ko.xz` -> `9p`; dashes as underscores (as modprobe).
fn module_name(path: &str) -> String {
    let file = path.rsplit('/').next().unwrap_or(path);
    file.split(".ko").next().unwrap_or(file).replace('-', "_")
}

/// A module's bytes, decompressed (busybox insmod takes plain ELF).
fn decompressed(path: &Path) -> Result<Vec<u8>> {
    let name = path.to_string_lossy();
    let tool = if name.ends_with(".xz") {
        "xz"
    } else if name.ends_with(".zst") {
        "zstd"
    } else if name.ends_with(".gz") {
        "gzip"
    } else {
        return std::fs::read(path).with_context(|| format!("reading {name}"));
    };
    let out = Command::new(tool)
        .args(["-dc"])
        .arg(path)
        .output()
        .with_context(|| format!("running {tool} for {name} (install it)"))?;
    if !out.status.success() {
        bail!("{tool} -dc {name} failed");
    }
    Ok(out.stdout)
}

/// The guest's /init. Every step says what failed on the console, which
/// the host keeps and shows when a guest does not finish.
const INIT: &str = r#"#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
fail() { echo "vmtrace-guest: FAILED: $*"; sync; poweroff -f; }
for m in /modules/*.ko; do
  [ -e "$m" ] && { insmod "$m" 2>/dev/null || echo "vmtrace-guest: insmod $m failed"; }
done
# The initramfs stays in memory: its module files (4-5 MiB) are not
# needed once loaded, and a small guest wants that memory for the job.
rm -f /modules/*.ko
ROOTIMG= ; SWAP=
for a in $(cat /proc/cmdline); do
  case "$a" in
    vmtrace.root=*) ROOTIMG=${a#vmtrace.root=} ;;
    vmtrace.swap=*) SWAP=${a#vmtrace.swap=} ;;
  esac
done
H=/host
if [ -n "$ROOTIMG" ]; then
  mkdir -p /host9p /image
  mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144 hostroot /host9p \
    || fail "mounting the host root over 9p"
  mount -t ext4 -o ro,noload "$ROOTIMG" /image || fail "mounting the guest image $ROOTIMG"
  mount -t overlay overlay -o ro,lowerdir=/image:/host9p $H \
    || fail "mounting the guest image over the host root (overlay)"
else
  mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144 hostroot $H \
    || fail "mounting the host root over 9p"
fi
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 job $H/mnt \
  || fail "mounting the job directory over 9p"
mount -t proc proc $H/proc
mount -t sysfs sys $H/sys
mount -t devtmpfs dev $H/dev
mount -t tmpfs tmp $H/tmp
mount -t tmpfs run $H/run
mount -t cgroup2 cgroup2 $H/sys/fs/cgroup || fail "mounting cgroup2"
mount -t ext4 /dev/vda $H/var/tmp || fail "mounting the scratch disk"
[ -n "$SWAP" ] && { swapon "$SWAP" || fail "swapon of the swap disk $SWAP"; }
echo "vmtrace-guest: $(uname -r) up, $(grep MemTotal /proc/meminfo)"
chroot $H /bin/sh /mnt/guest.sh
echo "vmtrace-guest: job ended with status $?"
sync
umount $H/var/tmp 2>/dev/null
poweroff -f
"#;

/// A newc ("070701") cpio archive, built in memory.
#[derive(Default)]
struct Cpio {
    data: Vec<u8>,
    ino: u32,
}

impl Cpio {
    fn entry(&mut self, name: &str, mode: u32, rdev: (u32, u32), body: &[u8]) {
        self.ino += 1;
        let header = format!(
            "070701{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}",
            self.ino,
            mode,
            0,
            0,
            1,
            0,
            body.len(),
            0,
            0,
            rdev.0,
            rdev.1,
            name.len() + 1,
            0
        );
        self.data.extend_from_slice(header.as_bytes());
        self.data.extend_from_slice(name.as_bytes());
        self.data.push(0);
        self.pad();
        self.data.extend_from_slice(body);
        self.pad();
    }

    fn pad(&mut self) {
        while !self.data.len().is_multiple_of(4) {
            self.data.push(0);
        }
    }

    fn dir(&mut self, name: &str) {
        self.entry(name, 0o040_755, (0, 0), &[]);
    }

    fn file(&mut self, name: &str, perm: u32, body: Vec<u8>) {
        self.entry(name, 0o100_000 | perm, (0, 0), &body);
    }

    fn char_dev(&mut self, name: &str, major: u32, minor: u32) {
        self.entry(name, 0o020_600, (major, minor), &[]);
    }

    fn finish(mut self) -> Vec<u8> {
        self.entry("TRAILER!!!", 0, (0, 0), &[]);
        let mut out = self.data;
        // The kernel reads the archive in 512-byte blocks.
        while !out.len().is_multiple_of(512) {
            out.push(0);
        }
        out
    }
}

/// Writes the job script the guest runs inside the host root.
pub fn write_job_script(job: &Path, cwd: &str, lines: &[String]) -> Result<()> {
    // The job directory is the user's: the script is made afresh, never
    // written through a link planted at its name.
    let script = job.join("guest.sh");
    let _ = std::fs::remove_file(&script);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&script)
        .with_context(|| format!("creating {}", script.display()))?;
    writeln!(
        f,
        "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    )?;
    writeln!(f, "export HOME=/tmp TMPDIR=/tmp")?;
    writeln!(f, "cd {cwd}")?;
    for l in lines {
        writeln!(f, "{l}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modules_come_after_their_dependencies() {
        let dir = std::env::temp_dir().join(format!("vmtrace-mods-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (path, depends) in [
            ("kernel/fs/9p/9p.ko", "netfs,9pnet"),
            ("kernel/net/9p/9pnet.ko", ""),
            ("kernel/fs/netfs/netfs.ko", ""),
            ("kernel/net/9p/9pnet_virtio.ko", "9pnet"),
            ("kernel/drivers/block/virtio_blk.ko", ""),
            ("kernel/sound/unrelated.ko", ""),
        ] {
            let p = dir.join(path);
            std::fs::create_dir_all(p.parent().expect("dir")).expect("mkdir");
            let body = format!("\x7fELF...\0license=GPL\0depends={depends}\0vermagic=6.1\0");
            std::fs::write(&p, body).expect("write");
        }
        let order: Vec<String> = module_order(&dir)
            .expect("order")
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        let at = |m: &str| order.iter().position(|o| o == m).expect(m);
        assert!(at("9pnet") < at("9pnet_virtio") && at("9pnet") < at("9p"));
        assert!(at("netfs") < at("9p"));
        assert!(!order.iter().any(|o| o == "unrelated"));
        assert_eq!(order.iter().filter(|o| *o == "9pnet").count(), 1);
        assert_eq!(modinfo_depends(b"x\0depends=\0"), Vec::<String>::new());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn dynamic_executables_are_told_from_static_ones() {
        // This test binary is dynamically linked (std links libc).
        let me = std::fs::read("/proc/self/exe").expect("read self");
        assert!(has_interpreter(&me));
        if let Ok(b) = std::fs::read("/bin/busybox") {
            // Debian's busybox-static (what setup installs) has none.
            let dynamic = has_interpreter(&b);
            let pkg_static = Path::new("/usr/share/doc/busybox-static").exists();
            assert!(!(dynamic && pkg_static));
        }
        assert!(!has_interpreter(b"not an elf"));
    }

    #[test]
    fn cpio_is_newc_and_block_padded() {
        let mut a = Cpio::default();
        a.dir("bin");
        a.file("init", 0o755, b"#!/bin/sh\n".to_vec());
        let out = a.finish();
        assert!(out.starts_with(b"070701"));
        assert_eq!(out.len() % 512, 0);
        let text = String::from_utf8_lossy(&out);
        assert!(text.contains("init\0") && text.contains("TRAILER!!!\0"));
    }
}
