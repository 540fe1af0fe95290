-- wrk script: JSON-RPC SendMessage with a fresh messageId per request (our server is
-- idempotent by messageId), a check that each answer is HTTP 200 with a "result", and one
-- JSON line of totals at the end (parsed by run.py).
--
--   wrk -t1 -c32 -d8s -s benchmarks/sendmessage.lua URL -- RUNPREFIX [TEXT [WEBHOOK]]
--
-- TEXT is the message text (default "hello": a plain reply); "stream:1" makes the echo agent
-- create a task, add one artifact chunk, complete it, and answer with the task. WEBHOOK, if
-- given, is registered as the task's push notification config (one webhook per task).

local threads = {}
local next_thread = 0

function setup(thread)
  next_thread = next_thread + 1
  thread:set("tid", next_thread)
  table.insert(threads, thread)
end

local prefix = "run"
local text = "hello"
local config = ""
local counter = 0
local bad = 0
local headers = { ["Content-Type"] = "application/json", ["A2A-Version"] = "1.0" }

function init(args)
  prefix = (args[1] or "run") .. "-" .. tostring(tid)
  text = args[2] or "hello"
  if args[3] then
    config = ',"configuration":{"taskPushNotificationConfig":{"url":"' .. args[3] .. '"}}'
  end
end

function request()
  counter = counter + 1
  local body = '{"jsonrpc":"2.0","id":' .. counter ..
    ',"method":"SendMessage","params":{"message":{"messageId":"' .. prefix .. '-' .. counter ..
    '","role":"ROLE_USER","parts":[{"text":"' .. text .. '"}]}' .. config .. '}}'
  return wrk.format("POST", nil, headers, body)
end

function response(status, hdrs, body)
  if status ~= 200 or not string.find(body, '"result"', 1, true)
      or (text ~= "hello" and not string.find(body, "TASK_STATE_COMPLETED", 1, true)) then
    bad = bad + 1
  end
end

function done(summary, latency, requests)
  local bad_total = 0
  for _, thread in ipairs(threads) do
    bad_total = bad_total + (thread:get("bad") or 0)
  end
  local e = summary.errors
  io.write(string.format(
    '\nWRKJSON {"requests":%d,"duration_us":%d,"bad_answers":%d,"connect_errors":%d,"read_errors":%d,' ..
    '"write_errors":%d,"status_errors":%d,"timeouts":%d,"latency_us_p50":%d,"latency_us_p99":%d}\n',
    summary.requests, summary.duration, bad_total, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99)))
end
