//! The prompt kit: teach the model the instruction format, constrain its decoding, and close the
//! self-correction loop.
//!
//! This crate owns everything a front end needs around a model call: the rules text and state payload
//! for the system prompt ([`prompt`]), the tailored JSON Schema ([`batch_schema`]) and GBNF grammar
//! ([`batch_gbnf`]) for one batch, both written from one [`InstructionSpec`] so they cannot drift, the
//! feedback for a reply ([`review`]) and a benchmark-style [`grade`]. It sits on top of both the engine
//! and the translators because reviewing a reply means extracting it and trying it on a store; it is
//! the only library crate that depends on both. It must not change a caller's state: replies are tried
//! on throwaway copies, and nothing here does IO.

mod batch_schema;
mod gbnf;
mod grade;
mod review;
mod rules;
mod spec;
mod tokens;
mod view;

pub use batch_schema::{BatchSchema, STRICT_KEYWORDS, batch_schema, pass_schema};
pub use gbnf::batch_gbnf;
pub use grade::{CheckOutcome, Expectation, ExpectationError, Grade, grade};
pub use review::{Problem, ProblemKind, Review, review};
pub use rules::{
    Lang, Mode, Prompt, PromptOptions, VISIBLE_KEYWORD, prompt, prompt_with, visible_state,
};
pub use spec::{
    InstructionSpec, MAX_DESCRIBED_SEGMENTS, MAX_TARGETS, Mismatch, OpGroup, Property,
    SegmentPattern, Shape, ShapeId, Target,
};
pub use tokens::estimate_tokens;
pub use view::{
    ALWAYS_KEYWORD, ELIDE_EACH, Elided, RECENT_STEPS, View, ViewFormat, ViewOptions,
    recent_changes, view,
};
