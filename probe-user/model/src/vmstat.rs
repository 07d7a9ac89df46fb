//! A snapshot of /proc/vmstat as data: parsed, differenced, summed.
//! Reading it from the machine is `host::proc`.

use std::collections::BTreeMap;

/// A snapshot of /proc/vmstat.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VmStat(pub BTreeMap<String, u64>);

impl VmStat {
    pub fn parse(text: &str) -> VmStat {
        VmStat(
            text.lines()
                .filter_map(|l| {
                    let (k, v) = l.split_once(' ')?;
                    Some((k.to_string(), v.trim().parse().ok()?))
                })
                .collect(),
        )
    }

    pub fn get(&self, key: &str) -> u64 {
        self.0.get(key).copied().unwrap_or(0)
    }

    /// Sum of every counter whose name starts with `prefix` (allocstall_*,
    /// pgalloc_*: one per zone, and the zones differ between kernels).
    pub fn sum_prefixed(&self, prefix: &str) -> u64 {
        self.0
            .iter()
            .filter(|(k, _)| k.starts_with(prefix))
            .map(|(_, v)| v)
            .sum()
    }

    /// Sum of several keys (e.g. pgscan_anon + pgscan_file).
    pub fn sum(&self, keys: &[&str]) -> u64 {
        keys.iter().map(|k| self.get(k)).sum()
    }

    /// `after - before` for every key of `after` (counters only grow;
    /// gauges that shrank give 0).
    pub fn delta(before: &VmStat, after: &VmStat) -> VmStat {
        VmStat(
            after
                .0
                .iter()
                .map(|(k, &v)| (k.clone(), v.saturating_sub(before.get(k))))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vmstat_parses_real_snapshots_and_deltas() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/kernel-formats");
        for release in ["6.1.0-57-amd64", "6.12.117+deb12-amd64", "6.18.44-fc-v669"] {
            let text = std::fs::read_to_string(dir.join(release).join("vmstat.txt")).expect("read");
            let v = VmStat::parse(&text);
            assert!(v.0.contains_key("pgmajfault"), "{release}");
            assert!(v.0.contains_key("pswpout"), "{release}");
            assert!(v.0.len() > 100, "{release}: {}", v.0.len());
        }
        let a = VmStat::parse("pgscan_anon 10\npgscan_file 5\nnr_free_pages 100\n");
        let b = VmStat::parse("pgscan_anon 25\npgscan_file 5\nnr_free_pages 90\n");
        let d = VmStat::delta(&a, &b);
        assert_eq!(d.sum(&["pgscan_anon", "pgscan_file"]), 15);
        assert_eq!(d.get("nr_free_pages"), 0);
        assert_eq!(d.get("absent"), 0);
    }
}
