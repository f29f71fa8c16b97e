-- A small chat completion, as a client sends it to the gateway (no session header: each request
-- is placed by the pool's strategy).
wrk.method = "POST"
wrk.path = "/v1/chat/completions"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["x-eoc-prompt-tokens"] = "12"
wrk.body = '{"model":"llama-3-8b","messages":[{"role":"user","content":"Say hello."}]}'
