//! History: every committed batch is a step in a tree, the chat timeline.
//!
//! Every step has a parent: the step that was current when it was committed, or the root (the state
//! before every retained step). Committing after an undo starts a new branch beside the undone one, so a
//! regenerated reply (a swipe) is a sibling of the reply it replaces and switching back brings back
//! exactly its state. A step keeps only its change log, not a copy of the state: moving between two
//! steps replays the changes on the tree path between them (backwards up to their common ancestor,
//! forwards down to the target), so it costs what changed on that path, never the size of the state.
//! Some steps also keep a checkpoint, the state's persistent root as committed there (an O(1) clone
//! that shares every unchanged node): a step lying `checkpoint_every` steps below the nearest kept state
//! above it (a checkpoint or the root) takes one when a step is committed on it, so that reading any
//! step replays at most that many steps from the nearest kept state above it. Only steps with children
//! take one: a swipe that the chat did not go on from keeps nothing but its change log.
//!
//! Steps have ids that are never reused, and unique labels (a front end's message or swipe id; reusing
//! a label moves it to the new step). History is bounded by a step count and an estimate of retained
//! bytes: every step's change log and fixed cost, and for a step with a checkpoint, the map and vector
//! nodes the checkpoint keeps alive (`retained.rs`). Trimming drops the steps visited least recently
//! first, one branch tip at a time, and never the current step or its ancestors while anything else
//! can go; only then does it drop the oldest ancestors, whose state becomes the new root. Every trimmed
//! step is reported to the caller. This module must not run instructions: it records change logs and
//! replays them.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::budget;
use crate::card::CardVersion;
use crate::change::{Change, ReplayError, replay_backward, replay_forward};
use crate::retained;
use crate::sync::{CARD_UPDATE, ContentKey};
use crate::value::Value;

/// A step's id: a number that is never reused, so an id a host kept can only ever name that step. The
/// root, the state before every retained step, is [`StepId::ROOT`] (0); committed steps count from 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct StepId(u64);

impl StepId {
    /// The root: the state before every retained step (the initial state until trimming moves it).
    pub const ROOT: StepId = StepId(0);

    /// The id with this number (as printed and saved).
    pub const fn new(number: u64) -> StepId {
        StepId(number)
    }

    /// Its number.
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for StepId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A step named by its id or by its label.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum StepRef {
    /// By id; [`StepId::ROOT`] is the root.
    Id(StepId),
    /// By label.
    Label(String),
}

impl From<StepId> for StepRef {
    fn from(id: StepId) -> StepRef {
        StepRef::Id(id)
    }
}

impl From<&str> for StepRef {
    fn from(label: &str) -> StepRef {
        StepRef::Label(label.to_owned())
    }
}

impl From<String> for StepRef {
    fn from(label: String) -> StepRef {
        StepRef::Label(label)
    }
}

impl From<&StepRef> for StepRef {
    fn from(step: &StepRef) -> StepRef {
        step.clone()
    }
}

impl fmt::Display for StepRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StepRef::Id(id) if *id == StepId::ROOT => f.write_str("the root"),
            StepRef::Id(id) => write!(f, "step {id}"),
            StepRef::Label(label) => write!(f, "the step labelled \"{label}\""),
        }
    }
}

/// A step that trimming removed, as reported to the host: its id and label no longer resolve, and its
/// state can no longer be reached.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TrimmedStep {
    /// The id it had.
    pub id: StepId,
    /// The label it had.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

/// Why a timeline operation could not be done. Nothing changed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TimelineError {
    /// No retained step has this label (it never existed, moved to another step, or was trimmed).
    #[error("no step is labelled \"{0}\"")]
    UnknownLabel(String),
    /// No retained step has this id (it never existed or was trimmed).
    #[error("no step {0} in the history")]
    UnknownStep(StepId),
    /// A step's change log does not replay: only possible with a history rebuilt from a damaged save.
    #[error(transparent)]
    Replay(#[from] ReplayError),
    /// A step rebuilt from a save reuses an id, or comes after a higher one: ids only ever grow.
    #[error("step {id} cannot be recorded: ids only grow, and the next free id is {next}")]
    StepIdTaken {
        /// The id asked for.
        id: StepId,
        /// The smallest id still free.
        next: StepId,
    },
    /// A step named for removal is neither a branch tip away from the current step nor the only child of
    /// the root, the two kinds of step trimming removes.
    #[error(
        "step {0} cannot be forgotten: it is not a branch tip away from the current step, nor the root's only child"
    )]
    CannotForget(StepId),
    /// A step rebuilt from a save takes a version of the card whose automatic schema is unusable.
    #[error("step {step} takes a card whose automatic schema is unusable: {problem}")]
    UnusableCard {
        /// The step.
        step: StepId,
        /// Why the schema is unusable.
        problem: String,
    },
}

impl TimelineError {
    /// The stable code of this kind of error, as printed in JSON.
    pub fn code(&self) -> &'static str {
        match self {
            TimelineError::UnknownLabel(_) => "unknown_label",
            TimelineError::UnknownStep(_) => "unknown_step",
            TimelineError::Replay(_) => "replay_failed",
            TimelineError::StepIdTaken { .. } => "step_id_taken",
            TimelineError::CannotForget(_) => "cannot_forget",
            TimelineError::UnusableCard { .. } => "unusable_card",
        }
    }
}

/// Bounds on retained history.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HistoryLimits {
    /// Most steps kept, on every branch together. `0` turns history off: commits make no steps.
    pub max_steps: usize,
    /// Most bytes kept, estimated: every step's changes ([`Change::estimated_bytes`]) plus a fixed cost
    /// per step and its label, plus for every checkpoint the nodes it keeps alive (those that the writes since the
    /// kept state above it copied). The current step is kept even if it alone is larger.
    pub max_bytes: usize,
}

impl Default for HistoryLimits {
    /// 10,000 steps (a chat of 1,000 messages with a few swipes each keeps every swipe) and 64 MiB.
    fn default() -> HistoryLimits {
        HistoryLimits {
            max_steps: 10_000,
            max_bytes: 64 << 20,
        }
    }
}

impl HistoryLimits {
    /// Whether a history of `steps` steps and `bytes` estimated bytes passes a bound: trimming's one
    /// rule, which its look down the line follows too.
    fn passed_by(&self, steps: usize, bytes: usize) -> bool {
        steps > self.max_steps || bytes > self.max_bytes
    }
}

/// How many steps a read may replay from the nearest kept state unless the store is built with another
/// spacing.
pub(crate) const DEFAULT_CHECKPOINT_EVERY: u64 = 32;

/// The fixed cost counted for every step besides its changes: the step's own fields and its place in
/// the maps. A constant, not a `size_of`, so that the bound means the same in every build.
const STEP_BYTES: usize = 160;

/// The bytes counted for a step's content key: the key with the step and in the index of keys.
const KEY_BYTES: usize = 96;

/// What names a step besides its id: a label, and for a step made by sync its reply's key and, for
/// a refused reply, the refusal.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepMarks {
    /// Its label (unique among retained steps).
    pub label: Option<String>,
    /// The content key of the chat reply it was made from.
    pub key: Option<ContentKey>,
    /// Why that reply was refused (the step changes nothing): the feedback for the model.
    pub refusal: Option<Arc<str>>,
    /// The new version of the game's card this step takes (a card update): it holds from this step
    /// down. A sync walks through the latest card update made on a reply's step.
    pub card: Option<Arc<CardVersion>>,
}

/// One committed batch.
#[derive(Clone, Debug)]
pub(crate) struct Step {
    /// The step it was committed on ([`StepId::ROOT`] for the root).
    pub(crate) parent: StepId,
    /// The steps committed on it, oldest first.
    pub(crate) children: Vec<StepId>,
    /// Its label, unique among retained steps.
    pub(crate) label: Option<String>,
    /// The chat reply it was made from, when a sync made it (`sync.rs`): its content key.
    pub(crate) key: Option<ContentKey>,
    /// Why the reply was refused, when a sync made this step from a refused reply (it changes nothing):
    /// the feedback text for the model.
    pub(crate) refusal: Option<Arc<str>>,
    /// The primitive changes, in the order they happened.
    pub(crate) changes: Arc<[Change]>,
    /// The version of the card this step was committed under: its own when it is a card update,
    /// else its parent's.
    pub(crate) card: Arc<CardVersion>,
    /// Whether this step took a new version of the card (a card update).
    pub(crate) card_update: bool,
    /// The estimate of the bytes this step keeps alive: its change log and fixed cost, and what its
    /// checkpoint keeps alive once it has one.
    bytes: usize,
    /// Steps from the original root; the root's own depth grows when trimming moves it.
    depth: u64,
    /// The clock when the step last left the current line (meaningless while it is on it).
    visited: u64,
    /// The estimated size of the state committed here (see `budget.rs`), so that a batch committed on
    /// any step starts from its size without walking the state.
    size: usize,
    /// The state as committed here, kept once a step is committed on this one while it lies
    /// `checkpoint_every` steps below the nearest kept state.
    checkpoint: Option<Value>,
    /// How many steps lie between this one and the nearest kept state above it, this one included (0
    /// with a checkpoint): what a read of this step replays at most. Trimming the root's child can only
    /// make the true distance shorter.
    replayed: u64,
}

/// What a step is found by among its parent's children: its reply's key, or for a card update the
/// key reserved for card updates (no reply hashes to it), so that the latest one made on a step is
/// found in O(1).
fn index_key(key: Option<ContentKey>, card_update: bool) -> Option<ContentKey> {
    if card_update { Some(CARD_UPDATE) } else { key }
}

/// The steps of a tree path between two steps.
#[derive(Debug, Default)]
struct Route {
    /// The steps to revert, from the start upwards, the common ancestor excluded.
    up: Vec<StepId>,
    /// The steps to replay, downwards to the target, the common ancestor excluded.
    down: Vec<StepId>,
}

impl Route {
    fn len(&self) -> usize {
        self.up.len() + self.down.len()
    }
}

/// The tree of steps, the current step, and what keeps them bounded.
#[derive(Debug)]
pub(crate) struct History {
    steps: BTreeMap<StepId, Step>,
    /// The children of the root, oldest first.
    root_children: Vec<StepId>,
    /// The state at the root.
    base: Value,
    /// The version of the card at the root.
    root_card: Arc<CardVersion>,
    /// Its estimated size, measured the first time it is needed.
    base_size: Option<usize>,
    root_depth: u64,
    current: StepId,
    labels: HashMap<String, StepId>,
    /// The child of a step (or of the root) made from a reply, by the reply's key: what sync walks.
    keyed: HashMap<(StepId, ContentKey), StepId>,
    /// The keys of the keyed steps trimming folded into the root, oldest first: the chat path that the
    /// root's state already holds.
    root_keys: Vec<ContentKey>,
    /// Every branch tip other than the current step, least recently visited first: what trimming takes.
    tips: BTreeSet<(u64, StepId)>,
    bytes: usize,
    /// Counts moves of the current step, to order visits.
    clock: u64,
    next_id: u64,
    limits: HistoryLimits,
    checkpoint_every: u64,
}

impl History {
    pub(crate) fn new(base: Value, limits: HistoryLimits, checkpoint_every: u64) -> History {
        History {
            steps: BTreeMap::new(),
            root_children: Vec::new(),
            base,
            root_card: Arc::default(),
            base_size: None,
            root_depth: 0,
            current: StepId::ROOT,
            labels: HashMap::new(),
            keyed: HashMap::new(),
            root_keys: Vec::new(),
            tips: BTreeSet::new(),
            bytes: 0,
            clock: 0,
            next_id: 1,
            limits,
            checkpoint_every: checkpoint_every.max(1),
        }
    }

    pub(crate) fn current(&self) -> StepId {
        self.current
    }

    pub(crate) fn limits(&self) -> HistoryLimits {
        self.limits
    }

    pub(crate) fn len(&self) -> usize {
        self.steps.len()
    }

    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    pub(crate) fn next_id(&self) -> StepId {
        StepId(self.next_id)
    }

    /// Uses up the next id without recording a step: with history off a commit is a step that is
    /// dropped at once, so its id is never given again and the next batch draws anew (`Random` is
    /// keyed by the id).
    pub(crate) fn skip_id(&mut self) {
        self.next_id += 1;
    }

    pub(crate) fn step(&self, id: StepId) -> Option<&Step> {
        self.steps.get(&id)
    }

    /// Whether `id` is the root or a retained step.
    pub(crate) fn contains(&self, id: StepId) -> bool {
        id == StepId::ROOT || self.steps.contains_key(&id)
    }

    /// The retained step a reference names. Time: O(log n).
    pub(crate) fn resolve(&self, step: &StepRef) -> Result<StepId, TimelineError> {
        match step {
            StepRef::Id(id) if self.contains(*id) => Ok(*id),
            StepRef::Id(id) => Err(TimelineError::UnknownStep(*id)),
            StepRef::Label(label) => self
                .labels
                .get(label)
                .copied()
                .ok_or_else(|| TimelineError::UnknownLabel(label.clone())),
        }
    }

    /// The version of the card at a retained step or the root. Time: O(log n).
    pub(crate) fn card_at(&self, id: StepId) -> &Arc<CardVersion> {
        self.steps
            .get(&id)
            .map_or(&self.root_card, |step| &step.card)
    }

    /// Sets the version of the card at the root, for a store being built.
    pub(crate) fn set_root_card(&mut self, card: Arc<CardVersion>) {
        self.root_card = card;
    }

    /// The latest card update committed on `id` (a retained step or the root), which a sync walks
    /// through. Time: O(1).
    pub(crate) fn card_update_on(&self, id: StepId) -> Option<StepId> {
        self.keyed.get(&(id, CARD_UPDATE)).copied()
    }

    fn parent(&self, id: StepId) -> Option<StepId> {
        self.steps.get(&id).map(|step| step.parent)
    }

    /// The estimated size of the state at a retained step or the root. Time: O(1), except the first
    /// time the root's size is needed: O(n) then.
    pub(crate) fn size_at(&mut self, id: StepId) -> usize {
        match self.steps.get(&id) {
            Some(step) => step.size,
            None => *self
                .base_size
                .get_or_insert_with(|| budget::state_bytes(&self.base)),
        }
    }

    fn depth(&self, id: StepId) -> u64 {
        self.steps
            .get(&id)
            .map_or(self.root_depth, |step| step.depth)
    }

    /// The children of a step (or of the root), oldest first.
    pub(crate) fn children(&self, id: StepId) -> &[StepId] {
        if id == StepId::ROOT {
            &self.root_children
        } else {
            self.steps.get(&id).map_or(&[], |step| &step.children)
        }
    }

    fn children_mut(&mut self, id: StepId) -> &mut Vec<StepId> {
        if id == StepId::ROOT {
            &mut self.root_children
        } else {
            &mut self
                .steps
                .get_mut(&id)
                .expect("a retained step's parent is retained")
                .children
        }
    }

    /// The steps from the root down to `id` (the root excluded, `id` included). Time: O(depth).
    pub(crate) fn path_from_root(&self, id: StepId) -> Vec<StepId> {
        let mut path = Vec::new();
        let mut at = id;
        while let Some(parent) = self.parent(at) {
            path.push(at);
            at = parent;
        }
        path.reverse();
        path
    }

    /// Whether `id` is the current step or one of its ancestors. Time: O(depth difference).
    pub(crate) fn on_current_line(&self, id: StepId) -> bool {
        let depth = self.depth(id);
        let mut at = self.current;
        while self.depth(at) > depth {
            at = self.parent(at).expect("only the root has no parent");
        }
        at == id
    }

    /// The tree path from `from` to `to`, or `None` once it would be longer than `limit` steps.
    /// Time: O(min(path length, limit)).
    fn route(&self, from: StepId, to: StepId, limit: usize) -> Option<Route> {
        let mut route = Route::default();
        let (mut a, mut b) = (from, to);
        while a != b {
            // Climb from the deeper side; at equal depth both climb, which meets at the common ancestor.
            let (depth_a, depth_b) = (self.depth(a), self.depth(b));
            if depth_a >= depth_b {
                route.up.push(a);
                a = self.parent(a).expect("only the root has no parent");
            }
            if depth_b >= depth_a {
                route.down.push(b);
                b = self.parent(b).expect("only the root has no parent");
            }
            if route.len() > limit {
                return None;
            }
        }
        route.down.reverse();
        Some(route)
    }

    /// The nearest kept state at or above `to` (a checkpoint or the root) and the steps below it down to
    /// `to`, or `None` if more than `limit` steps would have to be replayed. Time: O(checkpoint spacing).
    fn nearest_kept(&self, to: StepId, limit: usize) -> Option<(&Value, Vec<StepId>)> {
        let mut chain = Vec::new();
        let mut at = to;
        loop {
            let Some(step) = self.steps.get(&at) else {
                chain.reverse();
                return Some((&self.base, chain));
            };
            if let Some(kept) = &step.checkpoint {
                chain.reverse();
                return Some((kept, chain));
            }
            chain.push(at);
            if chain.len() > limit {
                return None;
            }
            at = step.parent;
        }
    }

    /// The state at `to`, given the live state at the current step: replayed on an O(1) clone of
    /// whichever start is closer, the live state or the nearest checkpoint above `to`.
    /// Time: O(changes replayed), at most `checkpoint_every` steps.
    pub(crate) fn state_at(&self, live: &Value, to: StepId) -> Result<Value, ReplayError> {
        let (kept, chain) = self
            .nearest_kept(to, usize::MAX)
            .expect("an unlimited walk always ends at a kept state");
        if !chain.is_empty()
            && let Some(route) = self.route(self.current, to, chain.len() - 1)
        {
            let mut root = live.clone();
            self.replay(&mut root, &route)?;
            return Ok(root);
        }
        let mut root = kept.clone();
        self.replay(
            &mut root,
            &Route {
                up: Vec::new(),
                down: chain,
            },
        )?;
        Ok(root)
    }

    /// Makes `to` current, the live state following it, and returns the length of the tree path crossed.
    /// All or nothing: if a change log does not replay, the live state and the current step stay.
    /// Time: O(path length) to walk the path, plus the changes replayed, which are those of the path or,
    /// when that spares at least two steps (or the path is longer than the checkpoint spacing), those
    /// between `to` and the nearest checkpoint above it.
    pub(crate) fn checkout(&mut self, live: &mut Value, to: StepId) -> Result<usize, ReplayError> {
        let route = self
            .route(self.current, to, usize::MAX)
            .expect("an unlimited route always exists");
        if route.len() == 0 {
            return Ok(0);
        }
        // The live state is replayed in place: the nodes it alone holds are written without a copy,
        // so undo and redo of recent steps copy nothing. A kept state shares every node with the
        // history, so replaying on it copies every path its chain writes, and leaves the live state
        // sharing the rest, which the next moves copy too. Within the checkpoint spacing it is taken
        // only when it spares at least two steps of replay (a checkpoint that is the target itself
        // spares one: undoing the first step from it would make every later redo copy its paths);
        // beyond, whenever it is shorter, so that no move replays more than the spacing.
        let kept = match route.len() {
            0 | 1 => None,
            len if len as u64 > self.checkpoint_every => self.nearest_kept(to, len - 1),
            len => self.nearest_kept(to, len - 2),
        };
        match kept {
            Some((kept, chain)) => {
                let mut root = kept.clone();
                self.replay(
                    &mut root,
                    &Route {
                        up: Vec::new(),
                        down: chain,
                    },
                )?;
                *live = root;
            }
            None => self.replay(live, &route)?,
        }
        self.arrive(to, &route);
        Ok(route.len())
    }

    /// Makes `to` current without touching any state: the caller already holds the state there.
    /// Time: O(path length).
    pub(crate) fn move_to(&mut self, to: StepId) {
        let route = self
            .route(self.current, to, usize::MAX)
            .expect("an unlimited route always exists");
        self.arrive(to, &route);
    }

    /// Records a move along `route`: the steps leaving the current line are stamped as visited now.
    fn arrive(&mut self, to: StepId, route: &Route) {
        if route.len() == 0 {
            return;
        }
        self.clock += 1;
        for id in &route.up {
            if let Some(step) = self.steps.get_mut(id) {
                step.visited = self.clock;
            }
        }
        let from = self.current;
        if from != StepId::ROOT && self.children(from).is_empty() {
            self.tips.insert((self.clock, from));
        }
        if let Some(step) = self.steps.get(&to)
            && step.children.is_empty()
        {
            self.tips.remove(&(step.visited, to));
        }
        self.current = to;
    }

    /// Replays a route on `root`, all or nothing.
    fn replay(&self, root: &mut Value, route: &Route) -> Result<(), ReplayError> {
        let moves = route
            .up
            .iter()
            .map(|id| (id, false))
            .chain(route.down.iter().map(|id| (id, true)));
        let mut done: Vec<(&StepId, bool)> = Vec::new();
        for (id, forward) in moves {
            let changes = &self.steps[id].changes;
            let replayed = if forward {
                replay_forward(root, changes)
            } else {
                replay_backward(root, changes)
            };
            if let Err(error) = replayed {
                // What was just replayed on this very root reverts without fail.
                for (id, forward) in done.into_iter().rev() {
                    let changes = &self.steps[id].changes;
                    let _ = if forward {
                        replay_backward(root, changes)
                    } else {
                        replay_forward(root, changes)
                    };
                }
                return Err(error);
            }
            done.push((id, forward));
        }
        Ok(())
    }

    /// The child of the current step that redo moves to: the one on the current line most recently.
    /// Time: O(children).
    pub(crate) fn redo_target(&self) -> Option<StepId> {
        self.children(self.current)
            .iter()
            .copied()
            .max_by_key(|id| (self.steps[id].visited, *id))
    }

    /// The step with this label. Time: O(1).
    pub(crate) fn find_label(&self, label: &str) -> Option<StepId> {
        self.labels.get(label).copied()
    }

    /// Whether a step committed on `id` now would make `id` keep its state as a checkpoint: then
    /// [`History::push`] needs that state. Time: O(log n).
    pub(crate) fn takes_checkpoint(&self, id: StepId) -> bool {
        self.steps
            .get(&id)
            .is_some_and(|step| step.replayed >= self.checkpoint_every)
    }

    /// Records a new step with id `id` as a child of the current step and makes it current;
    /// `parent_state` is the state at the current step (which the new step's changes were made on),
    /// needed only when the current step [takes a checkpoint](History::takes_checkpoint), and `size`
    /// the new step's estimated size. Reusing a label moves it: the step that had it is returned.
    /// Does not trim.
    /// Time: O(log n), plus, once every `checkpoint_every` steps down a line, estimating what the
    /// parent's new checkpoint keeps alive (the changes of those steps).
    pub(crate) fn push(
        &mut self,
        id: StepId,
        marks: StepMarks,
        changes: Arc<[Change]>,
        parent_state: Option<&Value>,
        size: usize,
    ) -> Option<StepId> {
        debug_assert!(id.0 >= self.next_id, "ids only grow");
        self.next_id = id.0 + 1;
        let parent = self.current;
        let depth = self.depth(parent) + 1;
        let replayed = self.keep_if_far(parent, parent_state) + 1;
        let StepMarks {
            label,
            key,
            refusal,
            card,
        } = marks;
        let card_update = card.is_some();
        let card = card.unwrap_or_else(|| Arc::clone(self.card_at(parent)));
        let moved_from = label.as_ref().and_then(|label| {
            let old = self.labels.insert(label.clone(), id)?;
            if let Some(step) = self.steps.get_mut(&old) {
                step.label = None;
            }
            Some(old)
        });
        // A label is kept twice, with its step and in the index of labels.
        let bytes = changes.iter().map(Change::estimated_bytes).sum::<usize>()
            + STEP_BYTES
            + label.as_ref().map_or(0, |label| 2 * label.len())
            + key.map_or(0, |_| KEY_BYTES)
            + refusal.as_ref().map_or(0, |refusal| refusal.len());
        if let Some(key) = index_key(key, card_update) {
            self.keyed.insert((parent, key), id);
        }
        self.steps.insert(
            id,
            Step {
                parent,
                children: Vec::new(),
                label,
                key,
                refusal,
                changes,
                card,
                card_update,
                bytes,
                depth,
                visited: self.clock,
                size,
                checkpoint: None,
                replayed,
            },
        );
        self.children_mut(parent).push(id);
        self.bytes += bytes;
        self.current = id;
        moved_from
    }

    /// Gives `id` a checkpoint (`state`, its state) if it has none and lies `checkpoint_every` steps
    /// below the nearest kept state, and counts what the checkpoint keeps alive: the nodes copied on the
    /// way from that kept state, by the changes of the steps between (`id` included) and by those of
    /// the steps beside them (the swipes of a chat): moving back from a step beside the line replays its
    /// changes backwards, which copies its paths again in the line's state. Returns the steps a read of
    /// `id` replays from then on (0 for the root).
    /// Without the state (a caller's mistake, which tests catch) the step keeps none, and the next
    /// step committed below it takes one instead.
    /// Time: O(1), or the changes of those steps and their siblings when the checkpoint is taken.
    fn keep_if_far(&mut self, id: StepId, state: Option<&Value>) -> u64 {
        let Some(step) = self.steps.get(&id) else {
            return 0;
        };
        if step.replayed < self.checkpoint_every {
            return step.replayed;
        }
        debug_assert!(state.is_some(), "a checkpoint needs the state");
        let Some(state) = state else {
            return step.replayed;
        };
        // The parents of the steps between the kept state and `id`: their children are those steps
        // and the steps beside them.
        let mut parents = Vec::new();
        let mut at = id;
        while let Some(step) = self.steps.get(&at) {
            if step.checkpoint.is_some() {
                break;
            }
            parents.push(step.parent);
            at = step.parent;
        }
        let logs: Vec<&[Change]> = parents
            .iter()
            .flat_map(|&parent| self.children(parent))
            .map(|child| &self.steps[child].changes[..])
            .collect();
        let kept = retained::copied_bytes(&logs, state);
        let step = self.steps.get_mut(&id).expect("checked above");
        step.checkpoint = Some(state.clone());
        step.replayed = 0;
        step.bytes += kept;
        self.bytes += kept;
        0
    }

    fn over_bounds(&self) -> bool {
        self.limits.passed_by(self.steps.len(), self.bytes)
    }

    /// Drops steps until both bounds hold: branch tips away from the current step, least recently
    /// visited first; then, when only the current line is left, its oldest steps (their state becomes
    /// the root). The current step always stays. Returns what was dropped, in order.
    /// Time: O(log n) per dropped step, plus replaying a dropped oldest step without a checkpoint
    /// unless the same trim drops a checkpoint below it.
    pub(crate) fn trim(&mut self) -> Vec<TrimmedStep> {
        let mut trimmed = Vec::new();
        // A checkpoint that this trim drops further down the line: the oldest steps above it go
        // without replaying their changes on the root's state, which the checkpoint then replaces.
        // (A checkpoint's bytes arrive all at once, so a bound on bytes drops a checkpoint spacing's
        // worth of steps at a time.)
        let mut replaced_by = None;
        // The changes of the steps dropped without a replay, in order: replayed at the end if trimming
        // stopped above that checkpoint (which `checkpoint_trimmed_from` rules out).
        let mut unreplayed: Vec<Arc<[Change]>> = Vec::new();
        while self.over_bounds() {
            let dropped = match self.tips.first() {
                Some(&(_, tip)) => self.forget_tip(tip),
                None => match self.root_children[..] {
                    [only] if only != self.current => {
                        if replaced_by.is_none() {
                            replaced_by = self.checkpoint_trimmed_from(only);
                        }
                        let replay = replaced_by.is_none();
                        if replaced_by == Some(only) {
                            replaced_by = None;
                            unreplayed.clear();
                        } else if !replay {
                            unreplayed.push(Arc::clone(&self.steps[&only].changes));
                        }
                        match self.forget_oldest(only, replay) {
                            Some(dropped) => dropped,
                            // Every retained step replayed on its parent's state when it was
                            // recorded, so this cannot happen; keeping the step is the safe answer
                            // if it ever does.
                            None => break,
                        }
                    }
                    _ => break,
                },
            };
            trimmed.push(dropped);
        }
        debug_assert!(
            unreplayed.is_empty(),
            "trimming stopped above its checkpoint"
        );
        for changes in unreplayed {
            // Each replayed on the state before it when it was committed.
            let _ = replay_forward(&mut self.base, &changes);
        }
        trimmed
    }

    /// The first step with a checkpoint on the line down from `oldest` (the root's only child, when
    /// no branch is left), if trimming will drop it: trimming drops the line's oldest steps one by
    /// one while a bound is passed, and never the current step. Time: O(checkpoint spacing × log n).
    fn checkpoint_trimmed_from(&self, oldest: StepId) -> Option<StepId> {
        let (mut steps, mut bytes) = (self.steps.len(), self.bytes);
        let mut at = oldest;
        loop {
            if at == self.current || !self.limits.passed_by(steps, bytes) {
                return None;
            }
            let step = self.steps.get(&at)?;
            if step.checkpoint.is_some() {
                return Some(at);
            }
            steps -= 1;
            bytes = bytes.saturating_sub(step.bytes);
            match step.children[..] {
                [next] => at = next,
                _ => return None,
            }
        }
    }

    /// Drops a branch tip other than the current step.
    fn forget_tip(&mut self, id: StepId) -> TrimmedStep {
        let step = self.steps.remove(&id).expect("a tip is retained");
        self.unkey(step.parent, &step, id);
        self.tips.remove(&(step.visited, id));
        self.children_mut(step.parent).retain(|&child| child != id);
        if let Some(parent) = self.steps.get(&step.parent)
            && parent.children.is_empty()
            && step.parent != self.current
        {
            self.tips.insert((parent.visited, step.parent));
        }
        self.dropped(id, step)
    }

    /// Drops the root's only child: its state becomes the root's, its children the root's. Without
    /// `replay`, the root's state is left as it is, for a checkpoint below to replace it before
    /// anything reads it.
    fn forget_oldest(&mut self, id: StepId, replay: bool) -> Option<TrimmedStep> {
        let step = &self.steps[&id];
        match &step.checkpoint {
            Some(kept) => self.base = kept.clone(),
            // In place, all or nothing: the base holds alone the nodes that the step's writes copied
            // when it was committed, so replaying them here copies almost nothing (on a clone of the
            // base, every write would copy its whole path).
            None if replay => replay_forward(&mut self.base, &step.changes).ok()?,
            None => {}
        }
        let step = self.steps.remove(&id).expect("checked above");
        self.unkey(StepId::ROOT, &step, id);
        self.root_keys.extend(step.key);
        self.root_card = Arc::clone(&step.card);
        self.base_size = Some(step.size);
        self.root_depth = step.depth;
        for &child_id in &step.children {
            if let Some(child) = self.steps.get_mut(&child_id) {
                child.parent = StepId::ROOT;
                if let Some(key) = index_key(child.key, child.card_update) {
                    self.keyed.remove(&(id, key));
                    self.keyed.insert((StepId::ROOT, key), child_id);
                }
            }
        }
        self.root_children.clone_from(&step.children);
        Some(self.dropped(id, step))
    }

    /// Takes a dropped step out of the index of keys, unless another step took its place there.
    fn unkey(&mut self, parent: StepId, step: &Step, id: StepId) {
        if let Some(key) = index_key(step.key, step.card_update)
            && self.keyed.get(&(parent, key)) == Some(&id)
        {
            self.keyed.remove(&(parent, key));
        }
    }

    /// The child of `parent` (a retained step or the root) made from the reply with this key.
    /// Time: O(1).
    pub(crate) fn child_by_key(&self, parent: StepId, key: ContentKey) -> Option<StepId> {
        self.keyed.get(&(parent, key)).copied()
    }

    /// The content key of a step: its own, or for the root the last one folded into it.
    pub(crate) fn key_of(&self, id: StepId) -> Option<ContentKey> {
        match self.steps.get(&id) {
            Some(step) => step.key,
            None => self.root_keys.last().copied(),
        }
    }

    /// The keys of the replies whose steps trimming folded into the root, oldest first.
    pub(crate) fn root_keys(&self) -> &[ContentKey] {
        &self.root_keys
    }

    /// Sets them, for a store rebuilt from a compacted save whose root already holds those replies.
    pub(crate) fn set_root_keys(&mut self, keys: Vec<ContentKey>) {
        self.root_keys = keys;
    }

    fn dropped(&mut self, id: StepId, step: Step) -> TrimmedStep {
        self.bytes -= step.bytes;
        if let Some(label) = &step.label {
            self.labels.remove(label);
        }
        TrimmedStep {
            id,
            label: step.label,
        }
    }

    /// Drops one step the way trimming does (a saved trim, replayed): a branch tip other than the
    /// current step, or the root's only child when it is not current. Time: O(log n).
    pub(crate) fn forget(&mut self, id: StepId) -> Result<TrimmedStep, TimelineError> {
        let Some(step) = self.steps.get(&id) else {
            return Err(TimelineError::UnknownStep(id));
        };
        if id == self.current {
            return Err(TimelineError::CannotForget(id));
        }
        if step.children.is_empty() {
            return Ok(self.forget_tip(id));
        }
        if self.root_children == [id] {
            return self.forget_oldest(id, true).ok_or_else(|| {
                TimelineError::Replay(ReplayError {
                    path: String::new(),
                    problem: format!("step {id} does not replay on the root"),
                })
            });
        }
        Err(TimelineError::CannotForget(id))
    }

    /// Forgets every step: the current state becomes the root. Used when history is turned off.
    pub(crate) fn clear(&mut self, live: &Value) -> Vec<TrimmedStep> {
        self.base_size = Some(self.size_at(self.current));
        self.root_card = Arc::clone(self.card_at(self.current));
        let steps = std::mem::take(&mut self.steps);
        self.root_children.clear();
        self.labels.clear();
        self.keyed.clear();
        self.root_keys.clear();
        self.tips.clear();
        self.bytes = 0;
        self.base = live.clone();
        self.root_depth = 0;
        self.current = StepId::ROOT;
        steps
            .into_iter()
            .map(|(id, step)| TrimmedStep {
                id,
                label: step.label,
            })
            .collect()
    }

    /// Keeps the root in step with the live state (of estimated `size`) while history is off and there
    /// are no steps.
    pub(crate) fn rebase(&mut self, live: &Value, size: usize) {
        debug_assert!(self.steps.is_empty());
        self.base = live.clone();
        self.base_size = Some(size);
    }

    pub(crate) fn set_limits(&mut self, limits: HistoryLimits, live: &Value) -> Vec<TrimmedStep> {
        self.limits = limits;
        if limits.max_steps == 0 {
            return self.clear(live);
        }
        self.trim()
    }

    /// Every retained step in id order (parents before children), with whether it is on the current
    /// line. Time: O(n + depth).
    pub(crate) fn iter(&self) -> impl Iterator<Item = (StepId, &Step, bool)> + '_ {
        let line: HashSet<StepId> = self.path_from_root(self.current).into_iter().collect();
        self.steps
            .iter()
            .map(move |(&id, step)| (id, step, line.contains(&id)))
    }

    /// The retained steps off the current line, least recently visited first. Time: O(n log n).
    pub(crate) fn recency(&self) -> Vec<StepId> {
        let line: HashSet<StepId> = self.path_from_root(self.current).into_iter().collect();
        let mut off: Vec<(u64, StepId)> = self
            .steps
            .iter()
            .filter(|(id, _)| !line.contains(id))
            .map(|(&id, step)| (step.visited, id))
            .collect();
        off.sort_unstable();
        off.into_iter().map(|(_, id)| id).collect()
    }

    /// Sets the visit order of the steps off the current line (least recent first) and the next free
    /// id, as saved by [`History::recency`] and [`History::next_id`]. Time: O(n log n).
    pub(crate) fn restore_recency(
        &mut self,
        recency: &[StepId],
        next_id: StepId,
    ) -> Result<(), TimelineError> {
        for id in recency {
            if !self.steps.contains_key(id) {
                return Err(TimelineError::UnknownStep(*id));
            }
        }
        for id in recency {
            self.clock += 1;
            if let Some(step) = self.steps.get_mut(id) {
                step.visited = self.clock;
            }
        }
        self.tips = self
            .steps
            .iter()
            .filter(|(id, step)| step.children.is_empty() && **id != self.current)
            .map(|(&id, step)| (step.visited, id))
            .collect();
        self.next_id = self.next_id.max(next_id.0);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::instruction::Op;
    use crate::path::{Path, Segment};

    fn set(n: i64) -> Arc<[Change]> {
        Arc::from(vec![Change {
            path: Path::from(vec![Segment::key("n")]),
            old: Some(Value::from(n - 1)),
            new: Some(Value::from(n)),
            reason: None,
            op: Op::Assign,
        }])
    }

    /// Commits `n` at `/n` as step `id` on the current step, the way the store does: `live` is the state
    /// at the current step and follows the commit.
    fn commit(history: &mut History, live: &mut Value, id: u64, n: i64) {
        let changes = set(n);
        let parent_state = live.clone();
        replay_forward(live, &changes).unwrap();
        let _ = history.push(
            StepId(id),
            StepMarks::default(),
            changes,
            Some(&parent_state),
            0,
        );
    }

    fn counted(history: &History) -> usize {
        history.steps.values().map(|step| step.bytes).sum()
    }

    fn plain_bytes() -> usize {
        set(1).iter().map(Change::estimated_bytes).sum::<usize>() + STEP_BYTES
    }

    #[test]
    fn a_step_far_from_a_kept_state_keeps_a_checkpoint_once_a_step_is_committed_on_it() {
        let mut live = Value::from(serde_json::json!({"n": 0}));
        let mut history = History::new(live.clone(), HistoryLimits::default(), 2);
        commit(&mut history, &mut live, 1, 1);
        commit(&mut history, &mut live, 2, 2);
        // Step 2 lies 2 steps below the root, but is a tip: nothing kept yet.
        assert!(history.steps[&StepId(2)].checkpoint.is_none());
        assert_eq!(history.bytes(), 2 * plain_bytes());
        // Three swipes on step 2: step 2 keeps its state, charged for the one node of `{"n": ..}` that
        // steps 1 and 2 copied; the swipes keep nothing.
        let at_2 = live.clone();
        for id in 3..=5 {
            history.move_to(StepId(2));
            live = at_2.clone();
            commit(&mut history, &mut live, id, 10 + id as i64);
        }
        let kept = retained::copied_bytes(
            &[
                &history.steps[&StepId(1)].changes,
                &history.steps[&StepId(2)].changes,
            ],
            &at_2,
        );
        assert!(kept > 0);
        assert_eq!(
            history.steps[&StepId(2)]
                .checkpoint
                .as_ref()
                .unwrap()
                .to_json(),
            at_2.to_json()
        );
        assert_eq!(history.bytes(), 5 * plain_bytes() + kept);
        assert_eq!(history.bytes(), counted(&history));
        for id in 3..=5 {
            assert!(history.steps[&StepId(id)].checkpoint.is_none());
            assert_eq!(history.steps[&StepId(id)].replayed, 1);
        }
        // Every step reads within the spacing.
        for id in 1..=5 {
            assert!(history.nearest_kept(StepId(id), 2).is_some(), "step {id}");
        }
    }

    #[test]
    fn the_byte_bound_counts_checkpoints_and_trims_no_more_than_it_needs() {
        let mut live = Value::from(serde_json::json!({"n": 0}));
        let mut history = History::new(live.clone(), HistoryLimits::default(), 1);
        // A line of 4 steps: every step with a child keeps a checkpoint.
        for id in 1..=4 {
            commit(&mut history, &mut live, id, id as i64);
        }
        let line = history.bytes();
        assert!(line > 4 * plain_bytes(), "the checkpoints are counted");
        // A branch of 2 steps from step 1, then back to the end of the line.
        let mut branch = history.state_at(&live, StepId(1)).unwrap();
        history.move_to(StepId(1));
        commit(&mut history, &mut branch, 5, 50);
        commit(&mut history, &mut branch, 6, 60);
        history.move_to(StepId(4));
        assert_eq!(history.bytes(), counted(&history));
        // A bound that the line alone fits: the branch goes, tip first, checkpoint and all.
        history.limits.max_bytes = line;
        let trimmed: Vec<StepId> = history.trim().into_iter().map(|t| t.id).collect();
        assert_eq!(trimmed, [StepId(6), StepId(5)]);
        assert_eq!(history.bytes(), line);
        assert_eq!(history.bytes(), counted(&history));
        // One byte less: only the oldest step goes, its checkpoint becoming the root.
        history.limits.max_bytes = line - 1;
        let trimmed: Vec<StepId> = history.trim().into_iter().map(|t| t.id).collect();
        assert_eq!(trimmed, [StepId(1)]);
        assert_eq!(history.bytes(), counted(&history));
        assert_eq!(
            history.state_at(&live, StepId::ROOT).unwrap().to_json(),
            serde_json::json!({"n": 1})
        );
        // Nothing left to drop but the current step: it stays, over the bound.
        history.limits.max_bytes = 0;
        let trimmed: Vec<StepId> = history.trim().into_iter().map(|t| t.id).collect();
        assert_eq!(trimmed, [StepId(2), StepId(3)]);
        assert_eq!(history.len(), 1);
        assert_eq!(history.bytes(), counted(&history));
        assert_eq!(
            history.state_at(&live, StepId(4)).unwrap().to_json(),
            serde_json::json!({"n": 4})
        );
    }

    #[test]
    fn routes_climb_to_the_common_ancestor_and_respect_their_limit() {
        let mut history = History::new(Value::Null, HistoryLimits::default(), 100);
        // 1 - 2 - 3 and 1 - 4: steps 3 and 4 meet at 1.
        for id in 1..=3 {
            let _ = history.push(
                StepId(id),
                StepMarks::default(),
                set(1),
                Some(&Value::Null),
                0,
            );
        }
        history.move_to(StepId(1));
        let _ = history.push(
            StepId(4),
            StepMarks::default(),
            set(1),
            Some(&Value::Null),
            0,
        );
        let route = history.route(StepId(3), StepId(4), usize::MAX).unwrap();
        assert_eq!(route.up, [StepId(3), StepId(2)]);
        assert_eq!(route.down, [StepId(4)]);
        assert!(history.route(StepId(3), StepId(4), 2).is_none());
        let route = history.route(StepId(4), StepId::ROOT, usize::MAX).unwrap();
        assert_eq!(route.up, [StepId(4), StepId(1)]);
        assert!(route.down.is_empty());
        assert_eq!(
            history.path_from_root(StepId(3)),
            [StepId(1), StepId(2), StepId(3)]
        );
    }
}
