//! Which tasks are the target: the `TARGET` global and `TARGET_PIDS`' size.

/// Which tasks are the target. Global `TARGET`, set at load time.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Target {
    /// cgroup v2 id whose tasks, and its descendants' tasks, are the
    /// target (0: none by cgroup).
    pub cgroup_id: u64,
    /// Non-zero: the processes in `TARGET_PIDS` are targets too, and the
    /// processes they fork are added to it. With neither, every task is.
    pub by_pid: u32,
    /// The level of `cgroup_id` in the cgroup2 hierarchy (the root 0):
    /// a task is in its subtree when its cgroup's ancestor at this level
    /// is that cgroup (a slice holds no tasks itself, its children do).
    pub cgroup_level: u32,
}

impl Target {
    pub const EVERY_TASK: Target = Target {
        cgroup_id: 0,
        by_pid: 0,
        cgroup_level: 0,
    };
}

/// Most processes (and threads, until they exit) `TARGET_PIDS` follows.
pub const MAX_TARGET_PIDS: u32 = 65536;
