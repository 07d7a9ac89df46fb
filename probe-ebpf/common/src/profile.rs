//! The CPU profile: the size of its stack tables.

/// Distinct kernel stacks the CPU profile keeps (`PROFILE_STACKS`) and
/// its (stack -> samples) cells (`PROFILE`): a job's kernel time runs
/// through a few hundred to a few thousand distinct stacks.
pub const MAX_PROFILE_STACKS: u32 = 16384;
