//! Reclaim stalls per cgroup: the bucket scheme and the table's rows.

use crate::hist;

/// Buckets of the per-cgroup stall histograms (`CGROUP_STALLS`): bucket
/// 0 holds 0 ns, bucket k (1..=64) the values 2^(k-1) ..= 2^k - 1 ns, so
/// its upper edge 2^k - 1 ns is also an edge of the fine histograms'
/// buckets ([`hist`]): both fold exactly into the same power-of-two
/// bounds (`/metrics` `le`).
pub const CGROUP_BUCKETS: usize = 65;

/// The per-cgroup bucket of a value.
#[inline(always)]
pub fn cgroup_bucket(v: u64) -> usize {
    if v == 0 {
        0
    } else {
        hist::log2_floor(v) as usize + 1
    }
}

/// Most cgroups the per-cgroup table has room for (`attach --serve
/// --max-cgroups`, which sets the map's size at load time, is at most
/// this), besides the overflow row (cgroup id 0).
pub const MAX_CGROUPS: u32 = 4096;

/// Reclaim stalls of the tasks of one cgroup (v2 id), `CGROUP_STALLS`:
/// histograms (see [`CGROUP_BUCKETS`]) and exact sums, per context.
/// Added to atomically (a shared hash entry).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CgroupStalls {
    pub direct: [u64; CGROUP_BUCKETS],
    pub memcg: [u64; CGROUP_BUCKETS],
    pub direct_ns: u64,
    pub memcg_ns: u64,
}

impl Default for CgroupStalls {
    fn default() -> Self {
        CgroupStalls {
            direct: [0; CGROUP_BUCKETS],
            memcg: [0; CGROUP_BUCKETS],
            direct_ns: 0,
            memcg_ns: 0,
        }
    }
}
