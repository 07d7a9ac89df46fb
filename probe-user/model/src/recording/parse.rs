//! Reading a recording's bytes, which vmtrace does not control: a
//! streaming, typed parse (serde straight from a reader into the model's
//! structs, never a `serde_json::Value` of the whole file, so memory
//! follows what the recording holds, not its text), in two passes over
//! a seekable reader: the header (`format`, `format_version`,
//! `vmtrace_version`; every other value skipped without being kept)
//! decides whether this vmtrace reads the file at all, then the typed
//! pass, then the checks serde cannot make (histogram payloads). Every
//! failure is one line, with the recording's own text escaped
//! (`model::format::printable`).

use std::io::{Read, Seek, SeekFrom};

use anyhow::{Result, anyhow, bail};
use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::{FORMAT, FORMAT_VERSION, Recording};
use crate::format::printable;

/// A reader that counts the bytes it gave and whether any was not
/// white space (an empty file is told from a truncated one).
struct Counted<R> {
    inner: R,
    bytes: u64,
    content: bool,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bytes += n as u64;
        self.content |= buf[..n].iter().any(|b| !b.is_ascii_whitespace());
        Ok(n)
    }
}

/// A header field as found: a string, an unsigned number, or anything
/// else (skipped without being kept, whatever its size).
enum Loose {
    Str(String),
    U64(u64),
    Other,
}

impl<'de> de::Deserialize<'de> for Loose {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Loose, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Loose;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any value")
            }
            fn visit_str<E>(self, s: &str) -> Result<Loose, E> {
                Ok(Loose::Str(s.into()))
            }
            fn visit_u64<E>(self, n: u64) -> Result<Loose, E> {
                Ok(Loose::U64(n))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Loose, E> {
                Ok(Loose::Other)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Loose, E> {
                Ok(Loose::Other)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Loose, E> {
                Ok(Loose::Other)
            }
            fn visit_unit<E>(self) -> Result<Loose, E> {
                Ok(Loose::Other)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Loose, A::Error> {
                while a.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Loose::Other)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Loose, A::Error> {
                while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Loose::Other)
            }
        }
        d.deserialize_any(V)
    }
}

/// What the first pass keeps: the three fields that say whether and how
/// to read the rest; None when the top level is not an object.
#[derive(Default)]
struct Header {
    object: bool,
    format: Option<Loose>,
    version: Option<Loose>,
    by: Option<Loose>,
}

impl<'de> de::Deserialize<'de> for Header {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Header, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Header;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Header, A::Error> {
                let mut h = Header {
                    object: true,
                    ..Header::default()
                };
                while let Some(key) = a.next_key::<String>()? {
                    let slot = match key.as_str() {
                        "format" => &mut h.format,
                        "format_version" => &mut h.version,
                        "vmtrace_version" => &mut h.by,
                        _ => {
                            a.next_value::<IgnoredAny>()?;
                            continue;
                        }
                    };
                    *slot = Some(a.next_value::<Loose>()?);
                }
                Ok(h)
            }
            // Anything but an object is not a recording; skip it whole.
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Header, A::Error> {
                while a.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Header::default())
            }
            fn visit_str<E>(self, _: &str) -> Result<Header, E> {
                Ok(Header::default())
            }
            fn visit_u64<E>(self, _: u64) -> Result<Header, E> {
                Ok(Header::default())
            }
            fn visit_i64<E>(self, _: i64) -> Result<Header, E> {
                Ok(Header::default())
            }
            fn visit_f64<E>(self, _: f64) -> Result<Header, E> {
                Ok(Header::default())
            }
            fn visit_bool<E>(self, _: bool) -> Result<Header, E> {
                Ok(Header::default())
            }
            fn visit_unit<E>(self) -> Result<Header, E> {
                Ok(Header::default())
            }
        }
        d.deserialize_any(V)
    }
}

/// One JSON document from `r`, trailing white space only.
fn document<T: de::DeserializeOwned, R: Read>(r: R) -> serde_json::Result<T> {
    let mut de = serde_json::Deserializer::from_reader(r);
    let v = T::deserialize(&mut de)?;
    de.end()?;
    Ok(v)
}

impl Recording {
    /// Parses a recording's bytes (what the fuzz tests drive).
    pub fn from_bytes(bytes: &[u8]) -> Result<Recording> {
        Recording::from_reader(std::io::Cursor::new(bytes), u64::MAX)
    }

    /// Parses a recording from `r`, read from its start twice (the header,
    /// then the typed pass), refusing one longer than `max_bytes`
    /// (`host::recording_file` passes a reader that stops one byte past
    /// it). Errors are one line without the file's name, escaped.
    pub fn from_reader<R: Read + Seek>(r: R, max_bytes: u64) -> Result<Recording> {
        Recording::parse(r, max_bytes).map_err(|e| anyhow!("{}", printable(&format!("{e:#}"))))
    }

    fn parse<R: Read + Seek>(mut r: R, max_bytes: u64) -> Result<Recording> {
        let too_long = || {
            anyhow!(
                "longer than the {max_bytes} bytes a recording may be: not a vmtrace \
                 recording, or split its runs into several files"
            )
        };
        let (header, bytes) = {
            let mut counted = Counted {
                inner: std::io::BufReader::with_capacity(1 << 16, &mut r),
                bytes: 0,
                content: false,
            };
            let parsed: serde_json::Result<Header> = document(&mut counted);
            (parsed, (counted.bytes, counted.content))
        };
        let (read, content) = bytes;
        if read > max_bytes {
            return Err(too_long());
        }
        let header = match header {
            Ok(h) => h,
            Err(e) if e.is_eof() && !content => bail!("empty file, not a vmtrace recording"),
            Err(e) if e.is_eof() => bail!(
                "truncated: the file ends at byte {read} in the middle of the recording \
                 (was the disk full, or vmtrace killed while writing?)"
            ),
            Err(e) => bail!("not a vmtrace recording: not JSON ({e})"),
        };
        check_header(&header)?;
        r.seek(SeekFrom::Start(0))
            .map_err(|e| anyhow!("cannot read the recording again: {e}"))?;
        let reader = std::io::BufReader::with_capacity(1 << 16, (&mut r).take(max_bytes));
        let mut de = serde_json::Deserializer::from_reader(reader);
        let rec: Recording = serde_path_to_error::deserialize(&mut de)
            .map_err(|e| anyhow!("corrupt recording: {}: {}", e.path(), e.inner()))?;
        de.end()
            .map_err(|e| anyhow!("corrupt recording: changed while it was read ({e})"))?;
        rec.check()?;
        Ok(rec)
    }
}

/// The first pass's verdict: a recording of a version this vmtrace reads.
fn check_header(h: &Header) -> Result<()> {
    if !h.object || !matches!(&h.format, Some(Loose::Str(f)) if f == FORMAT) {
        bail!("not a vmtrace recording: no \"format\": \"{FORMAT}\" field");
    }
    let Some(Loose::U64(version)) = h.version else {
        bail!("corrupt recording: format_version missing or not a number");
    };
    if version > u64::from(FORMAT_VERSION) {
        let by = match &h.by {
            Some(Loose::Str(s)) => s.as_str(),
            _ => "a newer vmtrace",
        };
        bail!(
            "recording format version {version} (written by vmtrace {by}) is newer than \
             this vmtrace {} reads (up to {FORMAT_VERSION}); upgrade vmtrace to read it",
            env!("CARGO_PKG_VERSION")
        );
    }
    if version == 0 {
        bail!("corrupt recording: format_version 0 does not exist");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(bytes: &[u8], max: u64) -> String {
        let r = Recording::from_reader(std::io::Cursor::new(bytes), max);
        format!("{:#}", r.expect_err("must fail"))
    }

    #[test]
    fn the_first_pass_decides_in_one_escaped_line() {
        assert!(err(b" \n\t ", 100).contains("empty file"));
        // Past the cap while reading (a file that grew after its fstat).
        let long = [b' '; 64];
        assert!(err(&long, 10).contains("longer than the 10 bytes"));
        let e = err(
            b"{\"format\": \"vmtrace-recording\", \"format_version\": ",
            100,
        );
        assert!(e.contains("truncated: the file ends at byte 50"), "{e}");
        for not in [
            &b"[\"vmtrace-recording\", 1]"[..],
            b"\"vmtrace-recording\"",
            b"{}",
        ] {
            assert!(err(not, 100).contains("no \"format\""));
        }
        let e = err(
            b"{\"format\":\"vmtrace-recording\",\"format_version\":2,\
              \"vmtrace_version\":\"9\\u001b[2J\\nforged\",\"runs\":{\"x\":[1,2]}}",
            1000,
        );
        assert!(
            e.contains("version 2 (written by vmtrace 9\\x1b[2J\\nforged)"),
            "{e}"
        );
        assert!(!e.chars().any(char::is_control), "{e:?}");
        let e = err(
            b"{\"format\":\"vmtrace-recording\",\"format_version\":\"1\"}",
            100,
        );
        assert!(e.contains("format_version missing or not a number"), "{e}");
    }
}
