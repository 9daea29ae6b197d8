//! The `statecraft` command: the engine, the translators, Lua handlers and saves behind one binary.
//!
//! `main` parses the command line (`args`), runs one command and maps the result to the exit codes of
//! docs/cli.md: 0 success, 1 a rejected batch (or a failed expectation in `play`), 2 a usage or IO error.
//! Every command module returns `Ok(code)` for an expected outcome and `Err` only for usage and IO
//! problems, so that no path can print a state and still exit non-zero, or the reverse. This crate is the
//! only `anyhow` user; it must not hold instruction semantics of its own.

/// `print!` that returns an IO error instead of panicking when stdout is closed (`statecraft … | head`).
macro_rules! out {
    ($($arg:tt)*) => { $crate::render::write_stdout(&format!($($arg)*)) };
}

/// `println!` that returns an IO error instead of panicking when stdout is closed.
macro_rules! outln {
    () => { $crate::render::write_stdout("\n") };
    ($($arg:tt)*) => { $crate::render::write_stdout(&format!("{}\n", format_args!($($arg)*))) };
}

/// `eprint!` that never panics: diagnostics are best effort, and a closed stderr must not turn a
/// commit into a crash.
macro_rules! err {
    ($($arg:tt)*) => { $crate::render::write_stderr(&format!($($arg)*)) };
}

/// `eprintln!` that never panics.
macro_rules! errln {
    ($($arg:tt)*) => { $crate::render::write_stderr(&format!("{}\n", format_args!($($arg)*))) };
}

mod apply;
mod args;
mod card;
mod chat;
mod convert;
mod extract;
mod files;
mod play;
mod prompt;
mod render;
mod reply;
mod saves;
mod scripting;
mod serve;

use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches};

use crate::args::{Cli, Command};
use crate::render::Output;

/// A rejected batch, or a failed expectation in `play`.
pub(crate) const EXIT_REJECTED: u8 = 1;
/// A usage or IO error.
pub(crate) const EXIT_USAGE: u8 = 2;

fn main() -> ExitCode {
    let matches = Cli::command()
        .try_get_matches()
        .unwrap_or_else(|error| exit_on(&error));
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|error| exit_on(&error));
    let out = Output::detect(cli.format);
    // `log` and `grade` print JSON unless the human format is asked for by name (docs/cli.md).
    let drawn = matches!(
        matches.value_source("format"),
        Some(ValueSource::CommandLine)
    ) && !out.json();
    match run(&cli.command, &out, drawn) {
        Ok(code) => code,
        Err(error) => {
            render::print_error(&out, &error);
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// Ends the process on one of clap's answers. `--help` and `--version` print as clap prints them;
/// clap's usage errors exit 2, which is the contract already, and under `--format json` they are a
/// JSON document like every other error, so that a host never has to parse text.
fn exit_on(error: &clap::Error) -> ! {
    if !error.use_stderr() || !asks_for_json(std::env::args()) {
        error.exit();
    }
    let message = if error.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        "a command is required; `statecraft --help` lists them".to_owned()
    } else {
        let rendered = error.to_string();
        let message = rendered.strip_prefix("error: ").unwrap_or(&rendered);
        // The first paragraph says what and why; the rest is usage text for people.
        message
            .split("\n\n")
            .next()
            .unwrap_or(message)
            .trim()
            .to_owned()
    };
    errln!("{}", serde_json::json!({ "error": message }));
    std::process::exit(EXIT_USAGE.into());
}

/// Whether the command line asks for `--format json`, read from the raw arguments because it is
/// clap that could not parse them.
fn asks_for_json(arguments: impl Iterator<Item = String>) -> bool {
    let mut previous_was_format = false;
    for argument in arguments {
        if argument == "--" {
            break;
        }
        if argument == "--format=json" || (previous_was_format && argument == "json") {
            return true;
        }
        previous_was_format = argument == "--format";
    }
    false
}

/// Runs one command; `drawn` says that `--format human` was given.
fn run(command: &Command, out: &Output, drawn: bool) -> anyhow::Result<ExitCode> {
    match command {
        Command::Apply(args) => match (&args.state, &args.save) {
            (Some(state), _) => apply::run(args, state, out),
            (None, Some(save)) => saves::apply(args, save, out),
            // clap's argument group requires one of the two; this arm keeps the match total.
            (None, None) => anyhow::bail!("apply needs --state STATE.json or --save GAME"),
        },
        Command::Extract(args) => extract::run(args, out),
        Command::Convert(args) => convert::run(args, out),
        Command::New(args) => saves::new(args, out),
        Command::Undo(args) => saves::undo(args, out),
        Command::Redo(args) => saves::redo(args, out),
        Command::Checkout(args) => saves::checkout(args, out),
        Command::Show(args) => saves::show(args, out),
        Command::Log(args) => saves::log(args, out, drawn),
        Command::Play(args) => play::run(args, out),
        Command::Prompt(args) => prompt::run_prompt(args, out),
        Command::Evaluate(args) => prompt::run_evaluate(args, out),
        Command::Schema(args) => prompt::run_schema(args, out),
        Command::Feedback(args) => prompt::run_feedback(args, out),
        Command::Grade(args) => prompt::run_grade(args, drawn),
        Command::Serve(args) => serve::run(args, out),
        Command::Card(args) => card::run(args, out),
        Command::Sync(args) => chat::sync(args, out),
        Command::ImportChat(args) => chat::import_chat(args, out),
    }
}
