-- wrk script: JSON-RPC SendMessage with a fresh messageId per request (our server is
-- idempotent by messageId), a check that each answer is HTTP 200 with a "result", and one
-- JSON line of totals at the end (parsed by run.py).
--
--   wrk -t1 -c32 -d8s -s benchmarks/sendmessage.lua URL -- RUNPREFIX [TEXT [WEBHOOK [IDS]]]
--
-- TEXT is the message text (default "hello": a plain reply); "stream:1" makes the echo agent
-- create a task, add one artifact chunk, complete it, and answer with the task. WEBHOOK, if
-- given and not empty, is registered as the task's push notification config (one webhook per
-- task). IDS is how messageIds look: "uuid" (the default: a random version-4 UUID, what the
-- A2A SDKs' clients send) or "counter" (RUNPREFIX-THREAD-N: ids that sort in the order they
-- are sent, which a store's index of them takes at its end, so cheaper than real ids).

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
local ids = "uuid"
local counter = 0
local bad = 0
local headers = { ["Content-Type"] = "application/json", ["A2A-Version"] = "1.0" }

function init(args)
  prefix = (args[1] or "run") .. "-" .. tostring(tid)
  text = args[2] or "hello"
  if args[3] and args[3] ~= "" then
    config = ',"configuration":{"taskPushNotificationConfig":{"url":"' .. args[3] .. '"}}'
  end
  ids = args[4] or "uuid"
  -- Each wrk thread seeds its own generator (from the clock and its run prefix and number).
  local seed = os.time() + tid
  for i = 1, #prefix do
    seed = (seed * 31 + string.byte(prefix, i)) % 2147483647
  end
  math.randomseed(seed)
end

local function r16()
  return math.random(0, 0xffff)
end

local function message_id()
  if ids == "counter" then
    return prefix .. '-' .. counter
  end
  -- 8-4-4-4-12 hex digits, version 4, variant 10xx: what uuid.uuid4() and crypto.randomUUID() give.
  return string.format("%04x%04x-%04x-4%03x-%04x-%04x%04x%04x",
    r16(), r16(), r16(), math.random(0, 0xfff), 0x8000 + math.random(0, 0x3fff), r16(), r16(), r16())
end

function request()
  counter = counter + 1
  local body = '{"jsonrpc":"2.0","id":' .. counter ..
    ',"method":"SendMessage","params":{"message":{"messageId":"' .. message_id() ..
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
