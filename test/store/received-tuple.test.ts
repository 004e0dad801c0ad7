/** The positional encoding of received records (store/record-encoding.ts), shared by both drivers' received_log blocks. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { receivedToTuple, type ReceivedTuple, tupleToReceived } from '../../src/store/record-encoding.js';
import type { ReceivedHook } from '../../src/store/types.js';

const base: ReceivedHook = {
  at: 1,
  method: 'POST',
  path: 'wake',
  clientIp: '127.0.0.1',
  status: 200,
  code: null,
  eventIds: ['e'],
  runIds: [],
  mappingId: null,
  durationMs: 1.5,
};

describe('received record tuples', () => {
  it('a record without a token id or unknown fields keeps the 10-element shape of older blocks', () => {
    assert.equal(receivedToTuple(base).length, 10);
    assert.equal(receivedToTuple({ ...base, tokenId: null }).length, 10);
  });

  it('the token id is a trailing element; unknown fields before it are null when there are none', () => {
    assert.deepEqual(receivedToTuple({ ...base, tokenId: 'ci' }).slice(10), [null, 'ci']);
    assert.deepEqual(receivedToTuple({ ...base, tokenId: 'ci', unknownFields: ['a'] }).slice(10), [['a'], 'ci']);
    assert.deepEqual(
      tupleToReceived(JSON.parse(JSON.stringify(receivedToTuple({ ...base, tokenId: 'ci' }))) as ReceivedTuple),
      { ...base, tokenId: 'ci' },
    );
  });

  it('the request id is the last element; the token id and unknown fields before it are null when absent', () => {
    assert.deepEqual(receivedToTuple({ ...base, reqId: 'r1' }).slice(10), [null, null, 'r1']);
    assert.deepEqual(receivedToTuple({ ...base, tokenId: 'ci', reqId: 'r1' }).slice(10), [null, 'ci', 'r1']);
    const back = (r: ReceivedHook) => tupleToReceived(JSON.parse(JSON.stringify(receivedToTuple(r))) as ReceivedTuple);
    assert.deepEqual(back({ ...base, reqId: 'r1' }), { ...base, reqId: 'r1' });
    assert.deepEqual(back({ ...base, tokenId: 'ci', unknownFields: ['a'], reqId: 'r1' }), {
      ...base,
      tokenId: 'ci',
      unknownFields: ['a'],
      reqId: 'r1',
    });
  });

  it('blocks written before token ids (10 or 11 elements) still decode, with no token id', () => {
    const old10 = JSON.parse('[1,"POST","wake","127.0.0.1",200,null,["e"],[],null,1.5]') as ReceivedTuple;
    const old11 = JSON.parse('[1,"POST","wake","127.0.0.1",200,null,["e"],[],null,1.5,["sesionKey"]]') as ReceivedTuple;
    assert.deepEqual(tupleToReceived(old10), base);
    assert.deepEqual(tupleToReceived(old11), { ...base, unknownFields: ['sesionKey'] });
    assert.equal(tupleToReceived(old11).tokenId, undefined);
  });
});
