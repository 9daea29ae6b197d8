//! Cross-crate tests: the conformance corpora in `../shared/corpora/` and end-to-end checks.
//!
//! Nothing here ships. Tests that need a corpus which is absent say so and skip that corpus.
