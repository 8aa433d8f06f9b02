/**
 * A rate-limit key from the client's address, as express-rate-limit's `ipKeyGenerator` makes it:
 * the address the framework resolved, IPv4 as it is, IPv6 grouped by subnet (one customer is
 * usually given a whole /56 or /64, so keying single IPv6 addresses limits nobody).
 */
import { isIP } from 'node:net';
import { readOptions, type Schema, withDefault } from '../core/read-options.js';
import { show } from '../core/validate.js';

/**
 * The parts of a request {@link ipKey} reads: node:http's `IncomingMessage`, Express's `Request`
 * and Fastify's `FastifyRequest` all fit.
 */
export interface IpKeyRequest {
  /**
   * The client address as the framework resolved it: Express's `req.ip` (from `X-Forwarded-For`
   * only as `trust proxy` allows), Fastify's `request.ip` (as `trustProxy` allows). Absent on a
   * plain node:http request.
   */
  readonly ip?: string | undefined;
  /** The connection; its `remoteAddress` is `undefined` once the client has hung up. */
  readonly socket?: { readonly remoteAddress?: string | undefined } | undefined;
}

/** Options of {@link ipKey}. */
export interface IpKeyOptions {
  /**
   * The prefix length IPv6 clients are grouped by: an integer from 1 to 128 (the key is then the
   * network, `2001:db8:abcd:ab00::/56`), or `false` to key each IPv6 address on its own (no
   * prefix: `2001:db8:abcd:ab12::1`). IPv4 addresses are never grouped.
   * @default 56 (as express-rate-limit's `ipv6Subnet`)
   */
  readonly ipv6Subnet?: number | false | undefined;
}

const subnet = (name: string, value: unknown): number | false => {
  if (value === false || (Number.isInteger(value) && (value as number) >= 1 && (value as number) <= 128)) {
    return value as number | false;
  }
  throw new TypeError(`expected "${name}" to be an integer from 1 to 128 or false, got ${show(value)}`);
};

const schema = { ipv6Subnet: withDefault<number | false>(56, subnet) } satisfies Schema<IpKeyOptions>;

/**
 * The rate-limit key of a request's client address, for `rateLimitMiddleware({ key: ipKey })` and
 * `fastifyRateLimit`, or inside your own key (`req.user?.id ?? ipKey(req)`).
 *
 * - **Which address.** `req.ip` when the request has one (Express, Fastify: the address as their
 *   proxy settings resolve it), else `req.socket.remoteAddress`. It never reads `X-Forwarded-For`
 *   or `Forwarded` itself: behind a proxy, set Express's `trust proxy` or Fastify's `trustProxy` to
 *   your proxies, so that the framework resolves the client address and a client cannot choose
 *   its own key by sending the header.
 * - **The key.** An IPv4 address as it is (`203.0.113.7`); an IPv4-mapped IPv6 address as the IPv4
 *   address (`::ffff:203.0.113.7` → `203.0.113.7`, so a dual-stack socket does not give one client
 *   two keys); another IPv6 address as its network, in canonical form (RFC 5952: lower case,
 *   longest zero run compressed) with the prefix length: `2001:DB8:ABCD:AB12::1` →
 *   `2001:db8:abcd:ab00::/56`. A zone id (`fe80::1%eth0`, a link-local address) is kept, in RFC
 *   4007 form (`fe80::%eth0/56`): it names the link the client is on.
 * - **Failure.** Throws a `TypeError` when the request has no address (the client hung up) or its
 *   address is not an IP address (`1.2.3.4:5678` with a port, `unknown` from a proxy's header), and
 *   for a bad `ipv6Subnet`. In the rate-limit adapters that fails the request (500 via
 *   `next(error)`, Fastify's error reply): it is never let through unlimited, and never lumped
 *   with other requests under a shared key.
 *
 * @example
 * app.set('trust proxy', 'loopback'); // Express behind a proxy on the same host
 * app.use(rateLimitMiddleware({ limiter, key: ipKey }));
 * // a /64 per client, and signed-in users by account
 * app.use(rateLimitMiddleware({ limiter, key: (req: Request) => req.get('x-account') ?? ipKey(req, { ipv6Subnet: 64 }) }));
 */
export function ipKey(request: IpKeyRequest, options?: IpKeyOptions): string {
  const { ipv6Subnet } = readOptions('ipKey options', options, schema);
  const address = request.ip ?? request.socket?.remoteAddress;
  if (address === undefined) {
    throw new TypeError(
      'ipKey: the request has no client address (req.ip and req.socket.remoteAddress are undefined ' +
        'once the client has hung up): it is refused, never let through unlimited',
    );
  }
  const family = isIP(address);
  if (family === 4) return address;
  if (family !== 6) {
    throw new TypeError(
      `ipKey: expected the client address to be an IPv4 or IPv6 address, got ${show(address)} ` +
        '(a port or brackets in it, or a proxy header resolved by a "trust proxy" setting that trusts the client?)',
    );
  }
  return ipv6Key(address, ipv6Subnet);
}

/** The key of a valid IPv6 address (`isIP` said so), maybe with a zone id. */
function ipv6Key(address: string, prefix: number | false): string {
  const zoneAt = address.indexOf('%');
  const groups = parseIpv6(zoneAt === -1 ? address : address.slice(0, zoneAt));
  if (isMappedIpv4(groups)) {
    return `${groups[6]! >> 8}.${groups[6]! & 0xff}.${groups[7]! >> 8}.${groups[7]! & 0xff}`;
  }
  const zone = zoneAt === -1 ? '' : address.slice(zoneAt);
  if (prefix === false) return formatIpv6(groups) + zone;
  // Stryker disable next-line EqualityOperator: (i <= 8) masking a ninth place only adds groups[8] = 0, which formatIpv6 never reads; (i >= 8) is killed by every /n key
  for (let i = 0; i < 8; i++) {
    const kept = Math.min(16, Math.max(0, prefix - 16 * i));
    groups[i] = groups[i]! & (0xffff << (16 - kept));
  }
  return `${formatIpv6(groups)}${zone}/${prefix}`;
}

/**
 * The eight 16-bit groups of a valid IPv6 address without a zone id (`isIP` checked it): `::`
 * expanded, a dotted IPv4 tail as two groups. One pass over the characters: keys are made per
 * request.
 */
function parseIpv6(text: string): number[] {
  const groups: number[] = [];
  // Stryker disable next-line UnaryOperator: (+1) an address without "::" has all 8 groups, so splicing 8 − 8 zeros in at 1 changes nothing; with "::" the gap is always set
  let gapAt = -1;
  let value = 0;
  let digits = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x3a /* : */) {
      if (digits > 0) {
        groups.push(value);
      } else {
        // Stryker disable next-line ConditionalExpression,EqualityOperator: (true, >=) the address is valid (isIP), so a colon at 0 is the first of a leading "::", whose second colon sets the same gapAt (0)
        if (i > 0) gapAt = groups.length; // the second colon of "::"
      }
      value = 0;
      digits = 0;
    } else if (c === 0x2e /* . */) {
      // The digits read so far were the first number of a dotted IPv4 tail, which ends the address.
      const octets = text
        .slice(i - digits)
        .split('.')
        .map(Number);
      groups.push((octets[0]! << 8) | octets[1]!, (octets[2]! << 8) | octets[3]!);
      digits = 0;
      break;
    } else {
      value = value * 16 + (c <= 0x39 ? c - 0x30 : (c | 0x20) - 0x57);
      digits++;
    }
  }
  if (digits > 0) groups.push(value);
  // Stryker disable next-line ConditionalExpression: (true) an address without "::" has all 8 groups: splicing 8 − 8 zeros in changes nothing; (false) is killed by every "::" address
  if (gapAt !== -1) groups.splice(gapAt, 0, ...new Array<number>(8 - groups.length).fill(0));
  return groups;
}

/** `::ffff:a.b.c.d`: 80 zero bits, 16 one bits, then the IPv4 address. */
function isMappedIpv4(groups: readonly number[]): boolean {
  return (
    groups[5] === 0xffff &&
    groups[0] === 0 &&
    groups[1] === 0 &&
    groups[2] === 0 &&
    groups[3] === 0 &&
    groups[4] === 0
  );
}

/** RFC 5952 text: lower-case hex without leading zeros, the first longest run of 2+ zero groups as `::`. */
function formatIpv6(groups: readonly number[]): string {
  let bestAt = -1;
  let bestLength = 1;
  // Stryker disable next-line EqualityOperator: (i <= 8) at 8 there is no group: no run starts and the loop ends; (i >= 8) is killed by the canonical-text tests
  for (let i = 0; i < 8; ) {
    let end = i;
    // Stryker disable next-line ConditionalExpression,EqualityOperator: (end < 8 → true, end <= 8) groups holds 8: groups[8] is undefined, not 0, so a run ends there anyway; the variants of groups[end] === 0 and (end >= 8) are killed by the canonical-text tests
    while (end < 8 && groups[end] === 0) end++;
    if (end - i > bestLength) {
      bestAt = i;
      bestLength = end - i;
    }
    // Stryker disable next-line ConditionalExpression: (true) stepping one place at a time also looks at the tails of zero runs, each shorter than its run, and only a longer run replaces the best: the same text, found slower; (false) loops for ever
    i = end === i ? i + 1 : end;
  }
  let text = '';
  for (let i = 0; i < 8; i++) {
    if (i === bestAt) {
      text += '::';
      i += bestLength - 1;
      continue;
    }
    if (i > 0 && i !== bestAt + bestLength) text += ':';
    text += groups[i]!.toString(16);
  }
  return text;
}
