//! Cross-crate tests: end-to-end checks across the libraries.
//!
//! Nothing here ships. (The conformance corpora are the translators' tests: `translators/tests/corpora/`.)
