//! The step and time budget of one handler call, enforced through Luau's interrupt.
//!
//! Besides the call's own budget, the limiter stops a script at its batch's deadline (the host's time
//! for the whole request), which [`Limiter::set_deadline`] sets for every call of that batch: a batch
//! of many callbacks, each well within its own budget, stops when the batch's time is up.
//!
//! Luau calls the interrupt at every function call and loop back-edge, including inside pattern
//! matching, so each interrupt counts as one step. Once the budget is exceeded the limiter stays
//! tripped until the next call starts: every later interrupt raises the error again, so a script that
//! catches it with `pcall` or `xpcall` is stopped at its very next loop iteration or call, and the call
//! is reported as failed whatever the script returns. This module must not know about handlers or
//! values.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use mlua::{Lua, VmState};

/// How often (in interrupts) the clock is read: reading it at every interrupt would double the cost of
/// a tight loop, and 64 interrupts take well under a microsecond.
const CLOCK_EVERY: u64 = 64;

/// The budget of the call in progress, shared with the interrupt closure.
#[derive(Debug, Default)]
pub struct Limiter {
    steps: Cell<u64>,
    max_steps: Cell<u64>,
    max_time: Cell<Duration>,
    started: Cell<Option<Instant>>,
    deadline: Cell<Option<Instant>>,
    tripped: RefCell<Option<String>>,
}

impl Limiter {
    /// Installs the interrupt on `lua`. Until [`Limiter::start`] the budget is empty: code that runs
    /// before it is stopped at its first interrupt, so nothing runs unbounded by mistake.
    pub fn install(lua: &Lua) -> Rc<Limiter> {
        let limiter = Rc::new(Limiter::default());
        let shared = Rc::clone(&limiter);
        lua.set_interrupt(move |lua| shared.tick(lua));
        limiter
    }

    /// Starts a fresh budget.
    pub fn start(&self, max_steps: u64, max_time: Duration) {
        self.steps.set(0);
        self.max_steps.set(max_steps);
        self.max_time.set(max_time);
        self.started.set(Some(Instant::now()));
        self.tripped.replace(None);
    }

    /// The deadline of the batch the next calls belong to (`None`: none). Kept across [`Limiter::start`].
    pub fn set_deadline(&self, deadline: Option<Instant>) {
        self.deadline.set(deadline);
    }

    /// Why the budget was exceeded in this call, if it was.
    pub(crate) fn tripped(&self) -> Option<String> {
        self.tripped.borrow().clone()
    }

    /// Trips the limiter now: every later interrupt of this call raises `reason`.
    pub(crate) fn stop(&self, reason: String) {
        self.tripped.replace(Some(reason));
    }

    fn tick(&self, lua: &Lua) -> mlua::Result<VmState> {
        if let Some(reason) = self.tripped.borrow().as_ref() {
            return Err(mlua::Error::runtime(reason.clone()));
        }
        let steps = self.steps.get() + 1;
        self.steps.set(steps);
        let mut reason = None;
        if steps > self.max_steps.get() {
            reason = Some(format!(
                "the step limit of {} was exceeded",
                self.max_steps.get()
            ));
        } else if steps % CLOCK_EVERY == 0 {
            let now = Instant::now();
            if self
                .started
                .get()
                .is_some_and(|started| now.duration_since(started) > self.max_time.get())
            {
                reason = Some(format!(
                    "the time limit of {:?} was exceeded",
                    self.max_time.get()
                ));
            } else if self.deadline.get().is_some_and(|deadline| now >= deadline) {
                reason = Some("the batch's deadline passed".to_owned());
            }
        }
        match reason {
            None => Ok(VmState::Continue),
            Some(reason) => {
                // Level 0 is a library function when the interrupt fires inside pattern matching.
                let reason = match (0..4).find_map(|level| where_running(lua, level)) {
                    Some(place) => format!("{reason} at {place}"),
                    None => reason,
                };
                self.tripped.replace(Some(reason.clone()));
                Err(mlua::Error::runtime(reason))
            }
        }
    }
}

/// `file.lua:12` for the Lua function running `level` frames up, when it is script code.
pub(crate) fn where_running(lua: &Lua, level: usize) -> Option<String> {
    lua.inspect_stack(level, |debug| {
        let source = debug.source();
        let line = debug.current_line()?;
        let file = source.short_src?;
        (source.what != "C").then(|| format!("{file}:{line}"))
    })
    .flatten()
}
