-- The same 220 KB body as json_prompt.lua, to a server that reads and discards it (nginx).
dofile(os.getenv("EOC_WRK_DIR") .. "/json_prompt.lua")
wrk.path = "/"
