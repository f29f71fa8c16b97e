-- The gateway form, one session: every request after the first is a session hit.
wrk.method = "GET"
wrk.path = "/v1/pools/bench/chat/pick"
wrk.headers["x-session-id"] = "user-42"
