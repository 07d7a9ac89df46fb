//! Zones: the pfn spans of the page-allocation probe and the (node, zone) cells.

/// Most (node, zone) pfn spans passed to the page-allocation probe.
pub const MAX_ZONE_SPANS: usize = 32;

/// The pfn range of one zone, from /proc/zoneinfo (start_pfn, spanned).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZoneSpan {
    pub node: u32,
    pub zone: u32,
    pub start: u64,
    /// Exclusive.
    pub end: u64,
}

/// Every populated zone's span (global `ZONE_SPANS`, set at load time).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZoneSpans {
    pub count: u32,
    pub _pad: u32,
    pub spans: [ZoneSpan; MAX_ZONE_SPANS],
}

impl ZoneSpans {
    pub const EMPTY: ZoneSpans = ZoneSpans {
        count: 0,
        _pad: 0,
        spans: [ZoneSpan {
            node: 0,
            zone: 0,
            start: 0,
            end: 0,
        }; MAX_ZONE_SPANS],
    };
}

/// Zones per node a table has room for (DMA, DMA32, Normal, Movable,
/// Device, and spare).
pub const MAX_ZONES: u32 = 8;

/// Index of a (node, zone) cell in `KSWAPD_WAKEUPS`.
pub const fn zone_cell(node: u32, zone: u32) -> u32 {
    node * MAX_ZONES + zone
}
