//! Just enough of the kernel's BTF (/sys/kernel/btf/vmlinux) to find
//! where a member of a kernel struct lies on the running kernel, e.g.
//! `task_struct.min_flt`. Rust eBPF has no CO-RE relocations for such
//! reads, so vmtrace resolves the offsets here, at load time, and passes
//! them to the programs like tracepoint field offsets.
//!
//! Format: include/uapi/linux/btf.h (a header, a type section of
//! variable-length records, a string section).

use std::path::Path;

use anyhow::{Result, bail};

const MAGIC: u16 = 0xeb9f;

const KIND_STRUCT: u32 = 4;
const KIND_UNION: u32 = 5;

/// One struct or union member.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Member {
    name: String,
    type_id: u32,
    /// Bit offset from the start of the containing type.
    bit_offset: u32,
}

#[derive(Clone, Debug)]
enum Type {
    /// Struct or union, with its name (empty when anonymous).
    Composite {
        name: String,
        members: Vec<Member>,
    },
    Other,
}

/// The parsed types of one BTF blob.
pub struct Btf {
    /// Index = type id - 1 (id 0 is void).
    types: Vec<Type>,
}

fn u16_at(d: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_le_bytes(d.get(off..off + 2)?.try_into().ok()?))
}

fn u32_at(d: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes(d.get(off..off + 4)?.try_into().ok()?))
}

/// The running kernel's BTF.
pub const VMLINUX: &str = "/sys/kernel/btf/vmlinux";

impl Btf {
    pub fn from_sys_fs() -> Result<Btf> {
        let data = Btf::read_blob(Path::new(VMLINUX))
            .map_err(|e| anyhow::anyhow!("reading {VMLINUX}: {e}"))?;
        Btf::parse(&data)
    }

    /// The bytes of a BTF file (`VMLINUX`, or a copy the tests name).
    pub fn read_blob(path: &Path) -> std::io::Result<Vec<u8>> {
        std::fs::read(path)
    }

    /// Parses a little-endian BTF blob.
    pub fn parse(d: &[u8]) -> Result<Btf> {
        let bad = || anyhow::anyhow!("BTF data is truncated or corrupt");
        if u16_at(d, 0) != Some(MAGIC) {
            bail!("not little-endian BTF (bad magic)");
        }
        let hdr_len = u32_at(d, 4).ok_or_else(bad)? as usize;
        let type_off = u32_at(d, 8).ok_or_else(bad)? as usize;
        let type_len = u32_at(d, 12).ok_or_else(bad)? as usize;
        let str_off = u32_at(d, 16).ok_or_else(bad)? as usize;
        let str_len = u32_at(d, 20).ok_or_else(bad)? as usize;
        let types_start = hdr_len + type_off;
        let types = d.get(types_start..types_start + type_len).ok_or_else(bad)?;
        let strings = d
            .get(hdr_len + str_off..hdr_len + str_off + str_len)
            .ok_or_else(bad)?;
        let name = |off: u32| -> String {
            strings
                .get(off as usize..)
                .map(|s| {
                    let end = s.iter().position(|&b| b == 0).unwrap_or(s.len());
                    String::from_utf8_lossy(&s[..end]).into_owned()
                })
                .unwrap_or_default()
        };
        let mut out = Vec::new();
        let mut pos = 0;
        while pos + 12 <= types.len() {
            let name_off = u32_at(types, pos).ok_or_else(bad)?;
            let info = u32_at(types, pos + 4).ok_or_else(bad)?;
            let vlen = (info & 0xffff) as usize;
            let kind = (info >> 24) & 0x1f;
            let kind_flag = info >> 31 == 1;
            pos += 12;
            // Bytes that follow the common header, per kind.
            let extra = match kind {
                1 => 4,                    // INT
                3 => 12,                   // ARRAY
                4 | 5 => 12 * vlen,        // STRUCT, UNION
                6 => 8 * vlen,             // ENUM
                13 => 8 * vlen,            // FUNC_PROTO
                14 => 4,                   // VAR
                15 => 12 * vlen,           // DATASEC
                17 => 4,                   // DECL_TAG
                19 => 12 * vlen,           // ENUM64
                2 | 7..=12 | 16 | 18 => 0, // PTR, FWD..FUNC, FLOAT, TYPE_TAG
                other => bail!("unknown BTF kind {other}"),
            };
            let body = types.get(pos..pos + extra).ok_or_else(bad)?;
            if kind == KIND_STRUCT || kind == KIND_UNION {
                let mut members = Vec::with_capacity(vlen);
                for m in body.chunks_exact(12) {
                    let offset = u32_at(m, 8).ok_or_else(bad)?;
                    members.push(Member {
                        name: name(u32_at(m, 0).ok_or_else(bad)?),
                        type_id: u32_at(m, 4).ok_or_else(bad)?,
                        // With kind_flag, the top 8 bits are a bitfield size.
                        bit_offset: if kind_flag {
                            offset & 0x00ff_ffff
                        } else {
                            offset
                        },
                    });
                }
                out.push(Type::Composite {
                    name: name(name_off),
                    members,
                });
            } else {
                out.push(Type::Other);
            }
            pos += extra;
        }
        Ok(Btf { types: out })
    }

    /// Byte offset of `member` in `struct name`, looking through
    /// anonymous struct/union members; None when either is missing.
    pub fn member_offset(&self, name: &str, member: &str) -> Option<u32> {
        self.member_bit_offset(name, member).map(|bits| bits / 8)
    }

    /// Bit offset of `member` in `struct name` (a bitfield's own bit).
    pub fn member_bit_offset(&self, name: &str, member: &str) -> Option<u32> {
        let members = self.types.iter().find_map(|t| match t {
            Type::Composite { name: n, members } if n == name && !members.is_empty() => {
                Some(members)
            }
            _ => None,
        })?;
        self.find_in(members, member, 0)
    }

    fn find_in(&self, members: &[Member], member: &str, base_bits: u32) -> Option<u32> {
        for m in members {
            if m.name == member {
                return Some(base_bits + m.bit_offset);
            }
        }
        // Then inside anonymous structs and unions.
        for m in members.iter().filter(|m| m.name.is_empty()) {
            if let Some(Type::Composite { members: inner, .. }) = m
                .type_id
                .checked_sub(1)
                .and_then(|i| self.types.get(i as usize))
                && let Some(off) = self.find_in(inner, member, base_bits + m.bit_offset)
            {
                return Some(off);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds a BTF blob: int (id 1), struct inner {long a; long b;} (id 2),
    /// struct outer { int x; <anon inner at 64 bits>; int y; } (id 3).
    fn blob() -> Vec<u8> {
        let strings = b"\0int\0inner\0a\0b\0outer\0x\0y\0".to_vec();
        let s = |name: &str| -> u32 {
            let needle = format!("\0{name}\0");
            strings
                .windows(needle.len())
                .position(|w| w == needle.as_bytes())
                .map(|p| p as u32 + 1)
                .unwrap_or(0)
        };
        let mut t = Vec::new();
        let mut push = |v: u32| t.extend_from_slice(&v.to_le_bytes());
        // int
        push(s("int"));
        push(1 << 24);
        push(4);
        push(32);
        // struct inner
        push(s("inner"));
        push(4 << 24 | 2);
        push(16);
        push(s("a"));
        push(1);
        push(0);
        push(s("b"));
        push(1);
        push(64);
        // struct outer
        push(s("outer"));
        push(4 << 24 | 3);
        push(32);
        push(s("x"));
        push(1);
        push(0);
        push(0); // anonymous member of type inner
        push(2);
        push(64);
        push(s("y"));
        push(1);
        push(192);
        let mut d = Vec::new();
        d.extend_from_slice(&MAGIC.to_le_bytes());
        d.push(1);
        d.push(0);
        for v in [
            24u32,
            0,
            t.len() as u32,
            t.len() as u32,
            strings.len() as u32,
        ] {
            d.extend_from_slice(&v.to_le_bytes());
        }
        d.extend_from_slice(&t);
        d.extend_from_slice(&strings);
        d
    }

    #[test]
    fn finds_members_including_anonymous_ones() {
        let btf = Btf::parse(&blob()).expect("parses");
        assert_eq!(btf.member_offset("outer", "x"), Some(0));
        assert_eq!(btf.member_offset("outer", "y"), Some(24));
        assert_eq!(btf.member_offset("outer", "a"), Some(8));
        assert_eq!(btf.member_offset("outer", "b"), Some(16));
        assert_eq!(btf.member_offset("inner", "b"), Some(8));
        assert_eq!(btf.member_offset("outer", "nope"), None);
        assert_eq!(btf.member_offset("nostruct", "x"), None);
    }

    #[test]
    fn rejects_garbage_without_panicking() {
        assert!(Btf::parse(b"").is_err());
        assert!(Btf::parse(&[0u8; 64]).is_err());
        let mut truncated = blob();
        truncated.truncate(40);
        assert!(Btf::parse(&truncated).is_err());
        let mut bad_kind = blob();
        bad_kind[24 + 7] = 0x1f; // kind 31 in the first type's info
        assert!(Btf::parse(&bad_kind).is_err());
    }
}
