/**
 * ipKey on its own: what it refuses (bad options, no address, an address that is not one), then
 * the keys it gives, checked against Node's own parsers (the WHATWG URL serializer for canonical
 * IPv6 text, BlockList for subnet membership) on generated addresses.
 */
import { BlockList } from 'node:net';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ipKey } from './ip-key.js';

const from = (ip: string | undefined, remoteAddress?: string) => ({ ip, socket: { remoteAddress } });

describe('ipKey: what it refuses', () => {
  it.each([
    [0, 'got 0'],
    [129, 'got 129'],
    [56.5, 'got 56.5'],
    [true, 'got true'],
    ['56', 'got "56"'],
  ])('an ipv6Subnet of %s, naming the option', (ipv6Subnet, got) => {
    expect(() => ipKey(from('::1'), { ipv6Subnet: ipv6Subnet as never })).toThrow(
      new TypeError(`expected "ipv6Subnet" to be an integer from 1 to 128 or false, ${got}`),
    );
  });

  it('an unknown option, with the nearest known name, even for an IPv4 client', () => {
    expect(() => ipKey(from('203.0.113.7'), { ipv6subnet: 64 } as never)).toThrow(
      /unknown option "ipv6subnet" in ipKey options; did you mean "ipv6Subnet"\?/,
    );
  });

  it('a request without an address (the client hung up): an error, never a shared or empty key', () => {
    for (const request of [from(undefined), { socket: {} }, {}]) {
      expect(() => ipKey(request)).toThrow(TypeError);
    }
    expect(() => ipKey({})).toThrow(/no client address .* never let through unlimited/);
  });

  it.each([
    'garbage',
    '',
    'unknown',
    '203.0.113.7:5678',
    '[2001:db8::1]',
    '[2001:db8::1]:443',
    '01.2.3.4',
    '203.0.113.7%eth0',
    ' 203.0.113.7',
    '203.0.113.7, 198.51.100.1',
    '1:2:3:4:5:6:7:8:9',
    'fe80::1%',
  ])('an address that is not an IP address, %j, is an error naming it', (address) => {
    expect(() => ipKey(from(address))).toThrow(
      new RegExp(
        `^ipKey: expected the client address to be an IPv4 or IPv6 address, got ${JSON.stringify(address).replace(/[[\]]/g, '\\$&')}`,
      ),
    );
  });

  it('the error says what usually puts such an address there: a port, brackets, a proxy header trusted too far', () => {
    expect(() => ipKey(from('203.0.113.7:5678'))).toThrow(
      /, got "203\.0\.113\.7:5678" \(a port or brackets in it, or a proxy header resolved by a "trust proxy" setting that trusts the client\?\)$/,
    );
  });

  it('a non-string req.ip (a misbehaving middleware) is an error too', () => {
    expect(() => ipKey({ ip: 42 as never })).toThrow(/got 42/);
  });
});

describe('ipKey: the address it reads', () => {
  it('req.ip when the framework resolved it, else the socket address; never a header', () => {
    expect(ipKey(from('203.0.113.7', '10.0.0.1'))).toBe('203.0.113.7');
    expect(ipKey(from(undefined, '10.0.0.1'))).toBe('10.0.0.1');
    const headers = { 'x-forwarded-for': '198.51.100.9', forwarded: 'for=198.51.100.9' };
    expect(ipKey({ ...from(undefined, '10.0.0.1'), headers } as never)).toBe('10.0.0.1');
  });
});

describe('ipKey: the key', () => {
  it.each([
    ['203.0.113.7', '203.0.113.7'],
    ['::ffff:203.0.113.7', '203.0.113.7'],
    ['::FFFF:203.0.113.7', '203.0.113.7'],
    ['::ffff:cb00:7107', '203.0.113.7'],
    ['0:0:0:0:0:ffff:203.0.113.7', '203.0.113.7'],
    ['::1', '::/56'],
    ['::', '::/56'],
    ['2001:DB8:ABCD:AB12::1', '2001:db8:abcd:ab00::/56'],
    ['2001:db8:abcd:abff:ffff:ffff:ffff:ffff', '2001:db8:abcd:ab00::/56'],
    ['2001:0db8:abcd:ab12:0000:0000:0000:0001', '2001:db8:abcd:ab00::/56'],
    ['fe80::1%eth0', 'fe80::%eth0/56'],
    ['::ffff:0:203.0.113.7', '::/56'],
    ['64:ff9b::203.0.113.7', '64:ff9b::/56'],
  ])('%s → %s (default /56)', (address, key) => {
    expect(ipKey(from(address))).toBe(key);
  });

  it.each([
    [false, '2001:DB8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
    [false, '2001:db8:0:0:1:0:0:0', '2001:db8:0:0:1::'],
    [false, '1:0:2:0:3:0:4:0', '1:0:2:0:3:0:4:0'],
    [false, '::1', '::1'],
    [false, 'fe80::1%eth0', 'fe80::1%eth0'],
    [false, '::ffff:203.0.113.7', '203.0.113.7'],
    [64, '2001:db8:abcd:ab12:1:2:3:4', '2001:db8:abcd:ab12::/64'],
    [1, 'ffff::1', '8000::/1'],
    [127, '2001:db8::3', '2001:db8::2/127'],
    [128, '2001:db8::3', '2001:db8::3/128'],
    [60, '2001:db8:abcd:ab1f::', '2001:db8:abcd:ab10::/60'],
  ])('ipv6Subnet %s: %s → %s', (ipv6Subnet, address, key) => {
    expect(ipKey(from(address), { ipv6Subnet: ipv6Subnet as number | false })).toBe(key);
  });

  it.each([
    ['1::ffff:203.0.113.7', '1::ffff:cb00:7107'],
    ['0:1::ffff:203.0.113.7', '0:1::ffff:cb00:7107'],
    ['0:0:1::ffff:203.0.113.7', '::1:0:0:ffff:cb00:7107'],
    ['::1:0:ffff:203.0.113.7', '::1:0:ffff:cb00:7107'],
    ['::1:ffff:203.0.113.7', '::1:ffff:cb00:7107'],
  ])('%s only looks IPv4-mapped (a bit set in its first 80): an IPv6 key, %s', (address, key) => {
    expect(ipKey(from(address), { ipv6Subnet: false })).toBe(key);
  });

  it('gives every spelling of an address one key: canonical RFC 5952 text, as the URL parser writes it', () => {
    fc.assert(
      fc.property(fc.ipV6(), (address) => {
        const canonical = new URL(`http://[${address}]`).hostname.slice(1, -1);
        const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(canonical);
        const key = ipKey(from(address), { ipv6Subnet: false });
        if (mapped === null) expect(key).toBe(canonical);
        else {
          const [high, low] = [Number.parseInt(mapped[1]!, 16), Number.parseInt(mapped[2]!, 16)];
          expect(key).toBe(`${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`);
        }
        expect(ipKey(from(address.toUpperCase()), { ipv6Subnet: false })).toBe(key);
      }),
    );
  });

  it('the /n key is the network that holds the address, with no host bits set', () => {
    fc.assert(
      fc.property(fc.ipV6(), fc.integer({ min: 1, max: 128 }), (address, prefix) => {
        const key = ipKey(from(address), { ipv6Subnet: prefix });
        fc.pre(key.includes('/'));
        const network = key.slice(0, key.lastIndexOf('/'));
        expect(key.endsWith(`/${prefix}`)).toBe(true);
        const subnet = new BlockList();
        subnet.addSubnet(network, prefix, 'ipv6');
        expect(subnet.check(address, 'ipv6')).toBe(true);
        // No host bits: the network is its own /n key.
        expect(ipKey(from(network), { ipv6Subnet: prefix })).toBe(key);
      }),
    );
  });

  it('addresses of one /56 share a key; the next /56 does not', () => {
    const keys = ['2001:db8:0:100::1', '2001:db8:0:1ff:ffff::9', '2001:db8:0:200::1'].map((a) =>
      ipKey(from(a)),
    );
    expect(keys).toEqual(['2001:db8:0:100::/56', '2001:db8:0:100::/56', '2001:db8:0:200::/56']);
  });
});
