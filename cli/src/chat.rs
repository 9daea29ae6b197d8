//! The chat commands of docs/cli.md: `sync` (a chat path onto a save) and `import-chat` (a
//! SillyTavern chat file into a new save, checked against MVU's stored variables).
//!
//! Both go through `Game::sync`, the engine's walk by content (docs/timeline.md, "Chats as the source
//! of truth"), with the extractor reading each reply. A SillyTavern chat file is JSON Lines: a
//! metadata line, then one message a line (`mes`, `is_user`, `is_system`, `swipes`, `swipe_id`,
//! `extra`, `variables`). A message is a reply when the user did not write it and it is no note of
//! the front end's own (a narrator or system message carries `extra.type`); a hidden reply
//! (`is_system` set by /hide) is still a reply. This module must not write the save itself.

use std::collections::BTreeMap;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use serde_json::{Value as Json, json};
use statecraft_engine::{
    ApplyOptions, Batch, ChatReply, ContentKey, Profile, StepId, StructureSchema, SyncError,
    SyncOptions, SyncReply, Synced, Value,
};
use statecraft_saves::{Durability, Game, NewGame, OpenOptions};
use statecraft_translators::mvu::MvuOptions;
use statecraft_translators::{ExtractOptions, ExtractReader};

use crate::args::{ImportChatArgs, SyncArgs};
use crate::render::Output;
use crate::saves::open;
use crate::{EXIT_REJECTED, files, scripting};

/// `statecraft sync --save GAME [--no-move] [PATH.json|-]`: the body of `POST /v1/games/{id}/sync`
/// (without `create`) from a file; on success the answer's JSON on stdout, exit 0 once on disk.
pub(crate) fn sync(args: &SyncArgs, out: &Output) -> Result<ExitCode> {
    let origin = files::origin(args.input.as_deref());
    let text = files::read_input(args.input.as_deref())?;
    let body: Json = serde_json::from_str(&text)
        .with_context(|| format!("the chat path {origin} is not valid JSON"))?;
    let Json::Object(mut body) = body else {
        bail!("the chat path {origin} is an object {{\"replies\": [...]}}");
    };
    let replies = match body.remove("replies") {
        Some(items @ Json::Array(_)) => ChatReply::deserialize_path(items)?
            .with_context(|| format!("the chat path {origin} has a bad reply"))?,
        _ => bail!(
            "the chat path {origin} needs `replies`, a list of {{\"text\"}} or {{\"sha256\"}}"
        ),
    };
    let move_to_end = match body.remove("move") {
        None => !args.no_move,
        Some(Json::Bool(flag)) => flag && !args.no_move,
        Some(other) => bail!("`move` is true or false, not {other}"),
    };
    let given: BTreeMap<String, String> = match body.remove("macros") {
        None => BTreeMap::new(),
        Some(value) => {
            serde_json::from_value(value).context("`macros` is an object of names to texts")?
        }
    };
    if let Some(name) = body.keys().next() {
        bail!("the chat path {origin} has an unknown member `{name}` (replies, move, macros)");
    }
    let options = OpenOptions::default().setup(|builder, scripts| match scripts {
        Some(folder) => {
            scripting::attach(builder, folder).map_err(|error| format!("{error:#}").into())
        }
        None => Ok(builder),
    });
    let mut game = open(&args.save, options, out)?;
    // The macros the game keeps, the path's over them, and the command line's over both.
    let mut macros = game.macros().clone();
    macros.extend(given);
    macros.extend(args.macros.iter().cloned());
    let path: Vec<SyncReply<'_>> = replies.iter().map(ChatReply::as_sync).collect();
    let mut reader = reader(&game, macros);
    let sync_options = SyncOptions {
        move_to_end,
        ..SyncOptions::default()
    };
    match game.sync(&path, &sync_options, &mut reader)? {
        Ok(synced) => {
            if let Some(errors) = &synced.stopped {
                bail!(
                    "the sync stopped at reply {}: {}",
                    synced.reused + synced.applied.len(),
                    errors[0]
                );
            }
            outln!(
                "{}",
                serde_json::to_string_pretty(&answer(&game, &synced)?)?
            )?;
            Ok(ExitCode::SUCCESS)
        }
        Err(error) => {
            refused(out, &error);
            Ok(ExitCode::from(EXIT_REJECTED))
        }
    }
}

/// The extractor over a save's limits, with the caller's macros.
fn reader(game: &Game, macros: BTreeMap<String, String>) -> ExtractReader {
    ExtractReader::new(ExtractOptions {
        limits: game.store().limits().clone(),
        mvu: MvuOptions {
            macros,
            profile: game.store().profile(),
            strict_set: game
                .store()
                .structure()
                .is_some_and(StructureSchema::strict_set),
            ..MvuOptions::default()
        },
    })
}

/// What `sync` prints: as the HTTP answer.
fn answer(game: &Game, synced: &Synced) -> Result<Json> {
    let state = game.store().state_at(synced.end)?.value().to_json();
    let applied: Vec<Json> = synced
        .applied
        .iter()
        .map(|reply| {
            let mut entry = json!({
                "index": reply.index,
                "step": reply.step().get(),
                "committed": reply.refusal.is_none(),
            });
            if let Some(refusal) = &reply.refusal {
                entry["feedback"] = json!(refusal.as_ref());
            }
            entry
        })
        .collect();
    Ok(json!({
        "state": state,
        "step": synced.end.get(),
        "current": game.store().current_step().get(),
        "applied": applied,
        "reused": synced.reused,
    }))
}

fn refused(out: &Output, error: &SyncError) {
    if out.json() {
        let mut report = json!({"error": {"kind": error.code(), "message": error.to_string()}});
        if let SyncError::NeedText(need) = error {
            report["need"] = json!(need);
        }
        errln!("{report}");
    } else {
        errln!("error: {error}; nothing changed");
    }
}

/// One message of a SillyTavern chat file, as far as import reads it.
struct Message {
    /// Its index among the chat's messages (SillyTavern's message id).
    index: usize,
    /// Every swipe's text, and which one is shown.
    swipes: Vec<String>,
    shown: usize,
    /// MVU's stored state for each swipe, where the chat has it.
    stored: Vec<Option<Json>>,
}

/// `statecraft import-chat CHAT.jsonl --save GAME [--card FILE]`: every reply and every swipe becomes
/// a step, the shown swipes make the current line, and where the chat carries MVU's variables each
/// step whose state differs is reported. Exit 0 once the save is on disk, differences or not.
pub(crate) fn import_chat(args: &ImportChatArgs, out: &Output) -> Result<ExitCode> {
    let text = files::read_input(Some(&args.chat))?;
    let chat = args.chat.display().to_string();
    let (metadata, messages) = read_chat(&text, &chat)?;
    let mut macros: BTreeMap<String, String> = BTreeMap::new();
    for (name, member) in [("user", "user_name"), ("char", "character_name")] {
        if let Some(Json::String(value)) = metadata.get(member) {
            macros.insert(name.to_owned(), value.clone());
        }
    }
    macros.extend(args.macros.iter().cloned());
    let Some(first) = messages.first() else {
        bail!("{chat} holds no reply of the model's: nothing to import");
    };
    // Without a card or a state, the first reply's stored state is the root: its own changes are in
    // it already.
    let mut setup = NewGame::default()
        .metadata(
            "created_by",
            json!(concat!("statecraft ", env!("CARGO_PKG_VERSION"))),
        )
        .metadata("imported_from", json!(chat))
        .profile(args.profile.map_or(Profile::Mvu, Into::into));
    let mut written = None;
    let (state, adopted) = match (&args.card, &args.state) {
        (Some(card_file), _) => {
            let list: Vec<(String, String)> = macros.clone().into_iter().collect();
            let made = crate::card::load(card_file, &list)?;
            let given = crate::card::Given {
                profile: args.profile.is_some(),
                ..crate::card::Given::default()
            };
            (setup, written) = crate::card::setup(&made, setup, &args.save, &macros, given)?;
            (made.state, false)
        }
        (None, Some(state)) => {
            setup = setup.macros(macros.clone());
            (files::read_state(state)?.to_json(), false)
        }
        (None, None) => match &first.stored[first.shown] {
            Some(state) => {
                setup = setup.macros(macros.clone());
                (state.clone(), true)
            }
            None => bail!(
                "{chat}: its first reply carries no MVU variables (`variables[swipe_id].stat_data`), \
                 so the initial state is unknown; give it with --card or --state"
            ),
        },
    };
    // One fsync at the end instead of one per step: the save is new, and it is rewritten whole and
    // synced before the command says it is done.
    let made = Game::create_with(
        &args.save,
        Value::from(state),
        setup,
        OpenOptions::default()
            .durability(Durability::Unsynced)
            .setup(|builder, scripts| match scripts {
                Some(folder) => {
                    scripting::attach(builder, folder).map_err(|error| format!("{error:#}").into())
                }
                None => Ok(builder),
            }),
    );
    if let (Err(_), Some(folder)) = (&made, &written) {
        let _ = std::fs::remove_dir_all(folder);
    }
    let mut game = made?;
    let macros = game.macros().clone();
    let mut reader = reader(&game, macros);
    let mut line: Vec<ContentKey> = Vec::new();
    let mut mismatches = Vec::new();
    let mut skipped = Vec::new();
    let mut steps = 0usize;
    for (position, message) in messages.iter().enumerate() {
        let order = (0..message.swipes.len())
            .filter(|&swipe| swipe != message.shown)
            .chain([message.shown]);
        for swipe in order {
            let text = &message.swipes[swipe];
            let key = ContentKey::of_text(text);
            let step = if position == 0 && adopted {
                if swipe != message.shown {
                    skipped.push(json!({"message": message.index, "swipe": swipe}));
                    continue;
                }
                adopt(&mut game, key)?
            } else {
                let mut path: Vec<SyncReply<'_>> =
                    line.iter().copied().map(SyncReply::Key).collect();
                path.push(SyncReply::Text(text));
                let options = SyncOptions {
                    move_to_end: false,
                    ..SyncOptions::default()
                };
                let synced = game
                    .sync(&path, &options, &mut reader)?
                    .with_context(|| format!("message {}, swipe {swipe}", message.index))?;
                if let Some(errors) = &synced.stopped {
                    bail!("message {}, swipe {swipe}: {}", message.index, errors[0]);
                }
                synced.end
            };
            steps += 1;
            if let Some(stored) = &message.stored[swipe] {
                let ours = game.store().state_at(step)?.value().to_json();
                let mut differences = Vec::new();
                differ(&mut Vec::new(), &ours, stored, &mut differences);
                if !differences.is_empty() {
                    mismatches.push(json!({
                        "message": message.index,
                        "swipe": swipe,
                        "step": step.get(),
                        "differences": differences,
                    }));
                }
            }
        }
        line.push(ContentKey::of_text(&message.swipes[message.shown]));
    }
    // The shown path, made current.
    let path: Vec<SyncReply<'_>> = line.iter().copied().map(SyncReply::Key).collect();
    let synced = game
        .sync(&path, &SyncOptions::default(), &mut reader)?
        .context("the shown path")?;
    game.compact()?;
    drop(game);
    // The unsynced writes are whole on disk only once synced: reopen with the default durability and
    // compact, which writes the file anew and fsyncs it and its folder.
    Game::open(&args.save)?.compact()?;
    let report = json!({
        "save": args.save.display().to_string(),
        "replies": messages.len(),
        "steps": steps,
        "current": synced.end.get(),
        "skipped_swipes": skipped,
        "mismatches": mismatches,
    });
    if out.json() {
        outln!("{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        print_import(&report)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// An import's report for people: what was made, the greetings skipped, and each difference from
/// MVU's stored state, a path a line.
fn print_import(report: &Json) -> Result<()> {
    outln!(
        "imported {} replies as {} steps into {}",
        report["replies"],
        report["steps"],
        report["save"].as_str().unwrap_or_default()
    )?;
    let list = |name: &str| report[name].as_array().cloned().unwrap_or_default();
    for skip in list("skipped_swipes") {
        outln!(
            "skipped: message {} swipe {} (another greeting: with no --card, the root is the shown one's stored state)",
            skip["message"],
            skip["swipe"]
        )?;
    }
    let mismatches = list("mismatches");
    for mismatch in &mismatches {
        outln!(
            "differs from MVU: message {} swipe {} (step {}):",
            mismatch["message"],
            mismatch["swipe"],
            mismatch["step"]
        )?;
        for difference in mismatch["differences"].as_array().into_iter().flatten() {
            outln!(
                "  {}: statecraft {} / MVU {}",
                difference["path"],
                difference.get("statecraft").unwrap_or(&json!("(absent)")),
                difference.get("mvu").unwrap_or(&json!("(absent)"))
            )?;
        }
    }
    if mismatches.is_empty() {
        outln!("every step with MVU variables holds MVU's state")?;
    }
    Ok(())
}

/// Records the first reply as a keyed step that changes nothing: its changes are in the root already.
fn adopt(game: &mut Game, key: ContentKey) -> Result<StepId> {
    let options = ApplyOptions {
        at: Some(StepId::ROOT.into()),
        key: Some(key),
        ..ApplyOptions::default()
    };
    let commit = game
        .apply_with(&Batch::default(), &options)?
        .committed()
        .context("an empty batch is always committed")?;
    Ok(commit.step.unwrap_or(StepId::ROOT))
}

/// Reads a chat file: its metadata line and its replies.
fn read_chat(text: &str, chat: &str) -> Result<(serde_json::Map<String, Json>, Vec<Message>)> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty());
    let Some((_, header)) = lines.next() else {
        bail!("{chat} is empty: a SillyTavern chat file starts with a metadata line");
    };
    let metadata = match serde_json::from_str(header) {
        Ok(Json::Object(metadata)) => metadata,
        _ => bail!("{chat}, line 1: not a SillyTavern chat's metadata (a JSON object)"),
    };
    let mut messages = Vec::new();
    for (index, (number, line)) in lines.enumerate() {
        let at = |problem: &str| format!("{chat}, line {}: {problem}", number + 1);
        let message: Json = serde_json::from_str(line).with_context(|| at("not JSON"))?;
        let Json::Object(message) = message else {
            bail!(at("a message is a JSON object"));
        };
        let flag = |name: &str| message.get(name).and_then(Json::as_bool).unwrap_or(false);
        let note = message
            .get("extra")
            .and_then(|extra| extra.get("type"))
            .is_some_and(|kind| kind.is_string());
        if flag("is_user") || note {
            continue;
        }
        let Some(Json::String(shown_text)) = message.get("mes") else {
            bail!(at("a message needs `mes`, its text"));
        };
        let mut swipes: Vec<String> = match message.get("swipes") {
            None | Some(Json::Null) => vec![shown_text.clone()],
            Some(Json::Array(items)) => items
                .iter()
                .map(|item| item.as_str().map(str::to_owned))
                .collect::<Option<_>>()
                .with_context(|| at("`swipes` holds texts"))?,
            Some(_) => bail!(at("`swipes` is a list of texts")),
        };
        if swipes.is_empty() {
            swipes.push(shown_text.clone());
        }
        let shown = match message.get("swipe_id") {
            None | Some(Json::Null) => 0,
            Some(id) => id
                .as_u64()
                .and_then(|id| usize::try_from(id).ok())
                .filter(|&id| id < swipes.len())
                .with_context(|| {
                    at(&format!(
                        "`swipe_id` {id} names no swipe of {}",
                        swipes.len()
                    ))
                })?,
        };
        // `mes` is what the chat shows; SillyTavern copies it into the swipe after a continue.
        swipes[shown].clone_from(shown_text);
        let stored = (0..swipes.len())
            .map(|swipe| {
                message
                    .get("variables")
                    .and_then(|variables| variables.get(swipe))
                    .and_then(|variables| variables.get("stat_data"))
                    .cloned()
            })
            .collect();
        messages.push(Message {
            index,
            swipes,
            shown,
            stored,
        });
    }
    Ok((metadata, messages))
}

/// The paths where two states differ, as `{"path", "statecraft"?, "mvu"?}` (an absent side is left
/// out), leaves only. Numbers compare by value (`1` and `1.0` agree).
fn differ(path: &mut Vec<Json>, ours: &Json, theirs: &Json, out: &mut Vec<Json>) {
    match (ours, theirs) {
        (Json::Object(a), Json::Object(b)) => {
            for (key, value) in a {
                path.push(json!(key));
                match b.get(key) {
                    Some(other) => differ(path, value, other, out),
                    None => out.push(json!({"path": path.clone(), "statecraft": value})),
                }
                path.pop();
            }
            for (key, value) in b {
                if !a.contains_key(key) {
                    path.push(json!(key));
                    out.push(json!({"path": path.clone(), "mvu": value}));
                    path.pop();
                }
            }
        }
        (Json::Array(a), Json::Array(b)) if a.len() == b.len() => {
            for (index, (x, y)) in a.iter().zip(b).enumerate() {
                path.push(json!(index));
                differ(path, x, y, out);
                path.pop();
            }
        }
        (Json::Number(a), Json::Number(b)) if a.as_f64() == b.as_f64() => {}
        _ if ours == theirs => {}
        _ => out.push(json!({"path": path.clone(), "statecraft": ours, "mvu": theirs})),
    }
}
