-- The shop: the model calls `buy(item)`; prices come from the state, never from the model.
-- Not enough gold or an unknown item is an error, which rejects the whole batch: nothing of the
-- reply is applied and no event reaches the player.
on("buy", function(ctx, item)
  local price = ctx.get({ "shop", item })
  if price == nil then
    error("the shop does not sell " .. tostring(item))
  end
  local gold = ctx.get("player.gold")
  if gold < price then
    error("not enough gold for " .. item .. ": " .. gold .. " < " .. price)
  end
  ctx.emit({ op = "increment", path = { "player", "gold" }, value = -price, reason = "bought " .. item })
  ctx.emit({ op = "push", path = { "player", "inventory" }, value = item, reason = "bought " .. item })
  ctx.event("message", { text = "You bought the " .. item .. " for " .. price .. " gold." })
end)
