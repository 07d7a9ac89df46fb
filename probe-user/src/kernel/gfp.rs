//! GFP flags as the running kernel names them.
//!
//! The bit values of `__GFP_*` change between kernels (6.1 has
//! `__GFP_ATOMIC` at 0x200; 6.3 removed it and renumbered the bits after
//! it; 6.18 writes them as `1UL << n` from an enum; `GFP_NOWAIT` gained
//! `__GFP_NOWARN` in 6.7), so vmtrace compiles none in. Every tracepoint
//! with a `gfp_flags` field prints it with `show_gfp_flags()`
//! (include/trace/events/mmflags.h), and the kernel puts that table,
//! composite names first (`GFP_TRANSHUGE`, `GFP_HIGHUSER_MOVABLE`, ...,
//! `GFP_KERNEL`), then single bits, into the event's `print fmt:` line
//! as constant C expressions. [`GfpNames::from_format`] evaluates them;
//! [`GfpNames::decode`] names a value the way the kernel's
//! `trace_print_flags_seq()` (kernel/trace/trace_output.c) does: each
//! entry whose bits are all set is printed and its bits cleared, in the
//! table's order, joined by `|`, and what is left over printed in hex;
//! no flags at all is "none" (the format's own `? ... : "none"`).

use anyhow::{Context, Result, bail};

/// The kernel's GFP name table, in its order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GfpNames {
    entries: Vec<(u64, String)>,
}

impl GfpNames {
    /// The table the format file's `print fmt:` line gives for `field`
    /// (`__print_flags(REC->field, "|", {mask, "NAME"}, ...)`).
    pub fn from_format(text: &str, field: &str) -> Result<GfpNames> {
        let fmt = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("print fmt:"))
            .context("no `print fmt:` line")?;
        GfpNames::from_print_fmt(fmt, field)
    }

    /// The same from the `print fmt:` line's text alone
    /// (`tracefs::Format::print_fmt`).
    pub fn from_print_fmt(fmt: &str, field: &str) -> Result<GfpNames> {
        let head = format!("__print_flags(REC->{field},");
        let at = fmt
            .find(&head)
            .with_context(|| format!("`{field}` is not printed with __print_flags"))?;
        let rest = &fmt[at + head.len()..];
        // The delimiter string, then the table.
        let rest = rest
            .trim_start()
            .strip_prefix("\"|\",")
            .context("__print_flags without the \"|\" delimiter")?;
        let mut entries = Vec::new();
        let mut p = Parser::new(rest);
        loop {
            p.skip_ws();
            match p.peek() {
                Some(b'{') => p.bump(),
                Some(b')') => break,
                Some(b',') => {
                    p.bump();
                    continue;
                }
                _ => bail!("unexpected text in the flag table at {:?}", p.context()),
            }
            let mask = p.expr()?;
            p.expect(b',')?;
            p.skip_ws();
            if p.peek() != Some(b'"') {
                // `{ 0, ((void *)0) }` (6.18): the NULL name that ends
                // the kernel's walk of the table.
                break;
            }
            let name = p.string()?;
            p.expect(b'}')?;
            entries.push((mask, name));
        }
        if entries.is_empty() {
            bail!("an empty flag table");
        }
        Ok(GfpNames { entries })
    }

    /// The value of a name in the table (`GFP_KERNEL`, `__GFP_IO`).
    pub fn value(&self, name: &str) -> Option<u64> {
        self.entries
            .iter()
            .find(|(_, n)| n == name)
            .map(|(v, _)| *v)
    }

    /// `flags` as the kernel prints it.
    pub fn decode(&self, flags: u64) -> String {
        if flags == 0 {
            return "none".into();
        }
        let mut left = flags;
        let mut parts: Vec<String> = Vec::new();
        for (mask, name) in &self.entries {
            if left == 0 {
                break;
            }
            if left & mask != *mask {
                continue;
            }
            left &= !mask;
            parts.push(name.clone());
        }
        if left != 0 {
            parts.push(format!("{left:#x}"));
        }
        parts.join("|")
    }
}

/// A recursive-descent reader of the C constant expressions in a flag
/// table: numbers (hex or decimal, with u/l suffixes), parentheses,
/// casts (`( gfp_t)`, `( unsigned long)`, `(__force gfp_t)`), `~`, `<<`,
/// `>>`, `&` and `|`, with C's precedence.
struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Parser<'a> {
    fn new(s: &'a str) -> Self {
        Parser {
            s: s.as_bytes(),
            i: 0,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn bump(&mut self) {
        self.i += 1;
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_whitespace()) {
            self.i += 1;
        }
    }

    fn context(&self) -> String {
        let end = (self.i + 40).min(self.s.len());
        String::from_utf8_lossy(&self.s[self.i..end]).into_owned()
    }

    fn expect(&mut self, c: u8) -> Result<()> {
        self.skip_ws();
        if self.peek() != Some(c) {
            bail!("expected `{}` at {:?}", c as char, self.context());
        }
        self.bump();
        Ok(())
    }

    fn string(&mut self) -> Result<String> {
        self.expect(b'"')?;
        let start = self.i;
        while self.peek().is_some_and(|c| c != b'"') {
            self.bump();
        }
        let name = String::from_utf8_lossy(&self.s[start..self.i]).into_owned();
        self.expect(b'"')?;
        Ok(name)
    }

    fn expr(&mut self) -> Result<u64> {
        self.left_assoc(b'|', Self::and, |a, b| a | b)
    }

    fn and(&mut self) -> Result<u64> {
        self.left_assoc(b'&', Self::shift, |a, b| a & b)
    }

    /// `next (op next)*`, folded left with `f`.
    fn left_assoc(
        &mut self,
        op: u8,
        next: fn(&mut Self) -> Result<u64>,
        f: fn(u64, u64) -> u64,
    ) -> Result<u64> {
        let mut v = next(self)?;
        loop {
            self.skip_ws();
            if self.peek() != Some(op) {
                return Ok(v);
            }
            self.bump();
            v = f(v, next(self)?);
        }
    }

    fn shift(&mut self) -> Result<u64> {
        let mut v = self.unary()?;
        loop {
            self.skip_ws();
            let op = (self.peek(), self.s.get(self.i + 1).copied());
            let left = match op {
                (Some(b'<'), Some(b'<')) => true,
                (Some(b'>'), Some(b'>')) => false,
                _ => return Ok(v),
            };
            self.i += 2;
            let by = self.unary()?;
            if by >= 64 {
                bail!("a shift by {by} in the flag table");
            }
            v = if left { v << by } else { v >> by };
        }
    }

    fn unary(&mut self) -> Result<u64> {
        self.skip_ws();
        match self.peek() {
            Some(b'~') => {
                self.bump();
                Ok(!self.unary()?)
            }
            Some(b'(') if self.is_cast() => {
                while self.peek() != Some(b')') {
                    self.bump();
                }
                self.bump();
                self.unary()
            }
            Some(b'(') => {
                self.bump();
                let v = self.expr()?;
                self.expect(b')')?;
                Ok(v)
            }
            Some(c) if c.is_ascii_digit() => self.number(),
            _ => bail!("expected a number at {:?}", self.context()),
        }
    }

    /// Whether the `(` here opens a cast: only type words up to `)`.
    fn is_cast(&self) -> bool {
        let mut j = self.i + 1;
        let mut words = 0;
        while let Some(&c) = self.s.get(j) {
            match c {
                b')' => return words > 0,
                b'_' | b'a'..=b'z' | b'A'..=b'Z' => {
                    words += 1;
                    while self
                        .s
                        .get(j)
                        .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
                    {
                        j += 1;
                    }
                    continue;
                }
                c if c.is_ascii_whitespace() => {}
                _ => return false,
            }
            j += 1;
        }
        false
    }

    fn number(&mut self) -> Result<u64> {
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_alphanumeric()) {
            self.bump();
        }
        let text = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("");
        let digits = text.trim_end_matches(['u', 'U', 'l', 'L']);
        let v = match digits
            .strip_prefix("0x")
            .or_else(|| digits.strip_prefix("0X"))
        {
            Some(hex) => u64::from_str_radix(hex, 16),
            None => digits.parse(),
        };
        v.with_context(|| format!("not a number: {text:?}"))
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::GfpNames;

    fn table(kernel: &str, event: &str) -> GfpNames {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/kernel-formats")
            .join(kernel)
            .join("vmscan")
            .join(event)
            .join("format");
        let text = std::fs::read_to_string(&path).expect("format file");
        GfpNames::from_format(&text, "gfp_flags").expect("gfp table")
    }

    const KERNELS: [&str; 3] = ["6.1.0-57-amd64", "6.12.117+deb12-amd64", "6.18.44-fc-v669"];

    #[test]
    fn every_kernel_names_its_composites_from_its_own_bits() {
        for k in KERNELS {
            for event in [
                "mm_vmscan_direct_reclaim_begin",
                "mm_vmscan_memcg_reclaim_begin",
                "mm_vmscan_wakeup_kswapd",
            ] {
                let t = table(k, event);
                let bit = |n: &str| t.value(n).unwrap_or_else(|| panic!("{k}: no {n}"));
                // include/linux/gfp_types.h: GFP_KERNEL is __GFP_RECLAIM
                // | __GFP_IO | __GFP_FS; GFP_HIGHUSER_MOVABLE adds
                // __GFP_HARDWALL, __GFP_HIGHMEM and __GFP_MOVABLE.
                let kernel = bit("__GFP_RECLAIM") | bit("__GFP_IO") | bit("__GFP_FS");
                assert_eq!(bit("GFP_KERNEL"), kernel, "{k}");
                assert_eq!(t.decode(kernel), "GFP_KERNEL", "{k}");
                let movable =
                    kernel | bit("__GFP_HARDWALL") | bit("__GFP_HIGHMEM") | bit("__GFP_MOVABLE");
                assert_eq!(t.decode(movable), "GFP_HIGHUSER_MOVABLE", "{k}");
                // A composite, then the bits it leaves, in table order.
                assert_eq!(
                    t.decode(kernel | bit("__GFP_NORETRY") | bit("__GFP_NOWARN")),
                    "GFP_KERNEL|__GFP_NOWARN|__GFP_NORETRY",
                    "{k}"
                );
                assert_eq!(t.decode(0), "none");
            }
        }
    }

    #[test]
    fn bit_values_differ_between_kernels_and_leftovers_print_in_hex() {
        let (old, new) = (
            table("6.1.0-57-amd64", "mm_vmscan_direct_reclaim_begin"),
            table("6.18.44-fc-v669", "mm_vmscan_direct_reclaim_begin"),
        );
        // 6.1 (hex literals): __GFP_ATOMIC 0x200, __GFP_ACCOUNT 0x400000;
        // 6.3 dropped __GFP_ATOMIC, and the enum moved __GFP_ACCOUNT.
        assert_eq!(old.value("__GFP_ATOMIC"), Some(0x200));
        assert_eq!(new.value("__GFP_ATOMIC"), None);
        assert_eq!(old.value("__GFP_ACCOUNT"), Some(0x400000));
        assert_ne!(old.value("GFP_NOWAIT"), new.value("GFP_NOWAIT"));
        // A bit no entry names.
        let unknown = 1u64 << 40;
        let kernel = new.value("GFP_KERNEL").expect("GFP_KERNEL");
        assert_eq!(new.decode(kernel | unknown), "GFP_KERNEL|0x10000000000");
    }

    #[test]
    fn refuses_a_field_not_printed_as_flags_and_broken_tables() {
        let t = "print fmt: \"order=%d\", REC->order";
        assert!(GfpNames::from_format(t, "gfp_flags").is_err());
        let t = "print fmt: \"%s\", __print_flags(REC->gfp_flags, \"|\", {(( gfp_t)0x40u, \"X\"} )";
        assert!(GfpNames::from_format(t, "gfp_flags").is_err());
        let t = "print fmt: \"%s\", __print_flags(REC->gfp_flags, \"|\", {(( gfp_t)1UL << 70), \"X\"} )";
        assert!(GfpNames::from_format(t, "gfp_flags").is_err());
        let t = "print fmt: \"%s\", __print_flags(REC->gfp_flags, \"|\", {( unsigned long)(( gfp_t)((((1UL))) << (3))), \"__GFP_MOVABLE\"}, { 0, ((void *)0) } ) : \"none\"";
        let g = GfpNames::from_format(t, "gfp_flags").expect("one entry");
        assert_eq!(g.value("__GFP_MOVABLE"), Some(8));
        assert_eq!(g.decode(8 | 1), "__GFP_MOVABLE|0x1");
    }
}
