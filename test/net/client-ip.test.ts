import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { addressBucket, canonicalIp, ClientIpResolver } from '../../src/net/client-ip.js';

describe('canonicalIp', () => {
  it('unwraps IPv4-mapped IPv6 and lower-cases IPv6', () => {
    assert.equal(canonicalIp('::ffff:203.0.113.5'), '203.0.113.5');
    assert.equal(canonicalIp('::FFFF:203.0.113.5'), '203.0.113.5');
    assert.equal(canonicalIp('2001:DB8::1'), '2001:db8::1');
    assert.equal(canonicalIp('203.0.113.5'), '203.0.113.5');
  });
  it('keeps a ::ffff: address that is not a mapped IPv4 as IPv6', () => {
    assert.equal(canonicalIp('::ffff:abcd'), '::ffff:abcd');
  });
  it('writes one IPv6 address one way, however it was spelled (RFC 5952: lower case, zeros compressed)', () => {
    const spellings = [
      '2001:db8::1',
      '2001:DB8::1',
      '2001:0db8:0000:0000:0000:0000:0000:0001',
      '2001:db8:0:0::1',
      '2001:db8::0:1',
      '2001:0DB8::0001',
    ];
    assert.deepEqual(new Set(spellings.map(canonicalIp)), new Set(['2001:db8::1']));
    assert.equal(canonicalIp('2001:db8:0:0:1:0:0:1'), '2001:db8::1:0:0:1'); // the first of two equal zero runs
    assert.equal(canonicalIp('fe80::1%ETH0'), 'fe80::1%eth0');
  });
  it('folds IPv4-mapped IPv6 written in hex groups into IPv4', () => {
    assert.equal(canonicalIp('::ffff:cb00:7107'), '203.0.113.7');
    assert.equal(canonicalIp('::FFFF:CB00:7107'), '203.0.113.7');
    assert.equal(canonicalIp('0:0:0:0:0:ffff:203.0.113.7'), '203.0.113.7');
  });
  it('leaves what is not an IP address as it came (lower-cased)', () => {
    assert.equal(canonicalIp('Not-An-IP'), 'not-an-ip');
  });
  it('names a missing address "unknown"', () => {
    assert.equal(canonicalIp(undefined), 'unknown');
    assert.equal(canonicalIp(''), 'unknown');
  });
});

describe('addressBucket', () => {
  it('is the address itself for IPv4 and the /64 for IPv6', () => {
    assert.equal(addressBucket('203.0.113.7'), '203.0.113.7');
    assert.equal(addressBucket('2001:db8::1'), '2001:db8::/64');
    assert.equal(addressBucket('2001:db8::ffff:1'), '2001:db8::/64');
    assert.equal(addressBucket('2001:db8:0:0:aaaa:bbbb:cccc:dddd'), '2001:db8::/64');
    assert.equal(addressBucket('2001:db8:0:1::1'), '2001:db8:0:1::/64');
    assert.equal(addressBucket('::1'), '::/64');
    assert.equal(addressBucket('unknown'), 'unknown');
  });
});

describe('ClientIpResolver', () => {
  it('canonicalises socket and forwarded addresses', () => {
    const r = new ClientIpResolver(['10.0.0.1']);
    assert.equal(r.resolve('2001:0DB8:0::1', undefined), '2001:db8::1');
    assert.equal(r.resolve('::ffff:10.0.0.1', '::FFFF:CB00:7107'), '203.0.113.7');
    assert.equal(r.resolve('10.0.0.1', '2001:DB8:0:0::1'), '2001:db8::1');
  });

  it('without trusted proxies uses the socket address and ignores X-Forwarded-For', () => {
    const r = new ClientIpResolver([]);
    assert.equal(r.resolve('198.51.100.7', '203.0.113.5'), '198.51.100.7');
    assert.equal(r.resolve('::ffff:198.51.100.7', '203.0.113.5'), '198.51.100.7');
    assert.equal(r.resolve(undefined, '203.0.113.5'), 'unknown');
  });

  it('ignores X-Forwarded-For from a socket that is not a trusted proxy', () => {
    const r = new ClientIpResolver(['10.0.0.1']);
    assert.equal(r.resolve('198.51.100.7', '203.0.113.5'), '198.51.100.7');
  });

  it('behind a trusted proxy takes the right-most untrusted X-Forwarded-For hop', () => {
    const r = new ClientIpResolver(['10.0.0.1']);
    assert.equal(r.resolve('10.0.0.1', '203.0.113.5'), '203.0.113.5');
    assert.equal(r.resolve('10.0.0.1', ' 203.0.113.5 '), '203.0.113.5');
    assert.equal(r.resolve('10.0.0.1', undefined), '10.0.0.1');
  });

  it('ignores forged left-most entries', () => {
    const r = new ClientIpResolver(['10.0.0.1']);
    // the client sent "X-Forwarded-For: 1.1.1.1, 8.8.8.8"; the proxy appended the real address
    assert.equal(r.resolve('10.0.0.1', '1.1.1.1, 8.8.8.8, 203.0.113.5'), '203.0.113.5');
    // a client pretending to be a trusted proxy itself gains nothing either
    assert.equal(r.resolve('10.0.0.1', '10.0.0.1, 203.0.113.5'), '203.0.113.5');
  });

  it('skips trusted hops of a proxy chain, right to left', () => {
    const r = new ClientIpResolver(['10.0.0.0/8']);
    assert.equal(r.resolve('10.0.0.1', '1.1.1.1, 203.0.113.5, 10.1.2.3, 10.9.9.9'), '203.0.113.5');
  });

  it('joins repeated X-Forwarded-For headers in order', () => {
    const r = new ClientIpResolver(['10.0.0.1']);
    assert.equal(r.resolve('10.0.0.1', ['1.1.1.1', '203.0.113.5']), '203.0.113.5');
    assert.equal(r.resolve('10.0.0.1', ['1.1.1.1, 203.0.113.9', '10.0.0.1']), '203.0.113.9');
  });

  it('matches IPv4 CIDR blocks', () => {
    const r = new ClientIpResolver(['10.0.0.0/8', '192.168.1.0/24']);
    assert.equal(r.resolve('10.255.1.2', '203.0.113.5'), '203.0.113.5');
    assert.equal(r.resolve('192.168.1.77', '203.0.113.5'), '203.0.113.5');
    assert.equal(r.resolve('192.168.2.1', '203.0.113.5'), '192.168.2.1');
    assert.equal(r.resolve('11.0.0.1', '203.0.113.5'), '11.0.0.1');
  });

  it('matches IPv6 addresses and CIDR blocks', () => {
    const r = new ClientIpResolver(['fd00::/8', '2001:db8::10']);
    assert.equal(r.resolve('fd12:3456::1', '2001:db8:ffff::5'), '2001:db8:ffff::5');
    assert.equal(r.resolve('2001:DB8::10', '203.0.113.5'), '203.0.113.5');
    assert.equal(r.resolve('2001:db8::11', '203.0.113.5'), '2001:db8::11');
    assert.equal(r.resolve('fd12::1', '2001:DB8:AAAA::5'), '2001:db8:aaaa::5');
    // a v6 proxy forwarding for a v4 client, and a v4 proxy for a v6 one
    const mixed = new ClientIpResolver(['fd00::/8', '10.0.0.0/8']);
    assert.equal(mixed.resolve('fd00::1', '203.0.113.5'), '203.0.113.5');
    assert.equal(mixed.resolve('10.0.0.1', '2001:db8::5'), '2001:db8::5');
  });

  it('canonicalises IPv4-mapped IPv6 on the socket, in the header and in the trusted list', () => {
    const r = new ClientIpResolver(['10.0.0.0/8']);
    assert.equal(r.resolve('::ffff:10.0.0.1', '::ffff:203.0.113.5'), '203.0.113.5');
    assert.equal(r.resolve('::ffff:198.51.100.1', '203.0.113.5'), '198.51.100.1');
    const mapped = new ClientIpResolver(['::ffff:10.0.0.1']);
    assert.equal(mapped.resolve('10.0.0.1', '203.0.113.5'), '203.0.113.5');
    assert.equal(mapped.resolve('::ffff:10.0.0.1', '203.0.113.5'), '203.0.113.5');
  });

  it('accepts an IPv4-mapped IPv6 CIDR (valid in gateway.trustedProxies) and trusts the v4 addresses it covers', () => {
    const r = new ClientIpResolver(['::ffff:10.0.0.0/104']);
    assert.equal(r.resolve('10.0.0.1', '203.0.113.5'), '203.0.113.5');
    assert.equal(r.resolve('::ffff:10.0.0.1', '203.0.113.5'), '203.0.113.5');
    assert.equal(r.resolve('11.0.0.1', '203.0.113.5'), '11.0.0.1');
  });

  it('trusts a mapped socket address covered by a v4-mapped IPv6 block', () => {
    // ::ffff:10.0.0.0/104 is 10.0.0.0/8 written as IPv6. (::ffff:0:0/96 would trust every IPv4 address,
    // the forwarded hop included.)
    const r = new ClientIpResolver(['::ffff:10.0.0.0/104']);
    assert.equal(r.resolve('::ffff:10.0.0.1', '203.0.113.5'), '203.0.113.5');
    assert.equal(r.resolve('10.0.0.1', '203.0.113.5'), '203.0.113.5');
    assert.equal(r.resolve('11.0.0.1', '203.0.113.5'), '11.0.0.1');
  });

  it('falls back to the proxy address on garbage it cannot see past', () => {
    const r = new ClientIpResolver(['10.0.0.1']);
    assert.equal(r.resolve('10.0.0.1', 'not-an-ip'), '10.0.0.1');
    assert.equal(r.resolve('10.0.0.1', ''), '10.0.0.1');
    assert.equal(r.resolve('10.0.0.1', ' , ,'), '10.0.0.1');
    assert.equal(r.resolve('10.0.0.1', '203.0.113.5, <script>'), '10.0.0.1');
    assert.equal(r.resolve('10.0.0.1', '203.0.113.5:4711'), '10.0.0.1');
    // garbage to the left of the right-most untrusted hop does not matter
    assert.equal(r.resolve('10.0.0.1', 'garbage, 203.0.113.5'), '203.0.113.5');
    // no key is ever built from the header's raw text
    for (const xff of ['a'.repeat(10_000), '999.1.1.1', '1.2.3.4.5', 'unknown']) {
      assert.equal(r.resolve('10.0.0.1', xff), '10.0.0.1');
    }
  });
});
