//! The value parsers of clap arguments that are more than a number:
//! each error is the one line clap prints, saying what to give.

/// `on` or `off` (also yes/no, y/n, 1/0).
pub(super) fn parse_on_off(text: &str) -> Result<bool, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "on" | "yes" | "y" | "1" => Ok(true),
        "off" | "no" | "n" | "0" => Ok(false),
        _ => Err(format!("`{text}`: give on or off")),
    }
}

/// `NAME=VALUE` of --sysctl; the name must be a memory-management
/// sysctl (host::sysctl::settable) this kernel has under /proc/sys.
pub(super) fn parse_sysctl(text: &str) -> Result<(String, String), String> {
    let Some((name, value)) = text.split_once('=') else {
        return Err(format!("`{text}`: give NAME=VALUE, like vm.page-cluster=0"));
    };
    let name = crate::host::sysctl::settable(name)?;
    let name = name.as_str();
    if !crate::host::sysctl::exists(name) {
        return Err(format!(
            "this kernel has no sysctl {name} ({} does not exist)",
            crate::host::sysctl::path_of(name).display()
        ));
    }
    Ok((name.to_string(), value.trim().to_string()))
}

/// `compare --fail-if slower[:PCT]`: the least slowdown that fails, in
/// percent of the baseline's elapsed time (0 without PCT).
pub(super) fn parse_fail_if(text: &str) -> Result<f64, String> {
    let usage =
        || format!("--fail-if {text}: use slower, or slower:PCT with PCT a percentage like 5");
    let pct = match text.trim().split_once(':') {
        None if text.trim() == "slower" => return Ok(0.0),
        Some(("slower", pct)) => pct.trim().trim_end_matches('%'),
        _ => return Err(usage()),
    };
    match pct.parse::<f64>() {
        Ok(v) if (0.0..=1000.0).contains(&v) => Ok(v),
        _ => Err(usage()),
    }
}

/// A sampling interval: at least 10 ms, at most an hour.
pub(super) fn parse_interval(text: &str) -> Result<f64, String> {
    let v: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds, like 1 or 0.5"))?;
    if !(0.01..=3600.0).contains(&v) {
        return Err(format!(
            "--interval {text} is out of range; use 0.01 to 3600 seconds"
        ));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::parse_fail_if;

    #[test]
    fn fail_if_takes_slower_and_a_percentage() {
        assert_eq!(parse_fail_if("slower"), Ok(0.0));
        assert_eq!(parse_fail_if("slower:5"), Ok(5.0));
        assert_eq!(parse_fail_if("slower:2.5%"), Ok(2.5));
        for bad in ["faster", "slower:", "slower:x", "slower:-1", "slow:5"] {
            let e = parse_fail_if(bad).expect_err(bad);
            assert!(e.contains("slower:PCT"), "{e}");
        }
    }
}
