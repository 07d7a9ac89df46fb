//! Swap: the swap areas' disk ranges and the in-flight swap I/O slots.

/// Most disk ranges that make up the swap areas (a swapfile's extents,
/// merged; a swap partition is one).
pub const MAX_SWAP_EXTENTS: usize = 64;

/// One disk range of a swap area, in 512-byte sectors of the whole disk,
/// as the block tracepoints report them. `dev` uses the kernel's dev_t
/// encoding (major << 20 | minor).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SwapExtent {
    pub dev: u32,
    pub _pad: u32,
    pub start: u64,
    /// Exclusive.
    pub end: u64,
}

/// The swap areas' disk ranges (global `SWAP_EXTENTS`, set at load time).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SwapExtents {
    pub count: u32,
    pub _pad: u32,
    pub extents: [SwapExtent; MAX_SWAP_EXTENTS],
}

impl SwapExtents {
    pub const EMPTY: SwapExtents = SwapExtents {
        count: 0,
        _pad: 0,
        extents: [SwapExtent {
            dev: 0,
            _pad: 0,
            start: 0,
            end: 0,
        }; MAX_SWAP_EXTENTS],
    };
}

/// An in-flight swap request (a slot of `SWAP_IO`; `start_ns` 0 = free).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoStart {
    pub start_ns: u64,
    /// The request (`struct request` address): unique among requests in
    /// flight on the machine, so a completion recognises its own slot.
    pub rq: u64,
    /// The request's first sector at issue, checked at completion.
    pub sector: u64,
    /// 1 for a write, 0 for a read.
    pub write: u32,
    pub nr_sector: u32,
}

/// `SWAP_IO` has a slot per (hardware queue, driver tag) for queues
/// numbered below `IO_QUEUES` and tags below `IO_TAGS` (blk-mq queue
/// depths are at most 1024 on common drivers: virtio-blk 256, NVMe 1023).
pub const IO_QUEUES: u32 = 64;
pub const IO_TAGS: u32 = 1024;
pub const IO_SLOTS: u32 = IO_QUEUES * IO_TAGS;
