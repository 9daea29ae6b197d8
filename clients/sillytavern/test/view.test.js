// view.js without SillyTavern: where an entry's condition is written, a bad condition's bytes
// pointed at, the macros' values, the messages that rank the view, and world-info entries made as
// SillyTavern 1.19's scan makes them (its hash, its decorators).

import { test } from "node:test";
import assert from "node:assert/strict";
import { StateView, byteSpanToChars, conditionInComment, entryCondition, entryName, macroText, mvuStatePath, pointAt, recentMessages, scanEntry, stringHash } from "../view.js";

test("a condition in an entry's title runs to the bracket that closes the tag", () => {
  assert.equal(conditionInComment("Mira hurt [state: Mira.hp[0] < 30]"), "Mira.hp[0] < 30");
  assert.equal(conditionInComment("[STATE: mood in ['angry', \"sad]\"] and gold > 2] the rest"), "mood in ['angry', \"sad]\"] and gold > 2");
  assert.equal(conditionInComment("no tag here"), null);
  assert.equal(conditionInComment("[state: never closed"), null);
  assert.equal(conditionInComment("[state:   ]"), null);
  assert.equal(conditionInComment(undefined), null);
});

test("the condition the drawer stores wins over the title's", () => {
  assert.deepEqual(entryCondition({ comment: "[state: a == 1]", extensions: { statecraft: { condition: " b == 2 " } } }), { condition: "b == 2", from: "extensions" });
  assert.deepEqual(entryCondition({ comment: "x [state: a == 1]", extensions: {} }), { condition: "a == 1", from: "title" });
  assert.equal(entryCondition({ comment: "x", extensions: { statecraft: { condition: "" } } }), null);
  assert.equal(entryName({ comment: "Mira hurt [state: hp < 3]", uid: 4 }), "Mira hurt");
  assert.equal(entryName({ comment: "", key: ["cave", "dark"], uid: 4 }), "cave, dark");
  assert.equal(entryName({ uid: 7 }), "entry 7");
});

test("the engine's byte offsets point at the right characters, multibyte ones too", () => {
  assert.deepEqual(byteSpanToChars("hp <> 3", 3, 5), { start: 3, end: 5 });
  // 好 is 3 bytes: byte 7 is the character after "好感 ".
  assert.deepEqual(byteSpanToChars("好感 >> 3", 7, 9), { start: 3, end: 5 });
  assert.deepEqual(byteSpanToChars("🙂 x", 5, 6), { start: 3, end: 4 });
  assert.deepEqual(byteSpanToChars("ab", 5, 9), { start: 2, end: 2 });
  assert.equal(pointAt("hp <> 3", { code: "bad_condition", message: "expected an operator", start: 3, end: 5 }), "hp <> 3\n   ^^\nbad_condition: expected an operator");
  assert.equal(pointAt("hp ==", { message: "expected a value", start: 5, end: 5 }), "hp ==\n     ^\nexpected a value");
});

test("macro values: strings as they are, the rest as JSON, nothing for a missing path", () => {
  assert.equal(macroText("calm"), "calm");
  assert.equal(macroText(30), "30");
  assert.equal(macroText([100, "0-100"]), '[100,"0-100"]');
  assert.equal(macroText(null), "null");
  assert.equal(macroText(undefined), "");
  assert.equal(mvuStatePath("stat_data.Mira.hp[0]"), "Mira.hp[0]");
  assert.equal(mvuStatePath("stat_data[0]"), "[0]");
  assert.equal(mvuStatePath("stat_data"), "");
  assert.equal(mvuStatePath("stat_dataX.a"), null);
  assert.equal(mvuStatePath("display_data.a"), null);
});

test("the recent messages a view ranks by: the replaced reply of a swipe left out, the box's text of a send added", () => {
  const chat = [
    { mes: "hello", is_user: false },
    { mes: "note", is_user: false, extra: { type: "narrator" } },
    { mes: "I look", is_user: true },
    { mes: "A bat", is_user: false },
  ];
  assert.deepEqual(recentMessages(chat, "normal", 4, "I run"), ["hello", "I look", "A bat", "I run"]);
  assert.deepEqual(recentMessages(chat, "swipe", 4, "ignored"), ["hello", "I look"]);
  assert.deepEqual(recentMessages(chat, "continue", 2, "ignored"), ["I look", "A bat"]);
  assert.deepEqual(recentMessages(chat, undefined, 0, "x"), []);
});

test("an entry for WORLDINFO_FORCE_ACTIVATE is the entry SillyTavern's scan makes: its hash and decorators", () => {
  // getStringHash of SillyTavern 1.19 (public/scripts/utils.js) on these texts.
  assert.equal(stringHash("hello"), 4625896200565286);
  assert.equal(stringHash("好感度"), 258123491435103);
  assert.equal(stringHash(JSON.stringify({ uid: 1, world: "w", content: "x", decorators: [] })), 1418348682985634);
  const plain = scanEntry({ uid: 1, world: "w", content: "x" });
  assert.deepEqual(plain, { uid: 1, world: "w", content: "x", decorators: [], hash: 1418348682985634 });
  // As parseDecorators splits them: a known decorator taken, an escaped one skipped, the rest kept.
  const decorated = scanEntry({ uid: 2, world: "w", content: "@@activate\n@@@dont_activate\nbody\n@@kept" });
  assert.deepEqual(decorated.decorators, ["@@activate"]);
  assert.equal(decorated.content, "body\n@@kept");
  assert.equal(decorated.hash, stringHash(JSON.stringify({ uid: 2, world: "w", content: "body\n@@kept", decorators: ["@@activate"] })));
});

/** A StateView with SillyTavern's context replaced by what these tests need. */
function bareView(emitted = []) {
  const context = { eventSource: { emit: async (name, entries) => emitted.push({ name, entries }) }, eventTypes: { WORLDINFO_FORCE_ACTIVATE: "worldinfo_force_activate" }, chat: [] };
  return new StateView({ context: () => context, client: () => null, keeper: () => ({ generating: false }), settings: () => ({}) });
}

test("the macros read the chat's state between generations, and nothing before a sync", () => {
  const view = bareView();
  assert.equal(view.stateMacro("hp"), "");
  view.synced({ moved: true, gameId: "g", step: 3, state: { hp: 30, name: "Mira", bag: { potion: [2, "count"] } } }, { mvu: false });
  assert.equal(view.stateMacro("hp"), "30");
  assert.equal(view.stateMacro("/name"), "Mira");
  assert.equal(view.stateMacro("bag.potion[0]"), "2");
  assert.equal(view.stateMacro("bag.nothing"), "");
  assert.equal(view.stateMacro(), JSON.stringify({ hp: 30, name: "Mira", bag: { potion: [2, "count"] } }, null, 2));
  assert.equal(view.mvuMacro("stat_data.bag.potion"), '[2,"count"]');
  assert.equal(view.mvuMacro("display_data.hp"), "");
  // A step read without moving the chat (a swipe's state) is not the chat's.
  view.synced({ moved: false, gameId: "g", step: 2, state: { hp: 90 } }, { mvu: false });
  assert.equal(view.stateMacro("hp"), "30");
  view.chatChanged();
  assert.equal(view.stateMacro("hp"), "");
});

test("outside a generation, entries with a condition are left out of a scan and nothing is activated", async () => {
  const emitted = [];
  const view = bareView(emitted);
  const plain = { uid: 0, world: "w", comment: "plain", content: "a" };
  const titled = { uid: 1, world: "w", comment: "x [state: hp < 3]", content: "b" };
  const stored = { uid: 2, world: "v", comment: "y", content: "c", extensions: { statecraft: { condition: "hp > 3" } } };
  const lore = { globalLore: [plain, titled], characterLore: [stored], chatLore: [], personaLore: [] };
  await view.entriesLoaded(lore);
  assert.deepEqual(lore.globalLore, [plain]);
  assert.deepEqual(lore.characterLore, []);
  assert.deepEqual(emitted, []);
  assert.equal(view.activation, null, "no report without a generation");
});
