-- Quest progress. Stages only move forward, in this order; the model calls `advance_quest(stage)`.
-- Watchers react to changes made by any instruction of the batch (the model's own, or a handler's):
-- picking up the goblin king's crown completes the quest and pays the reward.
local STAGES = { "village", "forest", "cave", "throne room", "complete" }
local REWARD = { gold = 100, xp = 150 }

local function position(stage)
  for i, name in ipairs(STAGES) do
    if name == stage then
      return i
    end
  end
  return nil
end

on("advance_quest", function(ctx, stage)
  local target = position(stage)
  if target == nil then
    error("unknown quest stage " .. tostring(stage))
  end
  local current = position(ctx.get("quest.stage")) or 1
  if target <= current then
    error("the quest is already at " .. STAGES[current] .. "; it cannot go back to " .. stage)
  end
  ctx.emit({ op = "assign", path = "quest.stage", value = stage, old = STAGES[current], reason = "quest progress" })
end, {
  doc = "move the quest forward to a later stage",
  args = { { name = "stage", type = "string", enum = STAGES } },
})

watch("player.inventory", function(ctx, old, new, path)
  if new ~= "goblin king's crown" or ctx.get("quest.stage") == "complete" then
    return
  end
  ctx.emit({ op = "assign", path = "quest.stage", value = "complete", reason = "found the crown" })
  ctx.emit({ op = "increment", path = "player.gold", value = REWARD.gold, reason = "quest reward" })
  -- The reward's xp goes through the level-up handler, so levels stay consistent.
  ctx.emit({ op = "callback", path = { "gain_xp" }, value = { REWARD.xp } })
end)

watch("quest.stage", function(ctx, old, new)
  ctx.event("message", { text = "Quest \"" .. ctx.get("quest.name") .. "\": " .. tostring(old) .. " -> " .. new })
end)
