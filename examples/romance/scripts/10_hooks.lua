-- The card's batch hooks and its one random handler.
--
-- before: models sometimes write the card's names in traditional characters (悠紀 for 悠纪); MVU
-- cards fix that in a script before the commands run. Every edit is reported as
-- `rewritten_by_script` with this file and line.
-- after: the relationship stage follows affection, whatever changed it (the model, a handler, a
-- repair does not count: repairs come after the hooks).
-- fortune: a shrine fortune drawn with ctx.random, the same for the same seed and turn.

local TRADITIONAL = { ["紀"] = "纪", ["禮"] = "礼", ["錢"] = "钱", ["關"] = "关", ["係"] = "系", ["時"] = "时", ["間"] = "间", ["點"] = "点" }

local function simplified(text)
  for from, to in pairs(TRADITIONAL) do
    text = string.gsub(text, from, to)
  end
  return text
end

before(function(ctx, batch)
  for _, ins in ipairs(batch) do
    if type(ins.path) == "table" then
      for i, segment in ipairs(ins.path) do
        if type(segment) == "string" then
          ins.path[i] = simplified(segment)
        end
      end
    end
  end
  return batch
end)

local function stage(affection)
  if affection == nil then
    return nil
  elseif affection >= 70 then
    return "心动"
  elseif affection >= 40 then
    return "朋友"
  end
  return "陌生"
end

after(function(ctx, changes)
  -- A string the schema repair will mend later is read as the number it stands for.
  local now = stage(tonumber(ctx.get("悠纪.好感度")))
  if now ~= nil and now ~= ctx.get("悠纪.阶段") then
    ctx.emit({ op = "assign", path = "悠纪.阶段", value = now, reason = "好感度变化" })
  end
end)

local FORTUNES = { "大吉", "中吉", "小吉", "吉", "末吉", "凶" }

on("fortune", function(ctx)
  local drawn = FORTUNES[ctx.random(1, #FORTUNES)]
  ctx.emit({ op = "assign", path = "世界.运势", value = drawn, reason = "神社求签" })
  return drawn
end, { doc = "draw a fortune at the shrine" })
