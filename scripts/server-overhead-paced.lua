-- scripts/server-overhead.lua, each connection pausing the milliseconds given
-- after `--` before each request (wrk's `delay`): an offered load of about
-- connections x 1000 / (pause + response time) a second, whatever the answers.
dofile("scripts/server-overhead.lua")
local counted_init = init

function init(args)
  counted_init(args)
  pause = tonumber(args[1]) or 0
end

function delay()
  return pause
end
