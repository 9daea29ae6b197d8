//! The `statecraft` command: the engine, the translators, Lua handlers and saves behind one binary.
//!
//! `main` parses the command line (`args`), runs one command and maps the result to the exit codes of
//! SPEC §7: 0 success, 1 a rejected batch (or a failed expectation in `play`), 2 a usage or IO error.
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
mod convert;
mod extract;
mod files;
mod play;
mod prompt_commands;
mod render;
mod reply;
mod save_commands;
mod scripting;
mod serve;

use std::process::ExitCode;

use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches};

use crate::args::{Cli, Command};
use crate::render::Output;

/// A rejected batch, or a failed expectation in `play`.
pub(crate) const EXIT_REJECTED: u8 = 1;
/// A usage or IO error.
pub(crate) const EXIT_USAGE: u8 = 2;

fn main() -> ExitCode {
    // clap exits with 2 on its own usage errors and 0 for `--help`, which is the contract already.
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|error| error.exit());
    let out = Output::detect(cli.format);
    // `log` and `grade` print JSON unless the human format is asked for by name (SPEC §7).
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

/// Runs one command; `drawn` says that `--format human` was given.
fn run(command: &Command, out: &Output, drawn: bool) -> anyhow::Result<ExitCode> {
    match command {
        Command::Apply(args) => match (&args.state, &args.save) {
            (Some(state), _) => apply::run(args, state, out),
            (None, Some(save)) => save_commands::apply(args, save, out),
            // clap's argument group requires one of the two; this arm keeps the match total.
            (None, None) => anyhow::bail!("apply needs --state STATE.json or --save GAME"),
        },
        Command::Extract(args) => extract::run(args, out),
        Command::Convert(args) => convert::run(args, out),
        Command::New(args) => save_commands::new(args, out),
        Command::Undo(args) => save_commands::undo(args, out),
        Command::Redo(args) => save_commands::redo(args, out),
        Command::Checkout(args) => save_commands::checkout(args, out),
        Command::Show(args) => save_commands::show(args, out),
        Command::Log(args) => save_commands::log(args, out, drawn),
        Command::Play(args) => play::run(args, out),
        Command::Prompt(args) => prompt_commands::run_prompt(args, out),
        Command::Schema(args) => prompt_commands::run_schema(args, out),
        Command::Feedback(args) => prompt_commands::run_feedback(args, out),
        Command::Grade(args) => prompt_commands::run_grade(args, drawn),
        Command::Serve(args) => serve::run(args, out),
    }
}
