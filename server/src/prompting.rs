//! The prompt both prompt endpoints answer (`POST /v1/prompt` and `POST /v1/games/{id}/prompt`):
//! the request's view and mode checked and handed to the prompt kit, its prompt written as the wire
//! carries it.
//!
//! This module owns the checks of those members (a pass needs its reply, and only a pass reads one);
//! it must not word rules or choose what the view shows: `statecraft_prompt` does.

use serde_json::Value as Json;
use statecraft_engine::{CallbackSignature, Path, Value};
use statecraft_prompt::{Mode, PromptOptions, ViewOptions};

use crate::answer::Answer;
use crate::error::{ApiError, Kind};
use crate::requests::{Lang, PromptMode, ViewFormat};
use crate::wire::{GamePrompted, PromptTokens, Prompted, WireElided};

/// What a prompt request asks for beside its state.
pub(crate) struct Asked<'a> {
    pub(crate) lang: Lang,
    pub(crate) budget: Option<usize>,
    pub(crate) format: ViewFormat,
    pub(crate) mode: PromptMode,
    pub(crate) messages: &'a [String],
    pub(crate) reply: Option<&'a str>,
}

/// The prompt kit's prompt for `state`, or a 400 naming the member at fault.
pub(crate) fn make(
    state: &Value,
    schema: Option<&Json>,
    callbacks: &[CallbackSignature],
    recent: &[Path],
    asked: &Asked<'_>,
) -> Result<statecraft_prompt::Prompt, ApiError> {
    let mode = match asked.mode {
        PromptMode::Reply => Mode::Reply,
        PromptMode::Pass => Mode::Pass,
        PromptMode::State => Mode::State,
    };
    match (mode, asked.reply) {
        (Mode::Pass, None) => {
            return Err(ApiError::new(
                Kind::BadRequest,
                "\"reply\" is missing: mode \"pass\" asks for the update of a reply, so the body \
                 must give that reply's text",
            ));
        }
        (Mode::Reply | Mode::State, Some(_)) => {
            return Err(ApiError::new(
                Kind::BadRequest,
                "\"reply\" is given, but only mode \"pass\" reads a reply; set \"mode\": \"pass\" \
                 or leave \"reply\" out",
            ));
        }
        _ => {}
    }
    let options = PromptOptions {
        lang: match asked.lang {
            Lang::En => statecraft_prompt::Lang::En,
            Lang::Zh => statecraft_prompt::Lang::Zh,
        },
        mode,
        view: ViewOptions {
            budget: asked.budget,
            format: match asked.format {
                ViewFormat::Json => statecraft_prompt::ViewFormat::Json,
                ViewFormat::Compact => statecraft_prompt::ViewFormat::Compact,
            },
            recent,
            messages: asked.messages,
        },
        reply: asked.reply,
    };
    Ok(statecraft_prompt::prompt_with(
        state, schema, callbacks, &options,
    ))
}

/// The wire's form of a prompt.
pub(crate) fn prompted(made: &statecraft_prompt::Prompt) -> Prompted<'_> {
    Prompted {
        text: made.as_text(),
        rules: &made.rules,
        state: &made.view.text,
        tokens: PromptTokens {
            text: statecraft_prompt::estimate_tokens(made.as_text()),
            state: made.view.tokens,
            full_state: made.view.full_tokens,
        },
        elided: WireElided::all(&made.view.elided),
    }
}

/// `POST /v1/games/{id}/prompt`'s answer.
pub(crate) fn game_answer(
    made: &statecraft_prompt::Prompt,
    step: u64,
    label: Option<&str>,
) -> Answer {
    Answer::ok(&GamePrompted {
        prompt: prompted(made),
        step,
        label,
    })
}
