// SillyTavern example: the chat's game state kept by `statecraft serve`, following swipes, deletions
// and edits.
//
// Load it as a UI extension module with `statecraft serve --allow-origin http://localhost:8000` (the
// address SillyTavern is served from) running beside SillyTavern. A Tavern Helper script runs in a
// sandboxed frame whose origin is `null`: allow that with `--allow-origin null`, and prefer a token then. Each chat is
// one game (created from `initialState` the first time). Each assistant message, swipe by swipe, is a
// step labelled `m{index}/s{swipe}`, committed on the step of the assistant message before it (its
// parent in the chat), so a regenerated reply is a sibling of the one it replaces and switching back
// restores exactly that swipe's state. A swipe to a reply already seen, or a deletion, checks out the
// step that is now the last one; an edit re-applies the message on its parent and the label moves to
// the new step. A reply whose instructions are refused still gets an (empty) step, so the mapping from
// messages to steps stays total, and the refusal's feedback text is kept for the next prompt. Before
// each generation the current state (and any feedback) goes into the prompt.
//
// `ChatTimeline` is the whole logic and is tested against a real server with a recorded sequence of
// chat events (test/sillytavern.test.js); `install` only wires it to SillyTavern's events.

import { Statecraft, StatecraftError } from "../../statecraft.js";

/** The label of an assistant message's swipe. */
export function labelOf(index, swipe) {
  return `m${index}/s${swipe}`;
}

/** A game id for a chat id: the characters a game id allows, and a stable hash for the rest. */
export function gameIdOf(chatId) {
  const safe = String(chatId).replace(/[^A-Za-z0-9._~-]/g, "_").slice(0, 96);
  let hash = 2166136261;
  for (const char of String(chatId)) {
    hash = Math.imul(hash ^ char.codePointAt(0), 16777619) >>> 0;
  }
  return `st-${safe}-${hash.toString(16)}`;
}

/** A message's text as SillyTavern shows it: its current swipe. */
function textOf(message) {
  if (Array.isArray(message.swipes) && message.swipes.length > 0) {
    return message.swipes[message.swipe_id ?? 0] ?? message.mes ?? "";
  }
  return message.mes ?? "";
}

export class ChatTimeline {
  /**
   * @param {{client: Statecraft, chatId: string, initialState?: object, schema?: object,
   *          scripts?: Record<string, string>, macros?: Record<string, string>}} options
   */
  constructor({ client, chatId, initialState = {}, schema, scripts, macros }) {
    this.client = client;
    this.gameId = gameIdOf(chatId);
    this.initialState = initialState;
    this.schema = schema;
    this.scripts = scripts;
    this.macros = macros;
    /** The feedback of the last refused reply, for the next prompt; empty when there is none. */
    this.feedback = "";
    this.ready = null;
  }

  /** Creates the chat's game the first time. */
  async open() {
    this.ready ??= (async () => {
      try {
        await this.client.getGame(this.gameId);
      } catch (error) {
        if (!(error instanceof StatecraftError) || error.kind !== "unknown_game") throw error;
        await this.client.createGame(
          { state: this.initialState, schema: this.schema, scripts: this.scripts, id: this.gameId },
          { idempotencyKey: `create:${this.gameId}` },
        );
      }
    })();
    return this.ready;
  }

  /** The step an assistant message commits on: the last assistant message before it, or the root. */
  parentOf(chat, index) {
    for (let i = index - 1; i >= 0; i -= 1) {
      if (!chat[i].is_user && !chat[i].is_system) return labelOf(i, chat[i].swipe_id ?? 0);
    }
    return 0;
  }

  /** The step the chat shows now: its last assistant message, or the root. */
  lastStep(chat) {
    return this.parentOf(chat, chat.length);
  }

  /**
   * A reply arrived (or was regenerated, or edited): apply it on its parent's step, labelled with its
   * swipe. Returns the commit, or the refusal (with `feedback`).
   */
  async applyMessage(chat, index) {
    await this.open();
    const message = chat[index];
    if (!message || message.is_user || message.is_system) return null;
    const label = labelOf(index, message.swipe_id ?? 0);
    const at = this.parentOf(chat, index);
    const input = textOf(message);
    try {
      const committed = await this.client.apply(this.gameId, { input, label, at, macros: this.macros });
      this.feedback = "";
      return committed;
    } catch (error) {
      if (!(error instanceof StatecraftError) || error.status !== 422) throw error;
      // The reply changed nothing, but the message still needs its step for what follows it.
      await this.client.apply(this.gameId, { batch: [], label, at });
      this.feedback = error.feedback;
      return { committed: false, feedback: error.feedback, errors: error.errors };
    }
  }

  /** A message was received: MESSAGE_RECEIVED. */
  onMessage(chat, index) {
    return this.applyMessage(chat, index);
  }

  /** A message was edited: MESSAGE_EDITED. Its label moves to the new step. */
  onEdit(chat, index) {
    return this.applyMessage(chat, index);
  }

  /**
   * The user swiped: MESSAGE_SWIPED. A swipe seen before is checked out; a new one is applied once
   * its text is there (SillyTavern generates it first, then sends MESSAGE_RECEIVED).
   */
  async onSwipe(chat, index) {
    await this.open();
    const message = chat[index];
    const label = labelOf(index, message.swipe_id ?? 0);
    try {
      return await this.client.checkout(this.gameId, label);
    } catch (error) {
      if (!(error instanceof StatecraftError) || error.kind !== "unknown_label") throw error;
      if (textOf(message)) return this.applyMessage(chat, index);
      return null;
    }
  }

  /** Messages were deleted: MESSAGE_DELETED. The chat's last assistant message is current again. */
  async onDelete(chat) {
    await this.open();
    return this.client.checkout(this.gameId, this.lastStep(chat));
  }

  /** The chat was opened or switched to: the game follows the chat as it is shown. */
  async onChatOpened(chat) {
    await this.open();
    try {
      return await this.client.checkout(this.gameId, this.lastStep(chat));
    } catch (error) {
      if (!(error instanceof StatecraftError) || error.kind !== "unknown_label") throw error;
      return null;
    }
  }

  /** What goes into the prompt before a generation: the rules, the state, and any feedback. */
  async promptText() {
    await this.open();
    const { state } = await this.client.getGame(this.gameId);
    const { text } = await this.client.prompt(state, { schema: this.schema });
    return this.feedback ? `${text}\n${this.feedback}` : text;
  }
}

/**
 * Wires a ChatTimeline to SillyTavern (a UI extension's `getContext()`). Returns a function that
 * removes the listeners.
 */
export function install({ baseUrl = "http://127.0.0.1:8765", token, initialState = {}, schema, scripts } = {}) {
  const context = globalThis.SillyTavern.getContext();
  const { eventSource, event_types: events } = context;
  const client = new Statecraft(baseUrl, { token });
  let timeline = null;
  const current = () => {
    const { chatId, chat, name1 } = globalThis.SillyTavern.getContext();
    if (!timeline || timeline.chatId !== chatId) {
      timeline = new ChatTimeline({ client, chatId, initialState, schema, scripts, macros: { user: name1 } });
      timeline.chatId = chatId;
    }
    return { timeline, chat };
  };
  const report = (error) => console.error("statecraft:", error);
  const handlers = {
    [events.MESSAGE_RECEIVED]: (index) => { const { timeline, chat } = current(); timeline.onMessage(chat, index).catch(report); },
    [events.MESSAGE_EDITED]: (index) => { const { timeline, chat } = current(); timeline.onEdit(chat, index).catch(report); },
    [events.MESSAGE_SWIPED]: (index) => { const { timeline, chat } = current(); timeline.onSwipe(chat, index).catch(report); },
    [events.MESSAGE_DELETED]: () => { const { timeline, chat } = current(); timeline.onDelete(chat).catch(report); },
    [events.CHAT_CHANGED]: () => { const { timeline, chat } = current(); timeline.onChatOpened(chat).catch(report); },
    [events.GENERATION_STARTED]: async () => {
      const { timeline } = current();
      try {
        // In-chat at depth 1, as a system message: the model sees the state right before it answers.
        context.setExtensionPrompt("statecraft", await timeline.promptText(), 1, 1, false, 0);
      } catch (error) {
        report(error);
      }
    },
  };
  for (const [event, handler] of Object.entries(handlers)) eventSource.on(event, handler);
  return () => {
    for (const [event, handler] of Object.entries(handlers)) eventSource.removeListener(event, handler);
  };
}
