/**
 * The rate-limit decisions as Lua, two scripts per algorithm built from one body: `single` decides
 * one key, `batch` decides several keys in one call (the store coalesces the decisions issued in
 * one tick, see `rate-limit.ts`). Each body mirrors its TypeScript twin in `src/rate-limit/`
 * expression for expression (same operations in the same order, so the same doubles), with time
 * from `redis.call('TIME')` on the server, read once per script call. A decision touches one key,
 * decides, writes only when it admits, and sets a `PX` expiry at the moment the key would be back at
 * full capacity, so an expired key and a stored one always decide alike.
 *
 * `single`: KEYS[1] is the state key, ARGV[1] the cost (0 is a peek: nothing is written), then the
 * rule's arguments. Reply: {remaining, retryAfterMs, resetMs}, integers; retryAfterMs is 0 exactly
 * when the take was allowed (a refusal always says at least 1 ms).
 *
 * `batch`: KEYS[1..n] the state keys, ARGV[1..n] their costs, then the rule's arguments. The keys
 * are decided in order, each exactly as `single` would decide it at the same server time (a key
 * that appears twice is decided twice and the second decision sees the first's write). Reply: one
 * element per key, the `single` reply or, if Redis failed that key's command (e.g. `WRONGTYPE`),
 * the error message as a string; the other keys are unaffected.
 *
 * The scripts are written for the server's CPU, which bounds throughput: globals are read once
 * into locals, strings become numbers by arithmetic, helpers are inlined where a closure per call
 * would show, and they rely on effects replication (the default since Redis 5) for `TIME` before a
 * write. Kept as TypeScript strings so the build ships them (tsc copies only .ts).
 */
import type { RateLimitAlgorithm } from '../../rate-limit/store.js';

/** One algorithm's Lua, assembled by {@link scriptsOf}. */
interface Decision {
  /** Lua locals of the rule's arguments, in ARGV order after the cost(s). */
  readonly params: readonly string[];
  /** Lua run once per script call after `now` is known, from the rule's arguments only. */
  readonly setup: string;
  /** Decides `key` for `cost` at `now`: ends by returning {remaining, retryAfterMs, resetMs}. */
  readonly body: string;
}

/**
 * GCRA: the state is the theoretical arrival time in two parts, "tatMs tatRest" (whole ms, then the
 * rest in token·ms), as in `gcra.ts`: one double cannot hold an epoch-sized time finely enough for
 * high rates. A single number (the format before) is read as the TAT in ms. Rule arguments: limit,
 * periodMs, burst (and buckets, unused).
 */
const gcra: Decision = {
  params: ['limit', 'period', 'burst'],
  setup: `local tau = burst * period
local slack = period * 1e-9
local nowms = math.floor(now)
local nowrest = (now - nowms) * limit
`,
  body: `
local before = 0
local stored = call('GET', key)
if stored then
  local w, r = string.match(stored, '^(%S+) (%S+)$')
  if w then
    before = (tonumber(w) - nowms) * limit + (tonumber(r) - nowrest)
  else
    local tat = tonumber(stored)
    if tat then before = (tat - now) * limit end
  end
  if before < 0 then before = 0 end
end
local debt = before + cost * period
local short = debt - tau
if short > slack then
  local units = math.floor((tau - before) / period + 1e-9)
  if units < 0 then units = 0 end
  local reset = (before - slack) / limit
  if reset > 0 then reset = math.ceil(reset) else reset = 0 end
  local retry = (short - slack) / limit
  if retry > 0 then retry = math.ceil(retry) else retry = 0 end
  return {units, retry, reset}
end
local reset = (debt - slack) / limit
if reset > 0 then reset = math.ceil(reset) else reset = 0 end
if cost > 0 then
  local ahead = nowrest + debt
  local whole = math.floor(ahead / limit)
  call('SET', key, string.format('%.17g %.17g', nowms + whole, ahead - whole * limit), 'PX', math.max(1, reset))
end
local units = math.floor((tau - debt) / period + 1e-9)
if units < 0 then units = 0 end
return {units, 0, reset}
`,
};

/**
 * Token bucket: the state is "level last periodMs" (level in token·ms, below 0 after a take allowed
 * within the slack or once the server clock stepped back). Rule arguments: limit, periodMs, burst
 * (and buckets, unused).
 */
const tokenBucket: Decision = {
  params: ['limit', 'period', 'burst'],
  setup: `local capacity = burst * period
local slack = period * 1e-9
`,
  body: `
local level = capacity
local last = now
local stored = call('GET', key)
if stored then
  local l, t, p = string.match(stored, '^(%S+) (%S+) (%S+)$')
  if p and tonumber(p) == period then
    level = tonumber(l)
    last = tonumber(t)
    if level > capacity then level = capacity end
  end
end
level = level + (now - last) * limit
if level > capacity then level = capacity end
last = now
local short = cost * period - level
local units
if short <= slack then
  level = -short
  local reset = (capacity - level - slack) / limit
  if reset > 0 then reset = math.ceil(reset) else reset = 0 end
  if cost > 0 then
    call('SET', key, string.format('%.17g %.17g %.17g', level, last, period), 'PX', math.max(1, reset))
  end
  units = math.floor(level / period + 1e-9)
  if units < 0 then units = 0 end
  return {units, 0, reset}
end
local reset = (capacity - level - slack) / limit
if reset > 0 then reset = math.ceil(reset) else reset = 0 end
local retry = (short - slack) / limit
if retry > 0 then retry = math.ceil(retry) else retry = 0 end
units = math.floor(level / period + 1e-9)
if units < 0 then units = 0 end
return {units, retry, reset}
`,
};

/**
 * Sliding-window counter: the state is "buckets periodMs newest c0 … c_buckets". Rule arguments:
 * limit, periodMs, burst (unused), buckets.
 */
const slidingWindow: Decision = {
  params: ['limit', 'period', 'burst', 'buckets'],
  setup: `local width = period / buckets
local slots = buckets + 1
`,
  body: `
local current = math.floor(now / width)
local counts = {}
local newest = current
local total = 0
local fresh = true
local stored = call('GET', key)
if stored then
  local parts = {}
  for word in string.gmatch(stored, '%S+') do parts[#parts + 1] = word end
  if #parts == slots + 3 and tonumber(parts[1]) == buckets and tonumber(parts[2]) == period then
    newest = tonumber(parts[3])
    for i = 0, buckets do
      counts[i] = tonumber(parts[i + 4])
      total = total + counts[i]
    end
    fresh = false
  end
end
if fresh then
  for i = 0, buckets do counts[i] = 0 end
end
if current > newest then
  local steps = math.min(slots, current - newest)
  for i = 1, steps do
    local slot = (newest + i) % slots
    total = total - counts[slot]
    counts[slot] = 0
  end
  newest = current
end
-- Whole ms from now until sub-window index begins, computed the way the index is.
local function msuntil(index)
  local ms = math.ceil(index * width - now)
  if ms < 0 then ms = 0 end
  while ms > 1 and math.floor((now + ms - 1) / width) >= index do ms = ms - 1 end
  while math.floor((now + ms) / width) < index do ms = ms + 1 end
  return ms
end
local function resetms()
  if total == 0 then return 0 end
  local j = 0
  while j < slots and newest - j >= 0 do
    local index = newest - j
    if counts[index % slots] > 0 then return msuntil(index + slots) end
    j = j + 1
  end
  return 0
end
if total + cost <= limit then
  if cost > 0 then
    local slot = newest % slots
    counts[slot] = counts[slot] + cost
    total = total + cost
    local out = {string.format('%.17g', buckets), string.format('%.17g', period), string.format('%.17g', newest)}
    for i = 0, buckets do out[i + 4] = string.format('%.17g', counts[i]) end
    local reset = resetms()
    call('SET', key, table.concat(out, ' '), 'PX', math.max(1, reset))
    return {limit - total, 0, reset}
  end
  return {limit - total, 0, resetms()}
end
local freed = 0
local retry = 0
for j = 0, buckets do
  freed = freed + counts[(newest + 1 + j) % slots]
  if total - freed + cost <= limit then
    retry = msuntil(newest + 1 + j)
    break
  end
end
local left = limit - total
if left < 0 then left = 0 end
return {left, retry, resetms()}
`,
};

/** Reads the server clock once: ms since the epoch, with µs precision. */
const clock = `local time = call('TIME')
local now = time[1] * 1000 + time[2] / 1000
`;

/** The single-key and batch scripts of one algorithm, from its one body. */
function scriptsOf(d: Decision): { readonly single: string; readonly batch: string } {
  const params = (first: (i: number) => string) =>
    d.params.map((name, i) => `local ${name} = ARGV[${first(i)}] + 0\n`).join('');
  const single = `
local call = redis.call
local math = math
local key = KEYS[1]
local cost = ARGV[1] + 0
${params((i) => String(i + 2))}${clock}${d.setup}${d.body}`;
  // Each key is decided in a protected call, so that a Redis error on one key (a key of the wrong
  // type) fails that decision only, as it would fail its own single-key call.
  const batch = `
local call = redis.call
local math = math
local n = #KEYS
${params((i) => `n + ${i + 1}`)}${clock}${d.setup}
local function decide(key, cost)
${d.body}
end
local replies = {}
for i = 1, n do
  local ok, reply = pcall(decide, KEYS[i], ARGV[i] + 0)
  if not ok then
    if type(reply) == 'table' then reply = reply.err end
    reply = tostring(reply)
  end
  replies[i] = reply
end
return replies
`;
  return { single, batch };
}

/** The scripts of every algorithm. */
export const rateLimitScripts: Readonly<
  Record<RateLimitAlgorithm, { readonly single: string; readonly batch: string }>
> = {
  gcra: scriptsOf(gcra),
  'token-bucket': scriptsOf(tokenBucket),
  'sliding-window': scriptsOf(slidingWindow),
};
