//! The command line grammar: every command of docs/cli.md and its options, as clap derive types.
//!
//! This module owns names, help texts and examples, nothing else: the commands themselves live in their
//! own modules, and the save commands in `saves.rs`, which receive these structs. The grammar is
//! a stable interface (scripts and tests depend on it), so options are only ever added, never renamed.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// `statecraft --version`: the version and the HTTP API version (`statecraft_server::API_VERSION`),
/// which the SillyTavern plugin reads before it starts the binary.
pub(crate) const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (HTTP API 1)");

/// The statecraft command.
#[derive(Debug, Parser)]
#[command(
    name = "statecraft",
    version = VERSION,
    about = "Apply state-update instructions written by language models, atomically, with undo.",
    long_about = "Apply state-update instructions written by language models to a JSON state, atomically, \
with undo.\n\nA model reply (JSON instructions, possibly broken, in fences or tags, or MVU `_.set` \
commands) is read into one batch of instructions; the batch either commits whole or changes nothing.",
    after_help = "Examples:\n  \
statecraft apply --state state.json reply.txt          print the new state\n  \
statecraft apply --state state.json --in-place -       apply a reply from stdin to the file\n  \
statecraft extract reply.txt                           show the instructions found in a reply\n  \
statecraft convert --from mvu --to json commands.txt   MVU commands as JSON instructions\n  \
statecraft play examples/fantasy                       run a scripted scenario\n\n\
Exit codes: 0 success, 1 batch rejected (nothing changed), 2 usage or IO error."
)]
pub(crate) struct Cli {
    /// How to print diagnostics and errors (stderr) and play's report (stdout): for people, or as JSON.
    #[arg(long, value_enum, global = true, default_value_t = Format::Human)]
    pub(crate) format: Format,

    #[command(subcommand)]
    pub(crate) command: Command,
}

/// Output format for diagnostics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// Readable text, with source lines and carets; colour only on a terminal.
    Human,
    /// Machine-readable JSON documents.
    Json,
}

/// A command.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Apply a model reply or a JSON batch to a state file or a save, as one atomic batch.
    #[command(after_help = "Examples:\n  \
statecraft apply --state state.json reply.txt\n  \
echo '[{\"op\":\"assign\",\"path\":[\"hp\"],\"value\":9}]' | statecraft apply --state state.json -\n  \
statecraft apply --state state.json --schema schema.json --scripts scripts/ --in-place reply.txt\n  \
statecraft apply --state card.json --macro user=Alex mvu-reply.txt\n  \
statecraft apply --state stat.json --profile mvu mvu-reply.txt    MVU's rules: one command at a time\n  \
statecraft apply --save game.save --label msg-42 reply.txt\n  \
statecraft apply --save game.save --at msg-41 --label msg-42/s2 swipe.txt   a swipe of msg-42\n\n\
With --state: on commit exit 0 and the new state on stdout; on rejection exit 1, nothing on stdout, \
the reasons on stderr, and STATE.json untouched. With --save: exit 0 only once the step is on disk.")]
    Apply(ApplyArgs),

    /// Show the instructions found in a model reply, as a JSON array of canonical instructions.
    #[command(after_help = "Examples:\n  \
statecraft extract reply.txt\n  \
statecraft extract --format json - < reply.txt\n\n\
The batch goes to stdout, diagnostics and the repair score to stderr; exit 0 whenever the reply could be \
read, even when the batch is empty or some text was skipped. Exit 1, with nothing on stdout, when the reply \
holds an invalid instruction (or, with --mvu-unrunnable reject, MVU text MVU would not run): such a batch \
must not be applied.")]
    Extract(ExtractArgs),

    /// Translate between MVU commands, JSON instructions and JSON Patch, without a state.
    #[command(after_help = "Examples:\n  \
statecraft convert --from mvu --to json commands.txt\n  \
statecraft convert --from json --to mvu batch.json\n  \
statecraft convert --from jsonpatch --to json patch.json\n\n\
Exit 0 whenever the input could be read, even when some text was skipped (each skip is reported); \
exit 1 when it holds an invalid instruction or the target notation cannot express something, which \
is reported on stderr, never silently mangled.")]
    Convert(ConvertArgs),

    /// Create a save file holding a game: state (or an MVU character card), schema, scripts folder,
    /// profile and history.
    #[command(after_help = "Examples:\n  \
statecraft new game.save --state state.json --schema schema.json --scripts scripts/\n  \
statecraft new game.save --card card.png --macro user=Alex        an MVU card, under the mvu profile\n  \
statecraft new game.save --card card.json --profile mvu-zod --schema schema.json\n\n\
A card (PNG or JSON, a world book or InitVar text) gives the initial state and MVU's automatic schema; \
its game follows the mvu profile unless --profile says otherwise, and the save keeps the profile.")]
    New(NewArgs),

    /// Undo the current step of a save (back to its parent), or every step after a label on the current
    /// line.
    #[command(
        after_help = "Examples:\n  statecraft undo --save game.save\n  statecraft undo --save game.save --to msg-41\n\n\
--to only goes back along the current line (the current step and its ancestors); to go to a step on \
another branch, use checkout."
    )]
    Undo(UndoArgs),

    /// Redo: go down to the child of the current step that was current most recently.
    #[command(after_help = "Example:\n  statecraft redo --save game.save")]
    Redo(RedoArgs),

    /// Make any step of a save's history current (a swipe, an earlier message), and print its state.
    #[command(after_help = "Examples:\n  \
statecraft checkout --save game.save msg-42/s1      back to the first swipe of msg-42\n  \
statecraft checkout --save game.save --step 17      by id, as `log` prints it\n  \
statecraft checkout --save game.save --step 0       the root: the state before every step\n\n\
Exit 1, with nothing changed, when no retained step has the label or id.")]
    Checkout(CheckoutArgs),

    /// Print a save's state (now, or at any step without moving), or its history, as JSON.
    #[command(after_help = "Examples:\n  \
statecraft show --save game.save\n  \
statecraft show --save game.save --at msg-42/s2\n  \
statecraft show --save game.save --history")]
    Show(ShowArgs),

    /// Print a save's history tree: every step with its id, label, parent and change count, and the
    /// current one.
    #[command(after_help = "Examples:\n  \
statecraft log --save game.save                     JSON: {\"current\", \"next_id\", \"steps\": [...]}\n  \
statecraft log --save game.save --format human      the tree drawn, the current step marked\n\n\
The output is JSON unless --format human is given.")]
    Log(LogArgs),

    /// Run a scripted scenario: a state, optional schema and scripts, and numbered model replies.
    #[command(after_help = "Examples:\n  \
statecraft play examples/fantasy\n  \
statecraft play --quiet examples/rules\n\n\
A scenario folder holds state.json, optionally schema.json and scripts/*.lua, and turns/01.txt, \
turns/02.txt, ... with optional turns/NN.expect.json (see examples/README.md). Exit 1 when an \
expectation fails.")]
    Play(PlayArgs),

    /// Print the rules text and state payload to put in a model's system prompt.
    #[command(after_help = "Examples:\n  \
statecraft prompt --state state.json\n  \
statecraft prompt --state state.json --schema schema.json --lang zh\n  \
statecraft prompt --save game.save --budget 400 --view compact --message \"Mira waves.\"\n  \
statecraft prompt --save game.save --pass --reply reply.txt      the rules of a separate update pass\n  \
statecraft prompt --state state.json --state-only --budget 300   the state alone\n\n\
Examples in the rules use the state's real paths; subtrees whose schema says \
\"x-statecraft-visible\": false are left out. With --budget the state view keeps within that many \
tokens (docs/state-view.md): always-shown subtrees first, then the last steps' changes (--save), then \
what the messages mention, then the rest by depth; what does not fit is named with its size.")]
    Prompt(crate::prompt::PromptArgs),

    /// Evaluate conditions on a state (docs/state-view.md): one line each, `true: …` or `false: …`.
    #[command(after_help = "Examples:\n  \
statecraft evaluate --state state.json --condition \"player.hp < 10\"\n  \
statecraft evaluate --save game.save --at m3 --condition \"mood in ['calm', 'glad']\" --condition \"/bag/0 exists\"\n\n\
Exit 0 when every condition could be read, 2 when one could not (its line says what, at which \
bytes). --format json prints {\"results\": [{\"holds\"} | {\"error\": {\"code\", \"message\", \
\"start\", \"end\"}}]}.")]
    Evaluate(crate::prompt::EvaluateArgs),

    /// Print a JSON Schema (or a GBNF grammar) for one instruction batch, tailored to a state schema.
    #[command(after_help = "Examples:\n  \
statecraft schema --schema schema.json\n  \
statecraft schema --schema schema.json --gbnf > batch.gbnf")]
    Schema(crate::prompt::SchemaArgs),

    /// Check a model reply without applying it and print the correction message for the model.
    #[command(after_help = "Examples:\n  \
statecraft feedback --state state.json reply.txt\n  \
statecraft feedback --state state.json --schema schema.json --format json -\n\n\
Exit 0 when there is nothing to correct, 1 otherwise; the state file is never written.")]
    Feedback(crate::prompt::FeedbackArgs),

    /// Serve the HTTP API (docs/http.md) to front ends: games on SQLite (default) or PostgreSQL.
    #[command(after_help = "Examples:\n  \
statecraft serve                                          127.0.0.1:8765, games in ./statecraft.db\n  \
statecraft serve --listen 127.0.0.1:0                     a free port, printed on stdout\n  \
statecraft serve --allow-origin http://localhost:8000     let a SillyTavern page call it\n  \
statecraft serve --db postgres://app@db.internal/games --listen 0.0.0.0:8765 --token \"$TOKEN\"\n\n\
Prints `listening on http://ADDR` once it accepts requests. Any address but loopback needs --token \
(or STATECRAFT_TOKEN); then every request needs `Authorization: Bearer TOKEN`. SIGINT or SIGTERM \
stop it after the requests in flight are answered. The API is described in docs/http.md.")]
    Serve(crate::serve::ServeArgs),

    /// Read a character card (PNG or JSON), a world book or InitVar text: the initial state and MVU's
    /// automatic schema built from its [InitVar] entries, as JSON. `card update` gives a game a new
    /// version of its card.
    #[command(
        args_conflicts_with_subcommands = true,
        after_help = "Examples:\n  \
statecraft card hero.png\n  \
statecraft card card.json --macro user=Alex\n  \
statecraft card initvar.yaml\n  \
statecraft card update --save game.save hero-v2.png\n\n\
Prints {\"state\", \"schema\", \"profile\", \"entries\", \"fingerprint\"}. Every world book entry whose \
name or comment contains [InitVar] is read as YAML or JSON and merged in the book's order, as MVU does; \
MVU's markers ($meta, $__META_EXTENSIBLE__$) leave the state and become the schema. A card that carries \
statecraft's settings (data.extensions.statecraft with a state) gives that state, with its \"json_schema\", \
\"scripts\" and profile, instead. Exit 2, naming the entry and the line, when the card cannot be read or \
has no InitVar entry."
    )]
    Card(CardArgs),

    /// Sync a chat path onto a save: reuse the steps its replies have, apply the rest, end on the last.
    #[command(after_help = "Examples:\n  \
statecraft sync --save game.save chat.json\n  \
statecraft sync --save game.save --no-move chat.json   the state a regenerated reply builds on\n\n\
The path is {\"replies\": [{\"text\": \"...\"} | {\"sha256\": \"...\"}, ...]}, the model's replies as shown, \
oldest first (the body of POST /v1/games/{id}/sync). Prints {\"state\", \"step\", \"current\", \"applied\", \
\"reused\"}, exit 0 once on disk. Exit 1, with nothing changed, when a reply given by key alone names \
no step (need_text: send its text) or the path cannot be walked.")]
    Sync(SyncArgs),

    /// Turn a SillyTavern chat file into a save: every reply and every swipe a step, and where the
    /// chat carries MVU's variables, every step whose state differs from MVU's reported.
    #[command(
        name = "import-chat",
        after_help = "Examples:\n  \
statecraft import-chat chat.jsonl --save game.save\n  \
statecraft import-chat chat.jsonl --save game.save --card hero.png --format json\n\n\
The initial state is the card's ([InitVar] entries) or, without --card, the first reply's stored MVU \
variables (variables[swipe_id].stat_data). The shown swipes make the current line. Exit 0 once the \
save is on disk, differences from MVU or not; the report lists them (JSON with --format json)."
    )]
    ImportChat(ImportChatArgs),

    /// Grade a model reply like a structured-output benchmark, as JSON.
    #[command(after_help = "Example:\n  \
statecraft grade --state state.json --schema schema.json --expect expect.json reply.txt\n\n\
EXPECT.json maps JSON Pointers to expected values: {\"/player/hp\": 25}. The output is JSON unless \
--format human is given, which prints a summary.")]
    Grade(crate::prompt::GradeArgs),
}

/// `statecraft apply`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["state", "save"])))]
pub(crate) struct ApplyArgs {
    /// The state file (JSON) to apply to.
    #[arg(long, value_name = "STATE.json")]
    pub(crate) state: Option<PathBuf>,

    /// The save file to apply to durably.
    #[arg(long, value_name = "GAME", conflicts_with_all = ["schema", "scripts", "in_place"])]
    pub(crate) save: Option<PathBuf>,

    /// A JSON Schema the new state must satisfy (with --state).
    #[arg(long, value_name = "SCHEMA.json")]
    pub(crate) schema: Option<PathBuf>,

    /// A folder of Lua scripts whose handlers serve `callback` instructions (with --state).
    #[arg(long, value_name = "DIR")]
    pub(crate) scripts: Option<PathBuf>,

    /// A label for the history step (a chat message or swipe id), with --save (a state file keeps no
    /// history to label). Labels are unique: a label in use moves to the new step.
    #[arg(long, value_name = "L", conflicts_with = "state")]
    pub(crate) label: Option<String>,

    /// Commit on the step with this label instead of the current one (a swipe: the step before the
    /// regenerated message; an edit: the step before the edited one). The new step becomes current.
    #[arg(
        long,
        value_name = "LABEL",
        requires = "save",
        conflicts_with = "at_step"
    )]
    pub(crate) at: Option<String>,

    /// Commit on the step with this id (0: the root, the state before every step).
    #[arg(long, value_name = "ID", requires = "save")]
    pub(crate) at_step: Option<u64>,

    /// Write the new state back to STATE.json atomically instead of printing it.
    #[arg(long, requires = "state")]
    pub(crate) in_place: bool,

    /// A SillyTavern macro for MVU text: `--macro user=Alex` replaces `<user>` and `{{user}}`.
    /// Repeatable. With --save, for this reply only, over the macros the game keeps.
    #[arg(long = "macro", value_name = "NAME=VALUE", value_parser = parse_macro)]
    pub(crate) macros: Vec<(String, String)>,

    /// What to do with MVU text that MVU itself would not run (no `;` right after `)`, a command cut
    /// off by the end of the text, the wrong number of arguments): `skip` it with a warning and take
    /// the rest, as MVU does, or `reject` the whole reply.
    #[arg(long, value_enum, value_name = "POLICY", default_value_t = UnrunnableMvu::Skip)]
    pub(crate) mvu_unrunnable: UnrunnableMvu,

    /// What to do when the new state violates the schema: `reject` the batch, or `repair` what the
    /// schema says how to mend (strings coerced to the type asked for, numbers clamped to
    /// minimum/maximum, missing required members given their default, enum members matched up to
    /// case) and reject only what is left. Each repair is reported as a warning. Default: `reject`,
    /// or `repair` under `--profile mvu-zod`.
    #[arg(long, value_enum, value_name = "POLICY")]
    pub(crate) schema_violation: Option<SchemaViolationArg>,

    /// Whose rules the reply follows (with --state; a save keeps the profile it was made with):
    /// `strict` (all or nothing), `mvu` (MagVarUpdate's: `[value, "description"]` pairs, `_.set` on a
    /// missing path skipped, commands applied one by one, a refused one skipped with a warning) or
    /// `mvu-zod` (as `mvu`, the schema repairing what it can). See docs/mvu.md.
    #[arg(long, value_enum, value_name = "PROFILE", default_value_t = ProfileArg::Strict, conflicts_with = "save")]
    pub(crate) profile: ProfileArg,

    /// The seed for scripts' `ctx.random` (with --state; a save keeps the seed it was created with).
    /// The same seed and the same reply draw the same numbers.
    #[arg(long, value_name = "N", default_value_t = 0, conflicts_with = "save")]
    pub(crate) seed: u64,

    /// The model reply or JSON batch; `-` or nothing reads stdin.
    #[arg(value_name = "INPUT")]
    pub(crate) input: Option<PathBuf>,
}

/// `statecraft extract`.
#[derive(Debug, Args)]
pub(crate) struct ExtractArgs {
    /// A SillyTavern macro for MVU text: `--macro user=Alex` replaces `<user>` and `{{user}}`. Repeatable.
    #[arg(long = "macro", value_name = "NAME=VALUE", value_parser = parse_macro)]
    pub(crate) macros: Vec<(String, String)>,

    /// What to do with MVU text that MVU itself would not run (no `;` right after `)`, a command cut
    /// off by the end of the text, the wrong number of arguments): `skip` it with a warning and take
    /// the rest, as MVU does, or `reject` the whole reply.
    #[arg(long, value_enum, value_name = "POLICY", default_value_t = UnrunnableMvu::Skip)]
    pub(crate) mvu_unrunnable: UnrunnableMvu,

    /// The model reply; `-` or nothing reads stdin.
    #[arg(value_name = "INPUT")]
    pub(crate) input: Option<PathBuf>,
}

/// A notation `convert` reads or writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Notation {
    /// MVU command text: `_.set('path', old, new);//reason`.
    Mvu,
    /// A JSON array of statecraft instructions.
    Json,
    /// An RFC 6902 JSON Patch document.
    Jsonpatch,
}

/// The policy for MVU text MVU would not run, as written on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum UnrunnableMvu {
    /// Skip it with a warning; the rest of the reply applies.
    Skip,
    /// Refuse the reply: nothing of it applies.
    Reject,
}

impl From<UnrunnableMvu> for statecraft_translators::mvu::Unrunnable {
    fn from(policy: UnrunnableMvu) -> Self {
        match policy {
            UnrunnableMvu::Skip => statecraft_translators::mvu::Unrunnable::Skip,
            UnrunnableMvu::Reject => statecraft_translators::mvu::Unrunnable::Reject,
        }
    }
}

/// The `schema_violation` policy, as written on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum SchemaViolationArg {
    /// The batch is rejected.
    Reject,
    /// Repairable violations are repaired; the rest rejects the batch.
    Repair,
}

impl From<SchemaViolationArg> for statecraft_engine::SchemaViolation {
    fn from(policy: SchemaViolationArg) -> Self {
        match policy {
            SchemaViolationArg::Reject => statecraft_engine::SchemaViolation::Reject,
            SchemaViolationArg::Repair => statecraft_engine::SchemaViolation::Repair,
        }
    }
}

/// A profile, as written on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ProfileArg {
    /// The engine's own rules: a batch is all or nothing.
    Strict,
    /// MagVarUpdate's rules, so that an MVU card runs unchanged.
    Mvu,
    /// MagVarUpdate's rules for zod cards: the schema repairs what it can.
    MvuZod,
}

impl From<ProfileArg> for statecraft_engine::Profile {
    fn from(profile: ProfileArg) -> Self {
        match profile {
            ProfileArg::Strict => statecraft_engine::Profile::Strict,
            ProfileArg::Mvu => statecraft_engine::Profile::Mvu,
            ProfileArg::MvuZod => statecraft_engine::Profile::MvuZod,
        }
    }
}

/// `statecraft card`.
#[derive(Debug, Args)]
pub(crate) struct CardArgs {
    /// A SillyTavern macro in the card's InitVar text: `--macro user=Alex` replaces `<user>` and
    /// `{{user}}`; `{{char}}` is the card's name unless given. Repeatable.
    #[arg(long = "macro", value_name = "NAME=VALUE", value_parser = parse_macro)]
    pub(crate) macros: Vec<(String, String)>,

    /// The card: a PNG or JSON character card, a world book export, or InitVar text; `-` reads stdin.
    #[arg(value_name = "FILE")]
    pub(crate) card: Option<PathBuf>,

    /// `update`: a new version of a game's card.
    #[command(subcommand)]
    pub(crate) action: Option<CardAction>,
}

/// What `statecraft card` does besides reading a card.
#[derive(Debug, Subcommand)]
pub(crate) enum CardAction {
    /// Give a game a new version of its card, as one step: keys the new card adds are added with
    /// their initial values, every value the game holds is kept, keys the card dropped are listed
    /// (and removed with --remove-dropped), and the new automatic schema applies from there on.
    #[command(after_help = "Examples:\n  \
statecraft card update --save game.save hero-v2.png\n  \
statecraft card update --save game.save hero-v2.png --dry-run       what would change\n  \
statecraft card update --save game.save hero-v2.png --remove-dropped\n\n\
Prints {\"changed\", \"committed\", \"step\", \"added\", \"dropped\", \"removed\", \"descriptions\", \
\"changes\", \"fingerprint\", \"previous\"}. The card is read with the macros the game keeps. A card whose \
fingerprint is the game's takes no step (\"changed\": false). Exit 0 once the step is on disk; exit 1, \
with nothing changed, when the game's JSON Schema refuses the new keys. Undo takes the update back.")]
    Update(CardUpdateArgs),
}

/// `statecraft card update`.
#[derive(Debug, Args)]
pub(crate) struct CardUpdateArgs {
    /// The save file.
    #[arg(long, value_name = "GAME")]
    pub(crate) save: PathBuf,

    /// Remove the keys the new card no longer has (by default they are only listed).
    #[arg(long)]
    pub(crate) remove_dropped: bool,

    /// Only say what would change; change nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,

    /// A label for the step (default `card update`).
    #[arg(long, value_name = "L")]
    pub(crate) label: Option<String>,

    /// A SillyTavern macro for the card's InitVar text, over the macros the game keeps. Repeatable.
    #[arg(long = "macro", value_name = "NAME=VALUE", value_parser = parse_macro)]
    pub(crate) macros: Vec<(String, String)>,

    /// The new version of the card: PNG or JSON, a world book, or InitVar text; `-` reads stdin.
    #[arg(value_name = "CARD")]
    pub(crate) card: Option<PathBuf>,
}

/// `statecraft sync`.
#[derive(Debug, Args)]
pub(crate) struct SyncArgs {
    /// The save file.
    #[arg(long, value_name = "GAME")]
    pub(crate) save: PathBuf,

    /// Only read the state at the end of the path; the current step stays where it is.
    #[arg(long)]
    pub(crate) no_move: bool,

    /// A SillyTavern macro in MVU command text: `--macro user=Alex`. Repeatable.
    #[arg(long = "macro", value_name = "NAME=VALUE", value_parser = parse_macro)]
    pub(crate) macros: Vec<(String, String)>,

    /// The chat path (JSON); `-` or nothing reads stdin.
    #[arg(value_name = "PATH.json")]
    pub(crate) input: Option<PathBuf>,
}

/// `statecraft import-chat`.
#[derive(Debug, Args)]
pub(crate) struct ImportChatArgs {
    /// The SillyTavern chat file (JSON Lines).
    #[arg(value_name = "CHAT.jsonl")]
    pub(crate) chat: PathBuf,

    /// The save file to create.
    #[arg(long, value_name = "GAME")]
    pub(crate) save: PathBuf,

    /// The character card whose statecraft settings or [InitVar] entries give the initial state (and
    /// MVU's automatic schema), as `new --card` reads it.
    #[arg(long, value_name = "FILE", conflicts_with = "state")]
    pub(crate) card: Option<PathBuf>,

    /// The initial state (JSON), as `new --state` takes it.
    #[arg(long, value_name = "STATE.json")]
    pub(crate) state: Option<PathBuf>,

    /// Whose rules the chat's replies follow: `strict`, `mvu` or `mvu-zod` (docs/mvu.md). Default:
    /// the card's (`mvu` for an [InitVar] card), else `mvu` (a SillyTavern chat with MVU variables
    /// is an MVU game). The save keeps it.
    #[arg(long, value_enum, value_name = "PROFILE")]
    pub(crate) profile: Option<ProfileArg>,

    /// A SillyTavern macro: `--macro user=Alex` (the chat's own user and character names are the
    /// defaults). Repeatable.
    #[arg(long = "macro", value_name = "NAME=VALUE", value_parser = parse_macro)]
    pub(crate) macros: Vec<(String, String)>,
}

/// `statecraft convert`.
#[derive(Debug, Args)]
pub(crate) struct ConvertArgs {
    /// What the input is written in.
    #[arg(long, value_enum)]
    pub(crate) from: Notation,

    /// What to write.
    #[arg(long, value_enum)]
    pub(crate) to: Notation,

    /// What to do with MVU text that MVU itself would not run (no `;` right after `)`, a command cut
    /// off by the end of the text, the wrong number of arguments): `skip` it with a warning and take
    /// the rest, as MVU does, or `reject` the whole reply.
    #[arg(long, value_enum, value_name = "POLICY", default_value_t = UnrunnableMvu::Skip)]
    pub(crate) mvu_unrunnable: UnrunnableMvu,

    /// The text to translate; `-` or nothing reads stdin.
    #[arg(value_name = "INPUT")]
    pub(crate) input: Option<PathBuf>,
}

/// `statecraft new`.
#[derive(Debug, Args)]
pub(crate) struct NewArgs {
    /// The save file to create.
    #[arg(value_name = "GAME")]
    pub(crate) game: PathBuf,

    /// The initial state (JSON).
    #[arg(
        long,
        value_name = "STATE.json",
        required_unless_present = "card",
        conflicts_with = "card"
    )]
    pub(crate) state: Option<PathBuf>,

    /// An MVU character card (PNG or JSON, a world book, or InitVar text) whose InitVar entries give
    /// the initial state and MVU's automatic schema.
    #[arg(long, value_name = "FILE")]
    pub(crate) card: Option<PathBuf>,

    /// A SillyTavern macro: `--macro user=Alex` replaces `<user>` and `{{user}}` in the card's
    /// InitVar text and, kept with the game, in every later reply's commands; `{{char}}` is the
    /// card's name unless given. Repeatable.
    #[arg(long = "macro", value_name = "NAME=VALUE", value_parser = parse_macro)]
    pub(crate) macros: Vec<(String, String)>,

    /// Whose rules the game's replies follow: `strict`, `mvu` or `mvu-zod` (docs/mvu.md). Default:
    /// `mvu` with --card, `strict` otherwise. The save keeps it.
    #[arg(long, value_enum, value_name = "PROFILE")]
    pub(crate) profile: Option<ProfileArg>,

    /// A JSON Schema every state of the game must satisfy.
    #[arg(long, value_name = "SCHEMA.json")]
    pub(crate) schema: Option<PathBuf>,

    /// The folder of Lua scripts the game uses.
    #[arg(long, value_name = "DIR")]
    pub(crate) scripts: Option<PathBuf>,

    /// The game's seed for scripts' `ctx.random`, kept in the save: the same seed and the same turns
    /// draw the same numbers.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub(crate) seed: u64,
}

/// `statecraft undo`.
#[derive(Debug, Args)]
pub(crate) struct UndoArgs {
    /// The save file.
    #[arg(long, value_name = "GAME")]
    pub(crate) save: PathBuf,

    /// Undo every step after the step with this label on the current line, instead of one step.
    #[arg(long, value_name = "LABEL")]
    pub(crate) to: Option<String>,
}

/// `statecraft checkout`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["label", "step"])))]
pub(crate) struct CheckoutArgs {
    /// The save file.
    #[arg(long, value_name = "GAME")]
    pub(crate) save: PathBuf,

    /// The label of the step to make current.
    #[arg(value_name = "LABEL")]
    pub(crate) label: Option<String>,

    /// The id of the step to make current, instead of a label (0: the root).
    #[arg(long, value_name = "ID")]
    pub(crate) step: Option<u64>,
}

/// `statecraft log`.
#[derive(Debug, Args)]
pub(crate) struct LogArgs {
    /// The save file.
    #[arg(long, value_name = "GAME")]
    pub(crate) save: PathBuf,
}

/// `statecraft redo`.
#[derive(Debug, Args)]
pub(crate) struct RedoArgs {
    /// The save file.
    #[arg(long, value_name = "GAME")]
    pub(crate) save: PathBuf,
}

/// `statecraft show`.
#[derive(Debug, Args)]
pub(crate) struct ShowArgs {
    /// The save file.
    #[arg(long, value_name = "GAME")]
    pub(crate) save: PathBuf,

    /// Print the state at the step with this label, without moving.
    #[arg(long, value_name = "LABEL", conflicts_with_all = ["at_step", "history"])]
    pub(crate) at: Option<String>,

    /// Print the state at the step with this id (0: the root), without moving.
    #[arg(long, value_name = "ID", conflicts_with = "history")]
    pub(crate) at_step: Option<u64>,

    /// Print the history (every step with its id, parent, label and change log) instead of the state.
    #[arg(long)]
    pub(crate) history: bool,
}

/// `statecraft play`.
#[derive(Debug, Args)]
pub(crate) struct PlayArgs {
    /// The scenario folder.
    #[arg(value_name = "DIR")]
    pub(crate) dir: PathBuf,

    /// Print only failed expectations and the summary.
    #[arg(long, short)]
    pub(crate) quiet: bool,
}

/// Reads `NAME=VALUE` for `--macro`.
fn parse_macro(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, value)) if !name.is_empty() => Ok((name.to_owned(), value.to_owned())),
        _ => Err(format!("expected NAME=VALUE, got `{text}`")),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_version_names_the_servers_api_version() {
        let api = format!("(HTTP API {})", statecraft_server::API_VERSION);
        assert!(
            super::VERSION.ends_with(&api),
            "{} for {api}",
            super::VERSION
        );
    }
}
