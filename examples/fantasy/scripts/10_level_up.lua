-- Level-up: the model calls `gain_xp(amount)` instead of doing the arithmetic itself.
-- Every 100 xp is one level; each level adds 10 max hp and heals fully. The handler reads copies of
-- the state and emits instructions, which run right after it inside the same atomic batch. The table
-- after the function describes the handler to the model (`statecraft prompt --scripts`).
local XP_PER_LEVEL = 100
local HP_PER_LEVEL = 10

on("gain_xp", function(ctx, amount)
  if type(amount) ~= "number" or amount < 0 or amount % 1 ~= 0 then
    error("gain_xp needs a non-negative whole number, got " .. tostring(amount))
  end
  local xp = ctx.get("player.xp") + amount
  local level = ctx.get("player.level")
  ctx.emit({ op = "assign", path = { "player", "xp" }, value = xp, reason = "gained " .. amount .. " xp" })
  local reached = math.floor(xp / XP_PER_LEVEL) + 1
  if reached > level then
    local max_hp = ctx.get("player.max_hp") + HP_PER_LEVEL * (reached - level)
    ctx.emit({ op = "assign", path = { "player", "level" }, value = reached, reason = "level up" })
    ctx.emit({ op = "assign", path = { "player", "max_hp" }, value = max_hp, reason = "level up" })
    ctx.emit({ op = "assign", path = { "player", "hp" }, value = max_hp, reason = "healed by the level up" })
    ctx.event("level_up", { level = reached, max_hp = max_hp })
  end
  return reached
end, {
  doc = "grant experience points; every 100 is a level, which raises max hp and heals",
  args = { { name = "amount", type = "integer", minimum = 0, doc = "experience points gained" } },
})
