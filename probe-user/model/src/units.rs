//! Byte sizes as users type them: `256M`, `1.5G`, `4096`, `2GiB`.

/// Parses a size with an optional binary suffix (K, M, G, T; `iB`/`B`
/// accepted). A bare number is in bytes. Errors say what was wrong.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    if t.is_empty() {
        return Err("empty size; use a number with a unit, like 256M or 2G".into());
    }
    if t.starts_with('-') {
        return Err(format!("`{text}` is negative; sizes are like 256M or 2G"));
    }
    let upper = t.to_ascii_uppercase();
    let digits_end = upper
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(upper.len());
    let (num, unit) = upper.split_at(digits_end);
    let value: f64 = num.parse().map_err(|_| {
        format!("`{text}` is not a size; use a number with a unit, like 256M or 2G")
    })?;
    let shift = match unit.trim() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        other => {
            return Err(format!(
                "unknown unit `{other}` in `{text}`; use K, M, G or T (powers of 1024)"
            ));
        }
    };
    let bytes = value * (1u64 << shift) as f64;
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(format!("`{text}` is too large"));
    }
    Ok(bytes as u64)
}

/// A disk's bandwidth in bytes a second: a size (`4M`), `/s` allowed
/// (`4M/s`), from 64 KiB (slower would stall a guest's swap-in for
/// seconds a page cluster) to 64 GiB.
pub fn parse_rate(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let bytes = parse_size(t.strip_suffix("/s").unwrap_or(t))?;
    if !(64 << 10..=64 << 30).contains(&bytes) {
        return Err(format!(
            "`{text}` is outside 64K..64G a second; a slow disk is 4M, a fast one 500M"
        ));
    }
    Ok(bytes)
}

/// `1.5 GiB`, `256 MiB`, `12 KiB`, `17 B`: for humans, one decimal.
pub fn human(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else if v >= 100.0 || v.fract() < 0.05 {
        format!("{v:.0} {}", UNITS[unit])
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_sizes_a_second_within_bounds() {
        assert_eq!(parse_rate("4M"), Ok(4 << 20));
        assert_eq!(parse_rate("4M/s"), Ok(4 << 20));
        assert_eq!(parse_rate("64K"), Ok(64 << 10));
        assert!(parse_rate("1K").unwrap_err().contains("64K..64G"));
        assert!(parse_rate("1T").is_err());
        assert!(parse_rate("fast").is_err());
    }

    #[test]
    fn parses_units() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("256M"), Ok(256 << 20));
        assert_eq!(parse_size("256m"), Ok(256 << 20));
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size("1.5G"), Ok(3 << 29));
        assert_eq!(parse_size("1T"), Ok(1 << 40));
        assert_eq!(parse_size("64K"), Ok(64 << 10));
    }

    #[test]
    fn rejects_bad_sizes_with_a_reason() {
        assert!(parse_size("-1G").unwrap_err().contains("negative"));
        assert!(parse_size("").unwrap_err().contains("empty"));
        assert!(parse_size("abc").unwrap_err().contains("not a size"));
        assert!(parse_size("3Q").unwrap_err().contains("unknown unit"));
        assert!(
            parse_size("99999999999999T")
                .unwrap_err()
                .contains("too large")
        );
    }

    #[test]
    fn human_sizes() {
        assert_eq!(human(17), "17 B");
        assert_eq!(human(256 << 20), "256 MiB");
        assert_eq!(human(3 << 29), "1.5 GiB");
    }
}
