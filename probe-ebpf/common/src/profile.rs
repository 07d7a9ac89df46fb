//! The CPU profile: the size of its stack tables.

/// Distinct kernel stacks the CPU profile keeps (`PROFILE_STACKS`) and
/// its (stack -> samples) cells (`PROFILE`): a job's kernel time runs
/// through a few hundred to a few thousand distinct stacks.
pub const MAX_PROFILE_STACKS: u32 = 16384;

/// Outside the stall spans the sampler walks the stack of one kernel
/// sample of a target task in this many, chosen at random, and counts
/// that stack this many times: an unbiased count of the job's kernel
/// samples per stack, at a quarter of the walks. Inside a reclaim or
/// compaction span every sample is walked and counts once.
pub const PROFILE_OUTSIDE_ONE_IN: u64 = 4;
