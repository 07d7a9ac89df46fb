//! The saved model: what a run measured, as written to and read from a
//! recording. Depends on nothing above it; every view reads only this.

pub mod bounded;
pub mod counters;
pub mod entries;
pub mod format;
pub mod histogram;
pub mod kswapd;
pub mod membox;
pub mod probes;
pub mod profile;
pub mod recording;
pub mod report;
pub mod sample;
pub mod schema;
pub mod split;
pub mod swap_causes;
pub mod units;
pub mod vmstat;
pub mod zones;
