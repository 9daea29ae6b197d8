//! Profiles: whose rules a game's replies follow (docs/mvu.md, "Profiles").
//!
//! `strict` is the engine's own contract (docs/instructions.md), unchanged. `mvu` is MagVarUpdate as
//! released, so that an MVU card runs unchanged: commands apply one by one and a refused one is
//! skipped with a warning while the rest stand (still one step), old-value mismatches only warn, and
//! the card's automatic schema ([`crate::StructureSchema`]) locks containers, keeps required keys and
//! merges templates into added values. `mvu-zod` is the zod variant: as `mvu`, except that the card's
//! JSON Schema, applied under `schema_violation = repair`, decides what may be added or removed in
//! place of the automatic schema. This module owns the list of profiles and what
//! each turns on; the store, the translators and every host ask it rather than matching names.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::limits::{OldMismatch, Policies, SchemaViolation};

/// Whose rules a game's replies follow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Profile {
    /// The engine's own contract: a batch is atomic, nothing is guessed from MVU's habits.
    #[default]
    Strict,
    /// MagVarUpdate's rules.
    Mvu,
    /// MagVarUpdate's rules for zod cards: the card's JSON Schema repairs what it can.
    MvuZod,
}

impl Profile {
    /// Every profile, in the order documented.
    pub const ALL: [Profile; 3] = [Profile::Strict, Profile::Mvu, Profile::MvuZod];

    /// The name used on the command line, over HTTP and in saves: `strict`, `mvu`, `mvu-zod`.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Strict => "strict",
            Profile::Mvu => "mvu",
            Profile::MvuZod => "mvu-zod",
        }
    }

    /// Whether MVU's rules apply: `[value, "description"]` pairs, `_.set`/`_.add` on a missing path
    /// skipped (unless [`Profile::set_creates`]), commands applied one by one.
    pub fn is_mvu(self) -> bool {
        matches!(self, Profile::Mvu | Profile::MvuZod)
    }

    /// Whether the card's automatic schema (MVU's `$meta` markers: locked containers, required keys,
    /// templates) is enforced: under `mvu` only. Under `mvu-zod` the card's JSON Schema decides what
    /// may be added or removed instead, as a zod schema does in MVU.
    pub fn uses_automatic_schema(self) -> bool {
        matches!(self, Profile::Mvu)
    }

    /// Whether a batch's commands apply one by one, a refused one skipped with a warning, instead of
    /// all or nothing.
    pub fn one_by_one(self) -> bool {
        self.is_mvu()
    }

    /// Whether `_.set` may create a path that does not exist (the card's JSON Schema then decides).
    pub fn set_creates(self) -> bool {
        !matches!(self, Profile::Mvu)
    }

    /// The policies batches run under by default: the engine's defaults for `strict`;
    /// `old_mismatch = warn` for `mvu`; and also `schema_violation = repair` for `mvu-zod`.
    pub fn policies(self) -> Policies {
        match self {
            Profile::Strict => Policies::default(),
            Profile::Mvu => Policies {
                old_mismatch: OldMismatch::Warn,
                ..Policies::default()
            },
            Profile::MvuZod => Policies {
                old_mismatch: OldMismatch::Warn,
                schema_violation: SchemaViolation::Repair,
                ..Policies::default()
            },
        }
    }

    /// The names, for messages: `strict, mvu or mvu-zod`.
    pub fn names() -> &'static str {
        "strict, mvu or mvu-zod"
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not a profile.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown profile \"{0}\": expected strict, mvu or mvu-zod")]
pub struct UnknownProfile(pub String);

impl FromStr for Profile {
    type Err = UnknownProfile;

    fn from_str(name: &str) -> Result<Profile, UnknownProfile> {
        Profile::ALL
            .into_iter()
            .find(|profile| profile.name() == name)
            .ok_or_else(|| UnknownProfile(name.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_text_and_serde() {
        for profile in Profile::ALL {
            assert_eq!(profile.name().parse::<Profile>(), Ok(profile));
            let json = serde_json::to_string(&profile).unwrap();
            assert_eq!(json, format!("\"{}\"", profile.name()));
            assert_eq!(serde_json::from_str::<Profile>(&json).unwrap(), profile);
        }
        assert!("MVU".parse::<Profile>().is_err());
        assert_eq!(Profile::default(), Profile::Strict);
    }

    #[test]
    fn strict_keeps_the_engine_defaults() {
        assert_eq!(Profile::Strict.policies(), Policies::default());
        assert!(!Profile::Strict.one_by_one());
        assert!(Profile::Mvu.uses_automatic_schema());
        assert!(!Profile::MvuZod.uses_automatic_schema());
        assert!(!Profile::Strict.uses_automatic_schema());
        assert_eq!(Profile::Mvu.policies().old_mismatch, OldMismatch::Warn);
        assert_eq!(
            Profile::MvuZod.policies().schema_violation,
            SchemaViolation::Repair
        );
    }
}
