-- SPDX-License-Identifier: Apache-2.0
-- wrk script for bench/verify.sh: POSTs TokenReview requests.
--
--   wrk -t1 ... -s bench/verify_tokenreview.lua URL -- TOKENS_FILE BEARER_FILE [EXPECT]
--
-- TOKENS_FILE holds one JWT per line, the tokens to review; BEARER_FILE the
-- caller's token sent as "Authorization: Bearer" with every request. The
-- requests are built once in init() and sent round-robin (per wrk thread;
-- verify.sh runs -t1 so the rotation is global). With one token every
-- request after the first is a cache hit; with more distinct tokens than the
-- server's per-thread cache holds (4096, FIFO) every request is a cache miss,
-- i.e. a full signature verification. A forged token is never cached: each
-- request with one costs a signature check that fails.
--
-- EXPECT is what every response must be: "authenticated" (the default: 201
-- and "authenticated":true), "not-authenticated" (201 and
-- "authenticated":false: a review that failed) or "unauthorized" (401: a
-- caller check that failed). Any other response counts as "bad" (an expired
-- or rejected token would otherwise be measured as a fast failure). done()
-- prints
--   bad=N total=T tokens=K
-- plus the first offending status/body, for diagnosis.

local threads = {}

function setup(thread)
   table.insert(threads, thread)
end

local function first_line(path)
   local f = assert(io.open(path, "rb"), "cannot open " .. tostring(path))
   local line = f:read("*l")
   f:close()
   assert(line and #line > 0, "no token in " .. path)
   return line
end

function init(args)
   local path = args[1]
   local bearer = first_line(assert(args[2], "no BEARER_FILE"))
   expect = args[3] or "authenticated"
   assert(expect == "authenticated" or expect == "not-authenticated" or expect == "unauthorized",
          "EXPECT must be authenticated, not-authenticated or unauthorized")
   local f = assert(io.open(path, "rb"), "cannot open tokens file " .. tostring(path))
   reqs = {}
   for line in f:lines() do
      if #line > 0 then
         local body = '{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"'
            .. line .. '"}}'
         reqs[#reqs + 1] = wrk.format("POST", "/apis/authentication.k8s.io/v1/tokenreviews",
                                      {["Content-Type"] = "application/json",
                                       ["Authorization"] = "Bearer " .. bearer}, body)
      end
   end
   f:close()
   assert(#reqs > 0, "no tokens in " .. path)
   ntokens = #reqs
   idx = 0
   bad, total = 0, 0
   first_bad = ""
end

function request()
   idx = idx % ntokens + 1
   return reqs[idx]
end

local function as_expected(status, body)
   if expect == "unauthorized" then
      return status == 401
   end
   local want = expect == "authenticated" and '"authenticated":true' or '"authenticated":false'
   return status == 201 and string.find(body or "", want, 1, true) ~= nil
end

function response(status, headers, body)
   total = total + 1
   if not as_expected(status, body) then
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
   io.write(string.format("bad=%d total=%d tokens=%d\n", b, t, k))
   if first ~= "" then io.write("first bad response: " .. first .. "\n") end
end
