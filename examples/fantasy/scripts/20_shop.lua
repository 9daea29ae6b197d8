-- The shop: the model calls `buy(item)` or `buy(item, count)`; prices come from the state, never from
-- the model. An unknown item or too little gold is an error, which rejects the whole batch: nothing of
-- the reply is applied and no event reaches the player.
on("buy", function(ctx, item, count)
  count = count or 1
  if type(item) ~= "string" then
    error("buy needs an item name, got " .. tostring(item))
  end
  if type(count) ~= "number" or count < 1 or count % 1 ~= 0 then
    error("buy needs a positive whole count, got " .. tostring(count))
  end
  local price = ctx.get({ "shop", item })
  if price == nil then
    error("the shop does not sell " .. item)
  end
  local total = price * count
  local gold = ctx.get("player.gold")
  if gold < total then
    error(string.format("not enough gold for %d %s: %d < %d", count, item, gold, total))
  end
  -- Returning a list is the other way to hand instructions back; they run after anything emitted.
  local out = {
    { op = "increment", path = { "player", "gold" }, value = -total, reason = "bought " .. item },
  }
  for _ = 1, count do
    table.insert(out, { op = "push", path = { "player", "inventory" }, value = item, reason = "bought " .. item })
  end
  ctx.event("message", { text = string.format("You bought %d %s for %d gold.", count, item, total) })
  return out
end, {
  doc = "buy from the shop at its price",
  args = {
    { name = "item", type = "string", doc = "an item the shop sells" },
    { name = "count", type = "integer", minimum = 1, optional = true, doc = "how many (1 when left out)" },
  },
})

-- Selling gives back half the price, rounded down, and removes one copy from the inventory.
on("sell", function(ctx, item)
  local inventory = ctx.get("player.inventory") or {}
  for index, owned in ipairs(inventory) do
    if owned == item then
      local price = ctx.get({ "shop", item }) or 0
      local paid = math.floor(price / 2)
      ctx.emit({ op = "delete", path = { "player", "inventory", index - 1 }, reason = "sold " .. item })
      ctx.emit({ op = "increment", path = { "player", "gold" }, value = paid, reason = "sold " .. item })
      ctx.event("message", { text = string.format("You sold the %s for %d gold.", item, paid) })
      return paid
    end
  end
  error("the player has no " .. tostring(item) .. " to sell")
end, {
  doc = "sell one item from the inventory for half its price",
  args = { { name = "item", type = "string", doc = "an item the player has" } },
})
