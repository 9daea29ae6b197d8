//! Durable games on disk (owned by the saves issue).
//!
//! This crate owns the on-disk save format, the journal of committed steps and compaction. It is the only
//! crate with file IO and on-disk types. It must not interpret instructions itself: it records what the
//! engine committed and rebuilds a store from it.
