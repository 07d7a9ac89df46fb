//! Kernel addresses to function names, from /proc/kallsyms: the stacks
//! "where reclaim was entered" keeps are symbolized once, at the end of
//! the window, and the recording holds names, so that it reports the
//! same on another machine.
//!
//! Only text symbols (types t, T, w, W) name code; an address takes the
//! symbol at or below it. Module symbols carry their module
//! (`name [module]`). An address below the first symbol or above the
//! last one reads as its hex value. Root reads real addresses; with
//! kptr_restrict the file shows zeros, and then nothing resolves (the
//! caller says so).

use anyhow::{Context, Result, bail};

/// Text symbols sorted by address.
#[derive(Clone, Debug, Default)]
pub struct Kallsyms {
    symbols: Vec<(u64, String)>,
}

impl Kallsyms {
    /// The running kernel's symbols, from kallsyms opened as `file`
    /// (`host::proc::open_kallsyms`, while vmtrace had its privileges).
    pub fn read(file: &std::fs::File) -> Result<Kallsyms> {
        let text = crate::host::proc::read_kallsyms(file)
            .context("cannot read the kernel symbols (kallsyms)")?;
        let syms = Kallsyms::parse(&text);
        if syms.symbols.is_empty() {
            bail!(
                "the kernel symbols (kallsyms) show no addresses (kernel.kptr_restrict hides \
                 them from this process); run vmtrace as root"
            );
        }
        Ok(syms)
    }

    /// The symbols for `what` (a notice's subject) when there are
    /// stacks to name: unreadable ones leave the frames in hex, with a
    /// notice, never a lost window.
    pub fn for_stacks(file: Option<&std::fs::File>, any: bool, what: &str) -> Kallsyms {
        match file {
            Some(file) if any => Kallsyms::read(file).unwrap_or_else(|e| {
                eprintln!("vmtrace: notice: {what} left in hex: {e:#}");
                Kallsyms::default()
            }),
            _ => Kallsyms::default(),
        }
    }

    /// Parses kallsyms text: `ADDR TYPE NAME` or `ADDR TYPE NAME\t[MODULE]`.
    /// Zero addresses (hidden) and non-text symbols are left out.
    pub fn parse(text: &str) -> Kallsyms {
        let mut symbols: Vec<(u64, String)> = text
            .lines()
            .filter_map(|line| {
                let mut parts = line.split_whitespace();
                let addr = u64::from_str_radix(parts.next()?, 16).ok()?;
                let kind = parts.next()?;
                let name = parts.next()?;
                if addr == 0 || !matches!(kind, "t" | "T" | "w" | "W") {
                    return None;
                }
                let name = match parts.next() {
                    Some(module) => format!("{name} {module}"),
                    None => name.to_string(),
                };
                Some((addr, name))
            })
            .collect();
        symbols.sort_by_key(|(addr, _)| *addr);
        Kallsyms { symbols }
    }

    /// The function `ip` lies in; its hex value when none does.
    pub fn name(&self, ip: u64) -> String {
        let at = self.symbols.partition_point(|(addr, _)| *addr <= ip);
        match at.checked_sub(1).and_then(|i| self.symbols.get(i)) {
            // Past the last symbol is not inside it.
            Some((_, name)) if at < self.symbols.len() => name.clone(),
            _ => format!("0x{ip:x}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
ffffffff81000000 T _stext
ffffffff81200000 T handle_mm_fault
ffffffff81200400 t __handle_mm_fault
ffffffff81300000 D some_data
ffffffff81400000 W weak_fn
0000000000000000 T hidden
ffffffffc0201000 t xfs_read\t[xfs]
ffffffffc0202000 T xfs_end\t[xfs]
";

    #[test]
    fn an_address_takes_the_text_symbol_at_or_below_it() {
        let k = Kallsyms::parse(TEXT);
        assert_eq!(k.name(0xffffffff81200000), "handle_mm_fault");
        assert_eq!(k.name(0xffffffff812003ff), "handle_mm_fault");
        assert_eq!(k.name(0xffffffff81200400), "__handle_mm_fault");
        // Data symbols name nothing: the text before them does.
        assert_eq!(k.name(0xffffffff81300010), "__handle_mm_fault");
        assert_eq!(k.name(0xffffffff81400001), "weak_fn");
    }

    #[test]
    fn module_symbols_carry_their_module() {
        let k = Kallsyms::parse(TEXT);
        assert_eq!(k.name(0xffffffffc0201010), "xfs_read [xfs]");
        assert!(k.symbols.iter().any(|(_, n)| n == "xfs_read [xfs]"));
        assert!(!k.symbols.iter().any(|(_, n)| n == "xfs_read"));
    }

    #[test]
    fn outside_every_symbol_reads_as_hex_and_zeros_are_hidden() {
        let k = Kallsyms::parse(TEXT);
        assert_eq!(k.name(0x1000), "0x1000");
        // Past the last symbol: not inside it.
        assert_eq!(k.name(0xffffffffc0302000), "0xffffffffc0302000");
        assert!(!k.symbols.iter().any(|(_, n)| n == "hidden"));
        assert!(Kallsyms::parse("0000000000000000 T a\n").symbols.is_empty());
    }
}
