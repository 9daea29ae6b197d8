// The SillyTavern example's logic against a real server: a recorded sequence of chat events (new
// replies, swipes new and old, a refused reply, deletions, an edit, reopening the chat), each followed
// by the state the game must show.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Statecraft } from "../statecraft.js";
import { ChatTimeline, gameIdOf, labelOf } from "../examples/sillytavern/statecraft-timeline.js";
import { startServer } from "./server.js";

const recording = JSON.parse(readFileSync(new URL("./fixtures/chat-events.json", import.meta.url), "utf8"));

let server;
let client;

before(async () => {
  server = await startServer();
  client = new Statecraft(server.url);
});

after(async () => {
  await server.stop();
});

function deliver(timeline, { event, chat, index }) {
  switch (event) {
    case "message_received":
      return timeline.onMessage(chat, index);
    case "message_edited":
      return timeline.onEdit(chat, index);
    case "message_swiped":
      return timeline.onSwipe(chat, index);
    case "message_deleted":
      return timeline.onDelete(chat);
    case "chat_changed":
      return timeline.onChatOpened(chat);
    default:
      throw new Error(`unknown event ${event}`);
  }
}

test("the recorded chat's state follows every event", async () => {
  const timeline = new ChatTimeline({
    client,
    chatId: recording.chatId,
    initialState: recording.initialState,
    schema: recording.schema,
  });
  for (const [number, step] of recording.events.entries()) {
    await deliver(timeline, step);
    const { state } = await client.getGame(timeline.gameId);
    assert.deepEqual(state, step.expect, `after event ${number} (${step.event}${step.note ? `: ${step.note}` : ""})`);
    if (step.expectFeedback) assert.match(timeline.feedback, new RegExp(step.expectFeedback));
  }
  // Every assistant message seen is a step, swipes side by side on the same parent.
  const log = await client.log(timeline.gameId);
  const byLabel = Object.fromEntries(log.steps.filter((s) => s.label).map((s) => [s.label, s]));
  assert.equal(byLabel[labelOf(3, 0)].parent, byLabel[labelOf(1, 0)].id);
  assert.equal(byLabel[labelOf(3, 1)].parent, byLabel[labelOf(1, 0)].id);
  assert.equal(byLabel[labelOf(1, 0)].parent, 0);
  assert.equal(byLabel[labelOf(7, 0)].changes, 0, "the refused reply has an empty step");
  // The prompt carries the state the chat shows.
  const prompt = await timeline.promptText();
  assert.match(prompt, /"gold":7/);
  // A second timeline on the same chat (the page reloaded) finds the game and does not recreate it.
  const again = new ChatTimeline({ client, chatId: recording.chatId, initialState: { hp: 1 } });
  await again.open();
  assert.deepEqual((await client.getGame(again.gameId)).state, recording.events.at(-1).expect);
});

test("game ids are safe and stable for any chat id", () => {
  const id = gameIdOf("Goblin Cave - 2026-11-24@10h00m00s / ü");
  assert.match(id, /^[A-Za-z0-9._~-]+$/);
  assert.equal(id, gameIdOf("Goblin Cave - 2026-11-24@10h00m00s / ü"));
  assert.notEqual(gameIdOf("a/b"), gameIdOf("a_b"));
});
