/**
 * The allowFrom matcher (src/cidr.ts) against node:net's BlockList, which it stands in for on the request path.
 */
import assert from 'node:assert/strict';
import { BlockList, isIP } from 'node:net';
import { describe, it } from 'node:test';
import { AddressList, cidrProblem, parseV6 } from '../src/cidr.js';
import { ClientIpResolver } from '../src/net/client-ip.js';
import { prng } from './support/fuzz.js';

describe('cidrProblem (config validation)', () => {
  it('accepts addresses and CIDR blocks of both families', () => {
    for (const ok of [
      '203.0.113.7',
      '203.0.113.0/24',
      '0.0.0.0/0',
      '10.0.0.0/8',
      '2001:db8::/32',
      '::1',
      '::/0',
      '::ffff:10.0.0.0/104',
      '2001:db8::1/128',
    ])
      assert.equal(cidrProblem(ok), undefined, ok);
  });
  it('names what is wrong with anything else', () => {
    assert.match(cidrProblem('github')!, /"github" is not an IP address or a CIDR block/);
    assert.match(cidrProblem('10.0.0.0/33')!, /prefix length after \/ must be 0 to 32 for an IPv4 address/);
    assert.match(cidrProblem('2001:db8::/129')!, /0 to 128 for an IPv6 address/);
    assert.match(cidrProblem('10.0.0.0/')!, /prefix length/);
    assert.match(cidrProblem('10.0.0.0/8/8')!, /prefix length/);
    assert.match(cidrProblem('10.0.0.256/24')!, /not an IP address/);
    assert.match(cidrProblem('fe80::1%eth0')!, /not an IP address/);
  });
});

describe('AddressList', () => {
  it('matches IPv4 blocks and single addresses', () => {
    const l = new AddressList(['203.0.113.0/24', '198.51.100.7', '10.0.0.0/8']);
    for (const ip of ['203.0.113.0', '203.0.113.255', '198.51.100.7', '10.200.3.4']) assert.ok(l.contains(ip), ip);
    for (const ip of ['203.0.114.1', '198.51.100.8', '11.0.0.1', 'unknown', '', '2001:db8::1'])
      assert.ok(!l.contains(ip), ip);
  });
  it('matches IPv6 blocks, whatever the spelling and with a zone', () => {
    const l = new AddressList(['2001:db8:abcd::/48', 'fe80::/10']);
    for (const ip of [
      '2001:db8:abcd::1',
      '2001:DB8:ABCD:ffff::',
      '2001:0db8:abcd:0000:0000:0000:0000:0001',
      'fe80::1%eth0',
      'febf::1',
    ])
      assert.ok(l.contains(ip), ip);
    for (const ip of ['2001:db8:abce::1', 'fec0::1', '::1', '203.0.113.1']) assert.ok(!l.contains(ip), ip);
  });
  it('an IPv4-mapped IPv6 client matches an IPv4 block, and an IPv4 client a ::ffff: block', () => {
    const v4 = new AddressList(['1.2.3.0/24']);
    assert.ok(v4.contains('::ffff:1.2.3.4'));
    assert.ok(v4.contains('::ffff:102:304')); // the same address in hex groups
    assert.ok(!v4.contains('::ffff:1.2.4.4'));
    const mapped = new AddressList(['::ffff:1.2.3.0/120']);
    assert.ok(mapped.contains('1.2.3.4'));
    assert.ok(!mapped.contains('1.2.4.4'));
  });
  it('/0 covers its whole family and nothing of the other', () => {
    assert.ok(new AddressList(['0.0.0.0/0']).contains('255.255.255.255'));
    assert.ok(!new AddressList(['0.0.0.0/0']).contains('2001:db8::1'));
    assert.ok(new AddressList(['::/0']).contains('2001:db8::1'));
  });
  it('agrees with node:net BlockList on random addresses and blocks', () => {
    const rand = prng(17);
    const byte = () => Math.floor(rand() * 256);
    const group = () => Math.floor(rand() * 65536).toString(16);
    for (let n = 0; n < 300; n++) {
      const v6 = rand() < 0.5;
      const net = v6 ? Array.from({ length: 8 }, group).join(':') : [byte(), byte(), byte(), byte()].join('.');
      const bits = Math.floor(rand() * (v6 ? 129 : 33));
      const list = new AddressList([`${net}/${bits}`]);
      const block = new BlockList();
      block.addSubnet(net, bits, v6 ? 'ipv6' : 'ipv4');
      for (let k = 0; k < 20; k++) {
        // Near the network (shares a random prefix) half the time, so both answers occur.
        const ip = v6
          ? net
              .split(':')
              .map((g, i) => (i < Math.floor(rand() * 9) ? g : group()))
              .join(':')
          : net
              .split('.')
              .map((b, i) => (i < Math.floor(rand() * 5) ? b : String(byte())))
              .join('.');
        assert.equal(list.contains(ip), block.check(ip, v6 ? 'ipv6' : 'ipv4'), `${ip} in ${net}/${bits}`);
      }
    }
  });
});

describe('parseV6', () => {
  it('reads the forms isIP accepts and refuses the others', () => {
    const out = new Uint16Array(8);
    for (const s of [
      '::',
      '::1',
      '1::',
      '1:2:3:4:5:6:7:8',
      '1:2:3:4:5:6:7::',
      '::2:3:4:5:6:7:8',
      '1::8',
      '::ffff:1.2.3.4',
      '64:ff9b::192.0.2.33',
    ])
      assert.ok(parseV6(s, s.length, out) && isIP(s) === 6, s);
    for (const s of [
      ':',
      ':1',
      '1:',
      '1::2::3',
      '1:2:3:4:5:6:7:8:9',
      '1:2:3:4:5:6:7',
      '12345::',
      'g::',
      '1:2:3:4:5:6:7:8::',
      '::1.2.3',
      '1.2.3.4',
    ])
      assert.ok(!parseV6(s, s.length, out), s);
  });
});

describe('the address allowFrom sees is the client after trusted proxies', () => {
  it('X-Forwarded-For from a trusted proxy names the client; from anyone else it is ignored', () => {
    const resolver = new ClientIpResolver(['127.0.0.1', '10.0.0.0/8']);
    const allow = new AddressList(['203.0.113.0/24']);
    assert.ok(allow.contains(resolver.resolve('::ffff:127.0.0.1', '203.0.113.9, 10.1.1.1')));
    assert.ok(!allow.contains(resolver.resolve('::ffff:127.0.0.1', '203.0.113.9, 198.51.100.1'))); // the right-most untrusted hop
    assert.ok(!allow.contains(resolver.resolve('198.51.100.1', '203.0.113.9'))); // not a trusted proxy: its header is not read
  });
});
