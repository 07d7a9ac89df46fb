//! tracefs: finding (or mounting) it, and reading the `format` files that
//! say where each field of a tracepoint's record lies on the running kernel.
//! Layouts change between kernels, so vmtrace never compiles offsets in.

use std::{
    collections::BTreeMap,
    ffi::CString,
    fs, io,
    path::{Path, PathBuf},
};

use anyhow::{Context, Result, bail};

/// One `field:` line of a format file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldDef {
    /// The C declaration without the name, e.g. `unsigned long`.
    pub c_type: String,
    pub offset: u16,
    pub size: u16,
    pub signed: bool,
}

/// A parsed `events/<system>/<event>/format` file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Format {
    pub name: String,
    pub id: Option<u32>,
    pub fields: BTreeMap<String, FieldDef>,
    /// The `print fmt:` line after its label (how `trace` prints the
    /// event: GFP and other flag names are read from it).
    pub print_fmt: String,
}

impl Format {
    /// Parses the text of a format file. Lines it does not understand are
    /// skipped, so that a newer kernel's additions do not break vmtrace;
    /// a file with no fields at all is an error.
    pub fn parse(text: &str) -> Result<Format> {
        let mut format = Format::default();
        for line in text.lines() {
            let line = line.trim();
            if let Some(name) = line.strip_prefix("name:") {
                format.name = name.trim().to_string();
            } else if let Some(id) = line.strip_prefix("ID:") {
                format.id = id.trim().parse().ok();
            } else if let Some(fmt) = line.strip_prefix("print fmt:") {
                format.print_fmt = fmt.trim().to_string();
            } else if line.starts_with("field:")
                && let Some((name, def)) = parse_field(line)
            {
                format.fields.insert(name, def);
            }
        }
        if format.fields.is_empty() {
            bail!("no `field:` lines");
        }
        Ok(format)
    }

    pub fn field(&self, name: &str) -> Option<&FieldDef> {
        self.fields.get(name)
    }
}

/// `field:unsigned long nr_scanned;\toffset:16;\tsize:8;\tsigned:0;`
fn parse_field(line: &str) -> Option<(String, FieldDef)> {
    let mut decl = None;
    let (mut offset, mut size, mut signed) = (None, None, None);
    for part in line.split(';') {
        let part = part.trim();
        if let Some(d) = part.strip_prefix("field:") {
            decl = Some(d.trim());
        } else if let Some(v) = part.strip_prefix("offset:") {
            offset = v.trim().parse().ok();
        } else if let Some(v) = part.strip_prefix("size:") {
            size = v.trim().parse().ok();
        } else if let Some(v) = part.strip_prefix("signed:") {
            signed = Some(v.trim() == "1");
        }
    }
    let decl = decl?;
    // Arrays: `char comm[16]`, `__data_loc char[] name`.
    let decl_no_array = match decl.find('[') {
        Some(i) if !decl.starts_with("__data_loc") => &decl[..i],
        _ => decl,
    };
    let split = decl_no_array.rfind([' ', '*'])?;
    let name = decl_no_array[split + 1..].trim().to_string();
    let c_type = decl_no_array[..=split].trim().to_string();
    // A C identifier, or the line is not what it seems (a damaged file:
    // found by fuzzing, tests/fuzz.rs).
    let identifier = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !identifier {
        return None;
    }
    Some((
        name,
        FieldDef {
            c_type,
            offset: offset?,
            size: size?,
            signed: signed.unwrap_or(false),
        },
    ))
}

/// A tracefs tree: the live one, or a copy of another kernel's formats.
#[derive(Clone, Debug)]
pub struct TraceFs {
    events: PathBuf,
}

impl TraceFs {
    /// A directory laid out like tracefs's `events/` (or holding it):
    /// `<dir>/<system>/<event>/format`. Used for other kernels' formats.
    pub fn at(dir: &Path) -> TraceFs {
        let events = dir.join("events");
        TraceFs {
            events: if events.is_dir() {
                events
            } else {
                dir.to_path_buf()
            },
        }
    }

    /// The running kernel's tracefs. Mounts it at /sys/kernel/tracing when
    /// it is not mounted anywhere; the returned guard unmounts it again.
    pub fn live() -> Result<(TraceFs, Option<MountGuard>)> {
        for dir in ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"] {
            if Path::new(dir).join("events").is_dir() {
                return Ok((TraceFs::at(Path::new(dir)), None));
            }
        }
        let target = Path::new("/sys/kernel/tracing");
        mount_tracefs(target).with_context(|| {
            format!(
                "tracefs is not mounted and mounting it at {} failed; \
                 mount it with `mount -t tracefs nodev {}`",
                target.display(),
                target.display()
            )
        })?;
        Ok((
            TraceFs::at(target),
            Some(MountGuard {
                target: target.to_path_buf(),
            }),
        ))
    }

    /// The format of `system:event`, or `None` when this kernel has no such
    /// tracepoint.
    pub fn format(&self, system: &str, event: &str) -> Result<Option<Format>> {
        let path = self.events.join(system).join(event).join("format");
        match fs::read_to_string(&path) {
            Ok(text) => Format::parse(&text)
                .map(Some)
                .with_context(|| format!("cannot parse {}", path.display())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
        }
    }
}

fn mount_tracefs(target: &Path) -> io::Result<()> {
    let c = |s: &str| CString::new(s).map_err(io::Error::other);
    let target = c(&target.to_string_lossy())?;
    let (src, fstype) = (c("nodev")?, c("tracefs")?);
    // As the system mounts it: no set-uid programs, devices or programs
    // run from it (it holds none; nothing there is to be trusted if it
    // ever did).
    let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
    // SAFETY: all pointers are valid NUL-terminated strings; data is NULL.
    let rc = unsafe {
        libc::mount(
            src.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            flags,
            std::ptr::null(),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Unmounts the tracefs that vmtrace mounted, leaving the machine as found.
#[derive(Debug)]
pub struct MountGuard {
    target: PathBuf,
}

impl Drop for MountGuard {
    fn drop(&mut self) {
        if let Ok(t) = CString::new(self.target.to_string_lossy().as_bytes()) {
            // SAFETY: a valid path; failure (busy) only leaves it mounted.
            unsafe { libc::umount2(t.as_ptr(), libc::MNT_DETACH) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHRINK: &str = "name: mm_vmscan_lru_shrink_inactive
ID: 626
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:int nid;\toffset:8;\tsize:4;\tsigned:1;
\tfield:unsigned long nr_scanned;\toffset:16;\tsize:8;\tsigned:0;
\tfield:char comm[16];\toffset:24;\tsize:16;\tsigned:0;
\tfield:__data_loc char[] name;\toffset:40;\tsize:4;\tsigned:0;
\tfield:const void * ptr;\toffset:48;\tsize:8;\tsigned:0;

print fmt: \"nid=%d\", REC->nid
";

    #[test]
    fn parses_fields_offsets_and_types() {
        let f = Format::parse(SHRINK).expect("parses");
        assert_eq!(f.name, "mm_vmscan_lru_shrink_inactive");
        assert_eq!(f.id, Some(626));
        let nid = f.field("nid").expect("nid");
        assert_eq!((nid.offset, nid.size, nid.signed), (8, 4, true));
        assert_eq!(nid.c_type, "int");
        let scanned = f.field("nr_scanned").expect("nr_scanned");
        assert_eq!((scanned.offset, scanned.size), (16, 8));
        assert_eq!(scanned.c_type, "unsigned long");
        assert_eq!(f.field("comm").map(|d| d.size), Some(16));
        assert_eq!(f.field("name").map(|d| d.offset), Some(40));
        assert_eq!(
            f.field("ptr").map(|d| d.c_type.as_str()),
            Some("const void *")
        );
    }

    #[test]
    fn rejects_text_without_fields() {
        assert!(Format::parse("name: x\nID: 1\n").is_err());
        assert!(Format::parse("").is_err());
    }

    #[test]
    fn skips_garbage_lines() {
        let text = format!("{SHRINK}\n\tfield:;;;\n\tfield:int x;\toffset:zz;\n");
        let f = Format::parse(&text).expect("parses");
        assert!(f.field("x").is_none());
        assert!(f.field("nid").is_some());
    }
}
