import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formFields, isFormContentType } from '../src/form-body.js';

describe('form bodies', () => {
  it('application/x-www-form-urlencoded in any case, with or without parameters; nothing else', () => {
    const types = [
      'application/x-www-form-urlencoded',
      'Application/X-WWW-Form-Urlencoded; charset=utf-8',
      'application/json',
      'multipart/form-data; boundary=x',
      undefined,
    ];
    assert.deepEqual(types.map(isFormContentType), [true, true, false, false, false]);
  });

  it('formFields: every field in order, repeats kept, + and %XX decoded as UTF-8, a bad escape left as written, a BOM skipped', () => {
    const body = Buffer.concat([
      Buffer.from([0xef, 0xbb, 0xbf]),
      Buffer.from('b=2&a=x+y&b=1&c=caf%C3%A9&d=100%&__proto__=p&=empty&flag'),
    ]);
    assert.deepEqual(formFields(body), [
      ['b', '2'],
      ['a', 'x y'],
      ['b', '1'],
      ['c', 'café'],
      ['d', '100%'],
      ['__proto__', 'p'],
      ['', 'empty'],
      ['flag', ''],
    ]);
    assert.deepEqual(formFields(Buffer.alloc(0)), []);
  });
});
