//! `vmtrace compare`: groups of recordings (repeated runs of one
//! configuration, one group per kernel or setting), side by side, with
//! significance, attribution of the elapsed-time difference, and hints at
//! the mechanism. Pure functions of recordings.

pub mod stats;
