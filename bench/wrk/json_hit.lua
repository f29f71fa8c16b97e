-- POST /v1/pick with a JSON body and a JSON answer, one session.
wrk.method = "POST"
wrk.path = "/v1/pick"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"pool":"bench/chat","model":"llama","session_id":"user-42","prompt_tokens":900}'
