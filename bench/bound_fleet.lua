-- SPDX-License-Identifier: Apache-2.0
-- wrk script for bench/bound_fleet.py: TokenReviews of many pods' tokens at
-- a fixed total rate, each token in turn, so that with RATE equal to the
-- number of tokens every pod is reviewed once a second.
--
--   wrk -t1 -cC ... -s bench/bound_fleet.lua URL -- TOKENS_FILE BEARER_FILE RATE
--
-- The requests are built once in init(). Pacing: one schedule for the
-- thread (run it with -t1), a slot every 1/RATE s; before each request a
-- connection takes the next slot and waits until it is due (delay()), so
-- the rate holds whatever the answers' latency, as long as the connections
-- suffice (C > RATE x latency); a connection that is late sends at once.
-- The clock is clock_gettime through LuaJIT's ffi (wrk's Lua has no
-- sub-second clock of its own). Every answer must be 201 authenticated;
-- done() prints
--   bad=N total=T tokens=K p50_us=X p99_us=Y max_us=Z
-- (the latency of the review, from the request's send to its answer).

local ffi = require("ffi")
ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } oidc_timespec;
int clock_gettime(int clk, oidc_timespec *ts);
]]
local ts = ffi.new("oidc_timespec")

local function now_ms()
   ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
   return tonumber(ts.tv_sec) * 1000 + tonumber(ts.tv_nsec) / 1e6
end

local threads = {}

function setup(thread)
   table.insert(threads, thread)
end

function init(args)
   local f = assert(io.open(assert(args[2], "no BEARER_FILE"), "rb"))
   local bearer = f:read("*l")
   f:close()
   rate = assert(tonumber(args[3]), "no RATE")
   reqs = {}
   for line in assert(io.open(args[1], "rb")):lines() do
      if #line > 0 then
         local body = '{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"'
            .. line .. '"}}'
         reqs[#reqs + 1] = wrk.format("POST", "/apis/authentication.k8s.io/v1/tokenreviews",
                                      {["Content-Type"] = "application/json",
                                       ["Authorization"] = "Bearer " .. bearer}, body)
      end
   end
   ntokens = #reqs
   assert(ntokens > 0, "no tokens")
   idx = 0
   bad, total = 0, 0
   first_bad = ""
   next_due = nil
end

function delay()
   local now = now_ms()
   if next_due == nil then next_due = now end
   local due = next_due
   next_due = next_due + 1000 / rate
   if due <= now then return 0 end
   return math.floor(due - now + 0.5)
end

function request()
   idx = idx % ntokens + 1
   return reqs[idx]
end

function response(status, headers, body)
   total = total + 1
   if status ~= 201 or string.find(body or "", '"authenticated":true', 1, true) == nil then
      bad = bad + 1
      if first_bad == "" then first_bad = "status " .. status .. ": " .. string.sub(body or "", 1, 300) end
   end
end

function done(summary, latency, requests)
   local b, t, k, first = 0, 0, 0, ""
   for _, thread in ipairs(threads) do
      b = b + (thread:get("bad") or 0)
      t = t + (thread:get("total") or 0)
      k = k + (thread:get("ntokens") or 0)
      if first == "" then first = thread:get("first_bad") or "" end
   end
   io.write(string.format("bad=%d total=%d tokens=%d p50_us=%d p99_us=%d max_us=%d\n", b, t, k,
                          latency:percentile(50), latency:percentile(99), latency.max))
   if first ~= "" then io.write("first bad response: " .. first .. "\n") end
end
