/**
 * The rate-limit algorithms in Lua, in parts that `rate-limit-scripts.ts` assembles into scripts.
 * Each part mirrors its TypeScript twin in `src/rate-limit/` expression for expression (same
 * operations in the same order, so the same doubles).
 *
 * Every part runs where these locals are defined: `limit`, `period`, `burst`, `buckets` (the rule),
 * `now` (the server's `TIME` in ms, read once per script call), `call` (`redis.call`) and `math`.
 * `load` reads the key's state string `stored` (or `false`) into the algorithm's locals, brought up
 * to `now`; `decide` decides a take of `cost`, writing the state (`SET ... PX`) only when allowed,
 * `cost > 0` and `commit`, and returns `{remaining, retryAfterMs, resetMs}`; `adjust` moves the
 * state by `delta` units (positive consumes, clamped) and leaves it in the locals; `encode` sets
 * `value`, the state string of the locals.
 */

/** One algorithm's Lua parts. */
export interface AlgorithmLua {
  /** Run once per rule after `now` is known, from the rule only. */
  readonly setup: string;
  readonly load: string;
  readonly decide: string;
  readonly adjust: string;
}

/** Whole ms, rounded up, of `expr` (≤ 0 is 0), into `name`: `ceilMs` of algorithm.ts. */
const ceil = (name: string, expr: string) =>
  `local ${name} = ${expr}\nif ${name} > 0 then ${name} = math.ceil(${name}) else ${name} = 0 end\n`;

/**
 * GCRA: the state is the theoretical arrival time in two parts, whole ms and then the rest in
 * token·ms, as in `gcra.ts` (one double cannot hold an epoch-sized time finely enough for high
 * rates): byte 1 and the two big-endian doubles (`struct.pack`, exact and about twice as cheap for
 * the server as formatting them). The text formats of earlier versions, "tatMs tatRest" and a
 * single number (the TAT in ms), are still read.
 */
const gcraEncode = `local ahead = nowrest + debt
local whole = math.floor(ahead / limit)
local value = struct.pack('>Bdd', 1, nowms + whole, ahead - whole * limit)
`;

const gcra: AlgorithmLua = {
  setup: `local tau = burst * period
local slack = period * 1e-9
local nowms = math.floor(now)
local nowrest = (now - nowms) * limit
`,
  load: `local before = 0
if stored then
  if string.byte(stored) == 1 then
    local w, r = struct.unpack('>dd', stored, 2)
    before = (w - nowms) * limit + (r - nowrest)
  else
    local w, r = string.match(stored, '^(%S+) (%S+)$')
    if w then
      before = (tonumber(w) - nowms) * limit + (tonumber(r) - nowrest)
    else
      local tat = tonumber(stored)
      if tat then before = (tat - now) * limit end
    end
  end
  if before < 0 then before = 0 end
end
`,
  decide: `local debt = before + cost * period
local short = debt - tau
if short > slack then
  local units = math.floor((tau - before) / period + 1e-9)
  if units < 0 then units = 0 end
${ceil('reset', '(before - slack) / limit')}${ceil('retry', '(short - slack) / limit')}  return {units, retry, reset}
end
${ceil('reset', '(debt - slack) / limit')}if cost > 0 and commit then
${gcraEncode}  call('SET', key, value, 'PX', math.max(1, reset))
end
local units = math.floor((tau - debt) / period + 1e-9)
if units < 0 then units = 0 end
return {units, 0, reset}
`,
  adjust: `local moved = before + delta * period
local debt
if delta > 0 then debt = math.min(moved, math.max(before, tau)) else debt = math.max(moved, 0) end
${gcraEncode}`,
};

/**
 * Token bucket: the state is level, last and periodMs (level in token·ms, below 0 after a take
 * allowed within the slack or once the server clock stepped back): byte 2 and three big-endian
 * doubles; the text "level last periodMs" of earlier versions is still read.
 */
const tokenBucketEncode = `local value = struct.pack('>Bddd', 2, level, now, period)
`;

const tokenBucket: AlgorithmLua = {
  setup: `local capacity = burst * period
local slack = period * 1e-9
`,
  load: `local level = capacity
local last = now
if stored then
  local l, t, p
  if string.byte(stored) == 2 then
    l, t, p = struct.unpack('>ddd', stored, 2)
  else
    l, t, p = string.match(stored, '^(%S+) (%S+) (%S+)$')
  end
  if p and tonumber(p) == period then
    level = tonumber(l)
    last = tonumber(t)
    if level > capacity then level = capacity end
  end
end
level = level + (now - last) * limit
if level > capacity then level = capacity end
`,
  decide: `local short = cost * period - level
local units
if short <= slack then
  level = -short
${ceil('reset', '(capacity - level - slack) / limit')}  if cost > 0 and commit then
${tokenBucketEncode}    call('SET', key, value, 'PX', math.max(1, reset))
  end
  units = math.floor(level / period + 1e-9)
  if units < 0 then units = 0 end
  return {units, 0, reset}
end
${ceil('reset', '(capacity - level - slack) / limit')}${ceil('retry', '(short - slack) / limit')}units = math.floor(level / period + 1e-9)
if units < 0 then units = 0 end
return {units, retry, reset}
`,
  adjust: `local moved = level - delta * period
if delta > 0 then level = math.max(moved, math.min(level, 0)) else level = math.min(moved, capacity) end
${tokenBucketEncode}`,
};

/** Sliding-window counter: the state is "buckets periodMs newest c0 … c_buckets". */
const slidingWindowEncode = `local out = {string.format('%.17g', buckets), string.format('%.17g', period), string.format('%.17g', newest)}
for i = 0, buckets do out[i + 4] = string.format('%.17g', counts[i]) end
local value = table.concat(out, ' ')
`;

const slidingWindow: AlgorithmLua = {
  setup: `local width = period / buckets
local slots = buckets + 1
`,
  load: `local current = math.floor(now / width)
local counts = {}
local newest = current
local total = 0
local fresh = true
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
`,
  decide: `-- Whole ms from now until sub-window index begins, computed the way the index is.
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
  end
  local reset = resetms()
  if cost > 0 and commit then
${slidingWindowEncode}    call('SET', key, value, 'PX', math.max(1, reset))
  end
  return {limit - total, 0, reset}
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
  adjust: `if delta > 0 then
  local added = math.min(delta, math.max(limit - total, 0))
  local slot = newest % slots
  counts[slot] = counts[slot] + added
  total = total + added
else
  local left = -delta
  local j = 0
  while j < slots and left > 0 do
    local slot = (newest + slots - j) % slots
    local back = math.min(counts[slot], left)
    counts[slot] = counts[slot] - back
    total = total - back
    left = left - back
    j = j + 1
  end
end
${slidingWindowEncode}`,
};

/** The Lua of every algorithm, by its name. */
export const algorithmLua = {
  gcra,
  'token-bucket': tokenBucket,
  'sliding-window': slidingWindow,
} as const;
