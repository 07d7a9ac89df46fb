//! kswapd and the zones it balances, in the text report: kswapd per
//! node (wakes, time awake, CPU), its awake periods, what woke it and
//! for which zone and order (the zones have their own module, zones.rs).

use crate::model::format::write_wrapped;
use std::fmt::{Result, Write as _};

use super::{hist::write_hist, names::nonzero_pairs};
use crate::model::report::{KswapdReport, RunReport};

/// kswapd (system-wide): the per-node table, then its wakeups. The
/// count is of balancing rounds, not wakeups: kswapd() emits
/// mm_vmscan_kswapd_wake before every balance_pgdat() call, and loops
/// back to balance again without sleeping while a wakeup asked for more
/// (mm/vmscan.c kswapd, 6.1/6.12/6.18). The wakeups are the awake
/// periods, ended by mm_vmscan_kswapd_sleep.
pub(super) fn kswapd(o: &mut String, report: &RunReport) -> Result {
    let Some(k) = &report.kswapd else {
        return Ok(());
    };
    writeln!(o)?;
    writeln!(o, "kswapd (system-wide; rounds: balance_pgdat runs)")?;
    writeln!(
        o,
        "  {:>4} {:>8} {:>10} {:>10}",
        "node", "rounds", "awake", "cpu"
    )?;
    for n in &k.nodes {
        writeln!(
            o,
            "  {:>4} {:>8} {:>9.2}s {:>9.2}s",
            n.node, n.wakes, n.awake_s, n.cpu_s
        )?;
    }
    if let Some(p) = &k.awake_periods {
        writeln!(o, "kswapd awake periods: {} in all", p.count)?;
        write_hist(o, p)?;
    }
    wakeups(o, k)
}

/// Who woke kswapd, for which highest zone and which allocation order.
fn wakeups(o: &mut String, k: &KswapdReport) -> Result {
    if !k.wakeups.is_empty() {
        let z: Vec<String> = k
            .wakeups
            .iter()
            .map(|w| format!("node {} {} {}", w.node, w.zone, w.count))
            .collect();
        let text = format!(
            "  wakeups by highest zone of the allocation: {}",
            z.join(", ")
        );
        write_wrapped(o, &text)?;
    }
    if k.wakeup_orders.iter().any(|&n| n > 0) {
        let last = k.wakeup_orders.len().saturating_sub(1);
        let pairs = nonzero_pairs(&k.wakeup_orders, |i| {
            if i == last {
                format!("{i}+")
            } else {
                i.to_string()
            }
        });
        writeln!(o, "  wakeups by allocation order: {pairs}")?;
    }
    if !k.wakers.is_empty() {
        let w: Vec<String> = k
            .wakers
            .iter()
            .map(|w| format!("{} {}", w.name, w.count))
            .collect();
        write_wrapped(o, &format!("  woken by: {}", w.join(", ")))?;
    }
    Ok(())
}
