//! The prompt kit's commands: `prompt`, `schema`, `feedback`, `grade` and `evaluate`.
//!
//! Each command reads its files, calls one function of the prompt kit (`statecraft_prompt`) and prints
//! the answer on stdout. This module owns the options and the exit codes of these five commands; it
//! must not hold instruction semantics, wording or scoring of its own, and it never writes a state
//! file: `feedback` and `grade` try the reply on a copy of the state.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use serde_json::{Value as Json, json};
use statecraft_engine::{Condition, StateSchema, StepId, StepRef, Value};
use statecraft_prompt::{
    Expectation, Grade, InstructionSpec, Lang, MAX_DESCRIBED_SEGMENTS, MAX_TARGETS, Mode,
    PromptOptions, ViewFormat, ViewOptions, batch_gbnf, batch_schema, estimate_tokens, grade,
    prompt_with, recent_changes, review,
};

use crate::EXIT_REJECTED;
use crate::files;
use crate::render::{self, Output};
use crate::scripting;

/// A language of the rules text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum LangArg {
    /// English.
    En,
    /// Simplified Chinese.
    Zh,
}

/// A format of the state view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ViewArg {
    /// Pretty JSON.
    Json,
    /// `key: value` lines, nested by indentation (docs/state-view.md).
    Compact,
}

/// Where `prompt` and `evaluate` read the state: a state file, or a save at a step.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["state", "save"])))]
pub(crate) struct StateSource {
    /// The state file (JSON).
    #[arg(long, value_name = "STATE.json")]
    pub(crate) state: Option<PathBuf>,

    /// A save: its state at the current step (or `--at`/`--at-step`).
    #[arg(long, value_name = "GAME")]
    pub(crate) save: Option<PathBuf>,

    /// With `--save`: the step with this label.
    #[arg(
        long,
        value_name = "LABEL",
        requires = "save",
        conflicts_with = "at_step"
    )]
    pub(crate) at: Option<String>,

    /// With `--save`: the step with this id (0: the root).
    #[arg(long, value_name = "ID", requires = "save")]
    pub(crate) at_step: Option<u64>,
}

/// `statecraft prompt`.
#[derive(Debug, Args)]
pub(crate) struct PromptArgs {
    #[command(flatten)]
    pub(crate) source: StateSource,

    /// The state's JSON Schema: types the examples and hides subtrees marked
    /// `"x-statecraft-visible": false` (with `--save`, instead of the save's own schema).
    #[arg(long, value_name = "SCHEMA.json")]
    pub(crate) schema: Option<PathBuf>,

    /// A folder of Lua scripts: the rules list the callbacks its handlers register, with the doc and
    /// arguments each describes.
    #[arg(long, value_name = "DIR")]
    pub(crate) scripts: Option<PathBuf>,

    /// The language of the rules text.
    #[arg(long, value_enum, default_value_t = LangArg::En)]
    pub(crate) lang: LangArg,

    /// The most tokens the state view may take, by the documented estimator (docs/state-view.md);
    /// with `--save`, what the last steps changed is shown first.
    #[arg(long, value_name = "N")]
    pub(crate) budget: Option<usize>,

    /// The state view's format.
    #[arg(long, value_enum, default_value_t = ViewArg::Json)]
    pub(crate) view: ViewArg,

    /// A recent chat message (repeatable, oldest first): what it mentions is shown first.
    #[arg(long = "message", value_name = "TEXT")]
    pub(crate) messages: Vec<String>,

    /// The rules for a separate update pass over `--reply`, answering one {"instructions": [...]}.
    #[arg(long, requires = "reply", conflicts_with = "state_only")]
    pub(crate) pass: bool,

    /// The reply a pass asks the update of (`-` reads stdin).
    #[arg(long, value_name = "FILE", requires = "pass")]
    pub(crate) reply: Option<PathBuf>,

    /// The state view alone, without command rules (a story prompt whose updates come from a pass).
    #[arg(long)]
    pub(crate) state_only: bool,
}

/// `statecraft evaluate`.
#[derive(Debug, Args)]
pub(crate) struct EvaluateArgs {
    #[command(flatten)]
    pub(crate) source: StateSource,

    /// A condition (repeatable): `hp > 3 and mood in ['calm', 'glad']` (docs/state-view.md).
    #[arg(long = "condition", value_name = "TEXT", required = true)]
    pub(crate) conditions: Vec<String>,
}

/// `statecraft schema`.
#[derive(Debug, Args)]
pub(crate) struct SchemaArgs {
    /// The state's JSON Schema to tailor to; without it, any path and value is allowed.
    #[arg(long, value_name = "SCHEMA.json")]
    pub(crate) schema: Option<PathBuf>,

    /// A folder of Lua scripts: the batch may call the callbacks its handlers register, with the
    /// arguments each describes, and no others.
    #[arg(long, value_name = "DIR")]
    pub(crate) scripts: Option<PathBuf>,

    /// Print a GBNF grammar (llama.cpp constrained decoding) instead of a JSON Schema.
    #[arg(long)]
    pub(crate) gbnf: bool,
}

/// `statecraft feedback`.
#[derive(Debug, Args)]
pub(crate) struct FeedbackArgs {
    /// The state file (JSON) the reply is meant for; it is never written.
    #[arg(long, value_name = "STATE.json")]
    pub(crate) state: PathBuf,

    /// The state's JSON Schema.
    #[arg(long, value_name = "SCHEMA.json")]
    pub(crate) schema: Option<PathBuf>,

    /// The model reply; `-` or nothing reads stdin.
    #[arg(value_name = "INPUT")]
    pub(crate) input: Option<PathBuf>,
}

/// `statecraft grade`.
#[derive(Debug, Args)]
pub(crate) struct GradeArgs {
    /// The state file (JSON) the reply is meant for; it is never written.
    #[arg(long, value_name = "STATE.json")]
    pub(crate) state: PathBuf,

    /// The state's JSON Schema.
    #[arg(long, value_name = "SCHEMA.json")]
    pub(crate) schema: Option<PathBuf>,

    /// Expected values after the reply: a JSON object mapping JSON Pointers to values,
    /// like {"/player/hp": 25}.
    #[arg(long, value_name = "EXPECT.json")]
    pub(crate) expect: Option<PathBuf>,

    /// The model reply; `-` or nothing reads stdin.
    #[arg(value_name = "INPUT")]
    pub(crate) input: Option<PathBuf>,
}

/// The state a command reads (a state file, or a save at a step), the save's schema, and the paths the
/// last steps on its path changed (`recent_changes`).
fn read_source(
    source: &StateSource,
    out: &Output,
) -> Result<(Value, Option<Json>, Vec<statecraft_engine::Path>)> {
    if let Some(state) = &source.state {
        return Ok((files::read_state(state)?, None, Vec::new()));
    }
    let save = source.save.as_deref().context("give --state or --save")?;
    let game = crate::saves::open(
        save,
        statecraft_saves::OpenOptions::default().read_only(),
        out,
    )?;
    let store = game.store();
    let id = match (source.at.as_deref(), source.at_step) {
        (Some(label), _) => store
            .find(StepRef::Label(label.to_owned()))
            .with_context(|| format!("no step is labelled \"{label}\" in {}", save.display()))?,
        (None, Some(id)) => store
            .find(StepRef::Id(StepId::new(id)))
            .with_context(|| format!("no step has id {id} in {}", save.display()))?,
        (None, None) => store.current_step(),
    };
    let state = store
        .state_at(id)
        .with_context(|| format!("cannot read step {} of {}", id.get(), save.display()))?
        .value()
        .clone();
    let recent = recent_changes(store, id);
    Ok((state, game.schema().cloned(), recent))
}

/// Runs `prompt`: the rules text and the state view on stdout (`--format json`: the text, rules,
/// view, token counts and what the view leaves out).
pub(crate) fn run_prompt(args: &PromptArgs, out: &Output) -> Result<ExitCode> {
    let (state, saved_schema, recent) = read_source(&args.source, out)?;
    let schema = match &args.schema {
        Some(path) => Some(files::read_schema(path)?),
        None => saved_schema
            .map(StateSchema::new)
            .transpose()
            .context("the save's schema does not compile")?,
    };
    if let Some(schema) = &schema {
        let errors = schema.check_full(&state);
        if !errors.is_empty() {
            bail!(
                "the state does not satisfy the schema:\n{}",
                render::errors_text(&errors).trim_end()
            );
        }
    }
    let lang = match args.lang {
        LangArg::En => Lang::En,
        LangArg::Zh => Lang::Zh,
    };
    let callbacks = scripting::signatures(args.scripts.as_deref())?;
    let reply = match &args.reply {
        Some(path) => Some(files::read_input(Some(path))?),
        None => None,
    };
    let mode = if args.pass {
        Mode::Pass
    } else if args.state_only {
        Mode::State
    } else {
        Mode::Reply
    };
    let made = prompt_with(
        &state,
        schema.as_ref().map(StateSchema::source),
        &callbacks,
        &PromptOptions {
            lang,
            mode,
            view: ViewOptions {
                budget: args.budget,
                format: match args.view {
                    ViewArg::Json => ViewFormat::Json,
                    ViewArg::Compact => ViewFormat::Compact,
                },
                recent: &recent,
                messages: &args.messages,
            },
            reply: reply.as_deref(),
        },
    );
    if out.json() {
        let doc = json!({
            "text": made.as_text(),
            "rules": made.rules,
            "state": made.view.text,
            "tokens": {
                "text": estimate_tokens(made.as_text()),
                "state": made.view.tokens,
                "full_state": made.view.full_tokens,
            },
            "elided": made.view.elided,
        });
        emit(&format!("{doc}\n"))?;
    } else {
        emit(made.as_text())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs `evaluate`: one line per condition (`true: TEXT`, `false: TEXT`, or the error with its
/// bytes), exit 0
/// when every condition could be read, 2 otherwise; `--format json`: `{"results": [...]}` as the
/// HTTP API answers.
pub(crate) fn run_evaluate(args: &EvaluateArgs, out: &Output) -> Result<ExitCode> {
    let (state, _, _) = read_source(&args.source, out)?;
    let mut results = Vec::new();
    let mut failed = false;
    let mut text = String::new();
    for condition in &args.conditions {
        match Condition::parse(condition) {
            Ok(parsed) => {
                let holds = parsed.holds(&state);
                results.push(json!({"holds": holds}));
                text.push_str(&format!("{holds}: {condition}\n"));
            }
            Err(error) => {
                failed = true;
                results.push(json!({"error": {
                    "code": error.code,
                    "message": error.message,
                    "start": error.start,
                    "end": error.end,
                }}));
                text.push_str(&format!(
                    "error: {} at bytes {}..{} of \"{condition}\" ({})\n",
                    error.message, error.start, error.end, error.code
                ));
            }
        }
    }
    if out.json() {
        emit(&format!("{}\n", json!({"results": results})))?;
    } else {
        emit(&text)?;
    }
    Ok(if failed {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

/// Runs `schema`: the batch's JSON Schema, or with `--gbnf` its grammar. The warning for a partial
/// output is a JSON document on stderr under `--format json`.
pub(crate) fn run_schema(args: &SchemaArgs, out: &Output) -> Result<ExitCode> {
    let source = match &args.schema {
        Some(path) => Some(files::read_schema(path)?.source().clone()),
        None => None,
    };
    let callbacks = scripting::signatures(args.scripts.as_deref())?;
    let spec = InstructionSpec::from_schema(source.as_ref()).with_callbacks(&callbacks);
    if spec.is_partial() {
        let message = format!(
            "the schema is recursive or declares more than {MAX_TARGETS} paths; the output covers \
             paths up to {MAX_DESCRIBED_SEGMENTS} segments deep and the first {MAX_TARGETS} paths"
        );
        if out.json() {
            errln!(
                "{}",
                json!({"warning": "partial_schema", "message": message})
            );
        } else {
            errln!("warning: {message}");
        }
    }
    if args.gbnf {
        emit(&batch_gbnf(&spec))?;
    } else {
        let text = serde_json::to_string_pretty(&batch_schema(&spec))
            .context("cannot write the schema as json")?;
        emit(&format!("{text}\n"))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs `feedback`: the message for the model on stdout; exit 0 when there is nothing to correct.
pub(crate) fn run_feedback(args: &FeedbackArgs, out: &Output) -> Result<ExitCode> {
    let (state, schema) = state_and_schema(&args.state, args.schema.as_deref())?;
    let text = files::read_input(args.input.as_deref())?;
    let found = review(&text, &state, schema.as_ref());
    if out.json() {
        let text =
            serde_json::to_string_pretty(&found).context("cannot write the review as json")?;
        emit(&format!("{text}\n"))?;
    } else {
        emit(&found.message)?;
        if found.is_clean() {
            eprintln!("nothing to correct (repair score {}/100)", found.score);
        } else {
            eprintln!(
                "{} problem{} to correct",
                found.problems.len(),
                if found.problems.len() == 1 { "" } else { "s" }
            );
        }
    }
    Ok(if found.is_clean() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_REJECTED)
    })
}

/// Runs `grade`: the grade on stdout, exit 0 (a low grade is an answer, not a failure). Like `log`, it
/// prints JSON unless `--format human` is given by name (`drawn`), which prints a summary for people.
pub(crate) fn run_grade(args: &GradeArgs, drawn: bool) -> Result<ExitCode> {
    let (state, schema) = state_and_schema(&args.state, args.schema.as_deref())?;
    let expected = match &args.expect {
        Some(path) => {
            let json = files::read_json(path, "expectations")?;
            match Expectation::from_map(&json) {
                Ok(expected) => expected,
                Err(why) => bail!("the expectations file {}: {why}", path.display()),
            }
        }
        None => Vec::new(),
    };
    let text = files::read_input(args.input.as_deref())?;
    let result = grade(&text, &state, schema.as_ref(), &expected);
    if drawn {
        emit(&grade_text(&result))?;
    } else {
        let text =
            serde_json::to_string_pretty(&result).context("cannot write the grade as json")?;
        emit(&format!("{text}\n"))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// A grade for people: the scores, the verdicts, the engine's reasons and each expectation.
fn grade_text(grade: &Grade) -> String {
    let yes = |flag: bool| if flag { "yes" } else { "no" };
    let mut text = format!(
        "score {}/100 (cleanliness {}/100)\n{} instruction{} read; valid: {}; applies: {}; in the schema: {}\n",
        grade.score,
        grade.cleanliness,
        grade.instructions,
        if grade.instructions == 1 { "" } else { "s" },
        yes(grade.valid),
        yes(grade.applies),
        yes(grade.in_schema),
    );
    if !grade.errors.is_empty() {
        text.push_str("the engine would reject the batch:\n");
        for error in &grade.errors {
            text.push_str(&format!("  {error}\n"));
        }
    }
    if !grade.checks.is_empty() {
        text.push_str(&format!(
            "checks: {}/{} passed\n",
            grade.checks_passed,
            grade.checks.len()
        ));
        for check in &grade.checks {
            let actual = check
                .actual
                .as_ref()
                .map_or_else(|| "nothing".to_owned(), ToString::to_string);
            if check.passed {
                text.push_str(&format!("  ok    {} = {actual}\n", check.pointer));
            } else {
                text.push_str(&format!(
                    "  FAIL  {}: expected {}, got {actual}\n",
                    check.pointer, check.expected
                ));
            }
        }
    }
    text
}

/// Writes `text` to stdout. A reader that closes the pipe early (`statecraft schema --gbnf | head`)
/// has what it wanted, so that ends the output quietly instead of failing.
fn emit(text: &str) -> Result<()> {
    let mut stdout = io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(error) if error.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        written => written.context("cannot write to stdout"),
    }
}

/// Reads the state and the schema, and refuses a state that breaks its schema: it is not a valid
/// starting point, so anything said about a reply for it would mislead (a usage error, exit 2).
fn state_and_schema(
    state_path: &Path,
    schema_path: Option<&Path>,
) -> Result<(Value, Option<StateSchema>)> {
    let state = files::read_state(state_path)?;
    let Some(schema_path) = schema_path else {
        return Ok((state, None));
    };
    let schema = files::read_schema(schema_path)?;
    let errors = schema.check_full(&state);
    if !errors.is_empty() {
        bail!(
            "the state does not satisfy the schema:\n{}",
            render::errors_text(&errors).trim_end()
        );
    }
    Ok((state, Some(schema)))
}
