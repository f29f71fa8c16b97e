-- POST /v1/pick carrying a 220 KB prompt (as a chat client's long context would): the body is
-- parsed and the prompt hashed into prefix blocks on every request (prefix affinity is on).
wrk.method = "POST"
wrk.path = "/v1/pick"
wrk.headers["Content-Type"] = "application/json"
local prompt = string.rep("You are a helpful assistant. Answer briefly and cite sources. ", 3600)
prompt = string.sub(prompt, 1, 220 * 1024)
wrk.body = '{"pool":"bench/chat","model":"llama","prompt":"' .. prompt .. '"}'
