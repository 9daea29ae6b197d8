//! The profiles' contract as properties, through the translators and the engine together
//! (docs/mvu.md, "Profiles"):
//!
//! - under `mvu` and `mvu-zod`, applying a reply is applying its commands one by one, each as a reply
//!   of its own on the state the ones before it left, a refused one skipped: the same state, the
//!   same change log (one step), the same warnings and the same diagnostics;
//! - under `strict`, nothing changed: the reply is read as it was before profiles existed, and the
//!   store applies it as it always did (the resolver is not used).
//!
//! The states come from InitVar text with MVU's markers, read by the card reader, so the automatic
//! schema (locks, required keys, templates) takes part; replies mix `_.set`, `_.add`, `_.insert` and
//! `_.remove` on paths that exist and paths that do not, with values of every type.

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use serde_json::{Value as Json, json};
use statecraft_engine::{
    Change, Outcome, Profile, Resolve, StateSchema, Store, StructureSchema, Value,
};
use statecraft_translators::mvu::MvuOptions;
use statecraft_translators::{ExtractOptions, Extraction, card, extract};

use statecraft_test_support::unchanged;

use unchanged::Unchanged;

/// InitVar text: an inn with a locked character, pairs, an open templated object, an open
/// templated list and a locked list; `open` and `lock` flip two markers.
fn initvar(open_bag: bool, recursive: bool) -> String {
    let bag = if open_bag {
        r#"["rope", "$__META_EXTENSIBLE__$"]"#
    } else {
        r#"["rope"]"#
    };
    let world = if recursive {
        r#"{"$meta": {"recursiveExtensible": true}, "towns": {"a": {"pop": 1}}}"#
    } else {
        r#"{"towns": {"a": {"pop": 1}}}"#
    };
    format!(
        r#"{{
  "n": 5,
  "hero": {{"hp": [10, "0-100"], "name": "Ann", "bag": {bag}, "gold": 3}},
  "npcs": {{"$meta": {{"extensible": true, "required": ["bo"], "template": {{"mood": "calm", "tags": []}}}},
            "bo": {{"mood": "sleepy", "trust": [1, "-9 to 9"]}}}},
  "log": [{{"$meta": {{"extensible": true, "template": {{"done": false}}}}}}, {{"name": "start", "done": true}}],
  "fixed": [1, 2],
  "world": {world}
}}"#
    )
}

/// Paths a model might write: ones that exist, misspelt ones, and ones inside new things.
const PATHS: [&str; 22] = [
    "n",
    "hero",
    "hero.hp",
    "hero.name",
    "hero.bag",
    "hero.bag[0]",
    "hero.gold",
    "hero.mana",
    "npcs",
    "npcs.bo",
    "npcs.bo.mood",
    "npcs.bo.trust",
    "npcs.cy",
    "npcs.cy.mood",
    "log",
    "log[0].done",
    "log[1]",
    "fixed",
    "fixed[1]",
    "world.towns",
    "world.towns.b",
    "nowhere.deep",
];

/// Argument texts: numbers, strings, pairs, objects, arrays, arithmetic, nonsense.
const VALUES: [&str; 14] = [
    "1",
    "-3",
    "12",
    "0.5",
    "'7'",
    "'calm'",
    "\"x\"",
    "true",
    "null",
    "[2, \"d\"]",
    "{\"mood\": \"angry\"}",
    "{}",
    "[\"a\", \"b\"]",
    "2 + 3",
];

fn command() -> impl Strategy<Value = String> {
    let path = prop::sample::select(&PATHS[..]);
    let value = prop::sample::select(&VALUES[..]);
    let key = prop::sample::select(&["'cy'", "'bo'", "'mood'", "0", "1", "'-'", "'new'"][..]);
    prop_oneof![
        (path.clone(), value.clone()).prop_map(|(p, v)| format!("_.set('{p}', {v});")),
        (path.clone(), value.clone(), value.clone())
            .prop_map(|(p, o, v)| format!("_.set('{p}', {o}, {v});//with old")),
        (path.clone(), value.clone()).prop_map(|(p, v)| format!("_.add('{p}', {v});")),
        (path.clone(), value.clone()).prop_map(|(p, v)| format!("_.insert('{p}', {v});")),
        (path.clone(), key.clone(), value.clone())
            .prop_map(|(p, k, v)| format!("_.insert('{p}', {k}, {v});//add")),
        path.clone().prop_map(|p| format!("_.remove('{p}');")),
        (path, key).prop_map(|(p, k)| format!("_.remove('{p}', {k});//gone")),
    ]
}

/// A JSON Schema that bounds `n`, so that commands meet it one by one.
fn schema() -> StateSchema {
    StateSchema::new(json!({
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 10}}
    }))
    .expect("the schema compiles")
}

fn store(state: &Json, structure: &Json, profile: Profile) -> Store {
    Store::builder(Value::from(state.clone()))
        .profile(profile)
        .structure(StructureSchema::new(structure.clone()).expect("the automatic schema reads"))
        .schema(schema())
        .build()
        .expect("the card's state meets the schema")
}

fn read(text: &str, store: &Store) -> Extraction {
    extract(
        text,
        &ExtractOptions {
            mvu: MvuOptions {
                state: Some(store.state().clone()),
                profile: store.profile(),
                ..MvuOptions::default()
            },
            ..ExtractOptions::default()
        },
    )
}

/// What applying a reply did, as a host sees it.
struct Applied {
    changes: Vec<Change>,
    warnings: Vec<(String, Option<String>, String)>,
    diagnostics: Vec<(String, String)>,
    committed: bool,
}

fn apply(store: &mut Store, text: &str) -> Applied {
    let mut extraction = read(text, store);
    let Some((batch, options)) = extraction.applicable() else {
        return Applied {
            changes: Vec::new(),
            warnings: Vec::new(),
            diagnostics: kinds(&extraction),
            committed: false,
        };
    };
    let batch = batch.clone();
    let mut resolver = extraction.resolver();
    let outcome = store.apply_resolved(
        &batch,
        &options,
        resolver.as_mut().map(|r| r as &mut dyn Resolve),
    );
    if let Some(resolver) = resolver {
        extraction.absorb(resolver, text);
    }
    let diagnostics = kinds(&extraction);
    match outcome {
        Outcome::Committed(commit) => Applied {
            changes: commit.changes.to_vec(),
            warnings: commit
                .warnings
                .iter()
                .map(|w| (w.kind.code().to_owned(), w.path.clone(), w.message.clone()))
                .collect(),
            diagnostics,
            committed: true,
        },
        Outcome::Rejected(_) => Applied {
            changes: Vec::new(),
            warnings: Vec::new(),
            diagnostics,
            committed: false,
        },
    }
}

fn kinds(extraction: &Extraction) -> Vec<(String, String)> {
    extraction
        .diagnostics
        .iter()
        .map(|d| (d.kind.code().to_owned(), d.message.to_string()))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        // A failing case is saved beside this file (`*.proptest-regressions`, committed) and run first
        // from then on, so a failure seen once, in CI or anywhere, is reproduced by every run.
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn a_reply_is_its_commands_applied_one_by_one(
        commands in prop::collection::vec(command(), 1..8),
        open_bag in any::<bool>(),
        recursive in any::<bool>(),
        zod in any::<bool>(),
    ) {
        let mut card = card::read(initvar(open_bag, recursive).as_bytes(), &card::Macros::new())
            .expect("the InitVar text reads");
        let automatic = card.schema.take().expect("an InitVar card has an automatic schema");
        let profile = if zod { Profile::MvuZod } else { Profile::Mvu };
        let reply = commands.join("\n");
        let mut whole = store(&card.state, &automatic, profile);
        let applied = apply(&mut whole, &reply);
        prop_assert!(applied.committed, "under {profile} a reply of commands always commits");
        prop_assert!(whole.history_len() <= 1, "one step at most");

        let mut single = store(&card.state, &automatic, profile);
        let mut changes = Vec::new();
        let mut warnings = Vec::new();
        let mut diagnostics = Vec::new();
        for command in &commands {
            let one = apply(&mut single, command);
            prop_assert!(one.committed, "{command}");
            changes.extend(one.changes);
            warnings.extend(one.warnings);
            diagnostics.extend(one.diagnostics);
        }
        prop_assert_eq!(whole.state(), single.state(), "{}", reply);
        prop_assert_eq!(&applied.changes, &changes, "{}", reply);
        prop_assert_eq!(&applied.warnings, &warnings, "{}", reply);
        prop_assert_eq!(&applied.diagnostics, &diagnostics, "{}", reply);
    }

    #[test]
    fn strict_reads_and_applies_a_reply_as_before_profiles(
        commands in prop::collection::vec(command(), 1..8),
        open_bag in any::<bool>(),
    ) {
        let mut card = card::read(initvar(open_bag, false).as_bytes(), &card::Macros::new())
            .expect("the InitVar text reads");
        let automatic = card.schema.take().expect("an InitVar card has an automatic schema");
        let reply = commands.join("\n");
        let mut strict = store(&card.state, &automatic, Profile::Strict);
        let before = strict.state().clone();
        let unchanged = Unchanged::of(&strict);
        // Read as before: MVU's own policies and no profile, whatever the game's profile says.
        let legacy = extract(
            &reply,
            &ExtractOptions {
                mvu: MvuOptions {
                    state: Some(before.clone()),
                    ..MvuOptions::default()
                },
                ..ExtractOptions::default()
            },
        );
        let extraction = read(&reply, &strict);
        prop_assert_eq!(&extraction.batch, &legacy.batch);
        prop_assert_eq!(kinds(&extraction), kinds(&legacy));
        prop_assert!(extraction.resolver().is_none());
        let Some((batch, options)) = extraction.applicable() else {
            prop_assert!(legacy.applicable().is_none());
            return Ok(());
        };
        prop_assert_eq!(options.profile, None);
        let (_, legacy_options) = legacy.applicable().expect("valid as before");
        prop_assert_eq!(options.policies, legacy_options.policies);
        // The store ignores its automatic schema and applies all or nothing, as before.
        let mut plain = Store::builder(before.clone()).schema(schema()).build().expect("valid");
        let expected = plain.apply_with(batch, &legacy_options);
        let got = strict.apply_with(batch, &options);
        prop_assert_eq!(got.is_committed(), expected.is_committed());
        prop_assert_eq!(strict.state(), plain.state());
        if !got.is_committed() {
            let difference = unchanged.differs(&strict);
            prop_assert!(difference.is_none(), "a rejected reply changed: {}", difference.unwrap_or_default());
        }
    }
}

#[test]
fn the_generated_card_is_what_the_properties_expect() {
    let mut card = card::read(initvar(true, true).as_bytes(), &card::Macros::new()).unwrap();
    let automatic = card.schema.take().unwrap();
    assert_eq!(card.state["hero"]["bag"], json!(["rope"]));
    assert_eq!(automatic["properties"]["npcs"]["extensible"], true);
    assert_eq!(
        automatic["properties"]["world"]["recursiveExtensible"],
        true
    );
    // One reply that meets every rule at once, to be sure the properties are not vacuous.
    let mut whole = store(&card.state, &automatic, Profile::Mvu);
    let reply = "_.set('hero.hp', 10, 7);\n_.insert('hero', 'mana', 1);\n_.remove('npcs', 'bo');\n_.insert('npcs', 'cy', {});\n_.set('npcs.cy.mood', 'glad');\n_.add('hero.name', 1);\n_.set('n', 50);\n_.set('typo', 1);";
    let applied = apply(&mut whole, reply);
    let kinds: Vec<&str> = applied.warnings.iter().map(|w| w.0.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "schema_violation",
            "schema_violation",
            "type_mismatch",
            "schema_violation"
        ]
    );
    assert_eq!(whole.state().to_json()["hero"]["hp"], json!([7, "0-100"]));
    assert_eq!(
        whole.state().to_json()["npcs"]["cy"],
        json!({"mood": "glad", "tags": []})
    );
    assert!(
        applied
            .diagnostics
            .iter()
            .any(|(kind, _)| kind == "mvu_missing_path")
    );
}
