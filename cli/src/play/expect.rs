//! A turn's expectations checked against what happened: the outcome, values (the prompt kit's
//! [`statecraft_prompt::Expectation`] checks, so `play` and `grade` agree on what "holds" means), absent paths, error,
//! warning and diagnostic kinds by their codes, events, the change count and the repair score; and on
//! the history tree, the current step and the state at any labelled step, read without moving.
//!
//! This module owns the wording of each check; it must not apply anything or print.

use statecraft_engine::{Outcome, Path as StatePath, StateSchema, Store, Value};
use statecraft_prompt::{
    Expectation, ViewFormat, ViewOptions, recent_changes, view, visible_state,
};

use super::scenario::{Expect, Expected, ViewExpect, ViewFormatName};
use crate::reply;

/// Expectation results of one turn: `(passed, description)`.
#[derive(Debug, Default)]
pub(super) struct Checks {
    pub(super) results: Vec<(bool, String)>,
}

impl Checks {
    fn check(&mut self, passed: bool, what: String) {
        self.results.push((passed, what));
    }
}

/// Checks a turn's expectations against what happened.
pub(super) fn check_turn(
    expect: &Expect,
    outcome: Option<&Outcome>,
    reading: &reply::Reading,
    store: &Store,
    checks: &mut Checks,
) {
    let committed = outcome.is_some_and(Outcome::is_committed);
    if let Some(wanted) = expect.outcome {
        let want_commit = wanted == Expected::Committed;
        let said = if committed { "committed" } else { "rejected" };
        let wanted_text = if want_commit { "committed" } else { "rejected" };
        checks.check(
            want_commit == committed,
            format!("expected {wanted_text}, was {said}"),
        );
    }
    check_position(expect, store, checks);
    match outcome {
        None => {
            let kinds: Vec<&str> = reading.errors().map(|d| d.kind.code()).collect();
            for wanted in &expect.errors {
                checks.check(
                    kinds.contains(&wanted.as_str()),
                    format!("rejected with {wanted} (got {})", kinds.join(", ")),
                );
            }
        }
        Some(Outcome::Rejected(rejection)) => {
            let kinds: Vec<&str> = rejection.errors.iter().map(|e| e.kind.code()).collect();
            for wanted in &expect.errors {
                checks.check(
                    kinds.contains(&wanted.as_str()),
                    format!("rejected with {wanted} (got {})", kinds.join(", ")),
                );
            }
        }
        Some(Outcome::Committed(commit)) => {
            for wanted in &expect.errors {
                checks.check(
                    false,
                    format!("rejected with {wanted} (the batch committed)"),
                );
            }
            let kinds: Vec<&str> = commit.warnings.iter().map(|e| e.kind.code()).collect();
            for wanted in &expect.warnings {
                checks.check(
                    kinds.contains(&wanted.as_str()),
                    format!("warned {wanted} (got {})", kinds.join(", ")),
                );
            }
            if !expect.events.is_empty() {
                let names: Vec<&str> = commit.events.iter().map(|e| e.name.as_str()).collect();
                checks.check(
                    names == expect.events,
                    format!(
                        "events {} (got {})",
                        expect.events.join(", "),
                        names.join(", ")
                    ),
                );
            }
            if let Some(count) = expect.changes {
                checks.check(
                    commit.changes.len() == count,
                    format!("{count} changes (got {})", commit.changes.len()),
                );
            }
        }
    }
    if !committed {
        for wanted in &expect.warnings {
            checks.check(false, format!("warned {wanted} (the batch was rejected)"));
        }
        if !expect.events.is_empty() {
            checks.check(
                false,
                format!(
                    "events {} (the batch was rejected)",
                    expect.events.join(", ")
                ),
            );
        }
    }
    let kinds: Vec<&str> = reading
        .diagnostics()
        .iter()
        .map(|d| d.kind.code())
        .collect();
    for wanted in &expect.diagnostics {
        checks.check(
            kinds.contains(&wanted.as_str()),
            format!("diagnostic {wanted} (got {})", kinds.join(", ")),
        );
    }
    if let Some(minimum) = expect.min_score {
        let got = reading.score();
        checks.check(
            got >= minimum,
            format!("repair score at least {minimum} (got {got})"),
        );
    }
}

/// Checks what holds after any turn, a reply or a move: values and absent paths in the current state,
/// the current step, and the state at labelled steps.
pub(super) fn check_position(expect: &Expect, store: &Store, checks: &mut Checks) {
    for expectation in &expect.values {
        check_value(expectation, store.state(), "", checks);
    }
    for pointer in &expect.absent {
        let found = StatePath::from_pointer(pointer)
            .ok()
            .and_then(|path| store.get(&path).cloned());
        checks.check(found.is_none(), format!("{pointer} is absent"));
    }
    if let Some(current) = &expect.current {
        let wanted = store.find(current.step()).ok();
        let now = store.current_step();
        let label = store.step(now).and_then(|step| step.label).unwrap_or("");
        checks.check(
            wanted == Some(now),
            format!("the current step is {current} (it is step {now} {label})"),
        );
    }
    if !expect.display.is_empty() || expect.delta.is_some() {
        match statecraft_translators::mvu::current_views(store) {
            Ok(views) => {
                let display = Value::from_json(&views.display_data);
                for expectation in &expect.display {
                    check_value(expectation, &display, "display_data ", checks);
                }
                if let Some(delta) = &expect.delta {
                    checks.check(
                        &views.delta_data == delta,
                        format!("delta_data is {delta} (found {})", views.delta_data),
                    );
                }
            }
            Err(error) => checks.check(false, format!("mvu views: {error}")),
        }
    }
    for (text, condition, holds) in &expect.conditions {
        let found = condition.holds(store.state());
        checks.check(
            found == *holds,
            format!("condition {text} is {holds} (it is {found})"),
        );
    }
    if let Some(wanted) = &expect.view {
        check_view(wanted, store, checks);
    }
    for (label, expectations) in &expect.steps {
        match store.state_at(label.as_str()) {
            Ok(state) => {
                for expectation in expectations {
                    check_value(expectation, state.value(), &format!("at {label}: "), checks);
                }
            }
            Err(error) => checks.check(false, format!("at {label}: {error}")),
        }
    }
}

/// The budgeted view of the current state (the scenario's schema, the last steps' changes ranked
/// first): within its budget, holding what it must, naming what it must leave out.
fn check_view(wanted: &ViewExpect, store: &Store, checks: &mut Checks) {
    let recent = recent_changes(store, store.current_step());
    let state = store.state().to_json();
    let schema = store.schema().map(StateSchema::source);
    let visible = match schema {
        Some(schema) => visible_state(&state, schema),
        None => state,
    };
    let made = view(
        &visible,
        schema,
        &ViewOptions {
            budget: Some(wanted.budget),
            format: match wanted.format {
                ViewFormatName::Json => ViewFormat::Json,
                ViewFormatName::Compact => ViewFormat::Compact,
            },
            recent: &recent,
            messages: &wanted.messages,
        },
    );
    checks.check(
        made.tokens <= wanted.budget,
        format!(
            "the view keeps within {} tokens (it takes {})",
            wanted.budget, made.tokens
        ),
    );
    for text in &wanted.contains {
        checks.check(
            made.text.contains(text.as_str()),
            format!("the view shows {text:?}"),
        );
    }
    for text in &wanted.lacks {
        checks.check(
            !made.text.contains(text.as_str()),
            format!("the view does not show {text:?}"),
        );
    }
    let elided: Vec<&str> = made.elided.iter().map(|e| e.path.as_str()).collect();
    for pointer in &wanted.elided {
        checks.check(
            elided.contains(&pointer.as_str()),
            format!(
                "the view names {pointer} as left out (it names {})",
                elided.join(", ")
            ),
        );
    }
}

/// One value check, against the current state or the state at a step (`at` says which).
fn check_value(expectation: &Expectation, state: &Value, at: &str, checks: &mut Checks) {
    let outcome = expectation.check(state);
    let found = outcome
        .actual
        .map_or_else(|| "absent".to_owned(), |v| v.to_string());
    checks.check(
        outcome.passed,
        format!(
            "{at}{} = {} (found {found})",
            outcome.pointer, outcome.expected
        ),
    );
}
