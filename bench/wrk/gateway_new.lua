-- The gateway form, a new session every request: each is placed by the consistent-hash table and
-- bound (the pool's session table fills, then evicts its least recently used).
local n = 0
request = function()
  n = n + 1
  return wrk.format("GET", "/v1/pools/bench/chat/pick", {["x-session-id"] = "s-" .. n})
end
