-- SPDX-License-Identifier: Apache-2.0
-- wrk script for bench/rotation.sh: checks every JWKS response served while
-- the key directory is being rotated.
--
--   wrk ... -s bench/rotation_check.lua URL -- VALID_BODIES_FILE
--
-- VALID_BODIES_FILE holds one valid JWKS body per line (every set the
-- rotation ever publishes). A response counts as "non200" when its status is
-- not 200 and as "invalid" when its body is not exactly one of those lines
-- (a torn, mixed, empty or otherwise wrong document). done() sums the
-- per-thread counters and prints
--   non200=N invalid=M total=T
-- plus the first offending status/body of any thread, for diagnosis.

local threads = {}

function setup(thread)
   table.insert(threads, thread)
end

function init(args)
   local path = args[1] or os.getenv("ROTATION_VALID_BODIES")
   local f = assert(io.open(path, "rb"), "cannot open valid-bodies file " .. tostring(path))
   valid = {}
   for line in f:lines() do
      valid[line] = true
   end
   f:close()
   non200, invalid, total = 0, 0, 0
   first_bad = ""
end

function response(status, headers, body)
   total = total + 1
   if status ~= 200 then
      non200 = non200 + 1
      if first_bad == "" then first_bad = "status " .. status .. ": " .. string.sub(body or "", 1, 200) end
   elseif not valid[body] then
      invalid = invalid + 1
      if first_bad == "" then first_bad = "invalid body: " .. string.sub(body or "", 1, 200) end
   end
end

function done(summary, latency, requests)
   local n, i, t = 0, 0, 0
   for _, thread in ipairs(threads) do
      n = n + thread:get("non200")
      i = i + thread:get("invalid")
      t = t + thread:get("total")
      local bad = thread:get("first_bad")
      if bad ~= "" then io.write("first_bad: ", bad, "\n") end
   end
   local e = summary.errors
   io.write(string.format("non200=%d invalid=%d total=%d\n", n, i, t))
   io.write(string.format("socket_errors connect=%d read=%d write=%d timeout=%d\n",
                          e.connect, e.read, e.write, e.timeout))
end
