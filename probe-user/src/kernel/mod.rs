//! vmtrace's eBPF side seen from userspace: the signal catalogue and the
//! plan of what loads on this kernel, loading and attaching, reading the
//! maps, and turning their totals into the model's report.

pub mod btf;
pub mod collect;
pub mod entries;
pub mod fill;
pub mod gfp;
pub mod kallsyms;
pub mod probes;
pub mod profile;
pub mod totals;
pub mod tracefs;
