import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { splitText } from '../../src/runtime/split.js';

const isHigh = (c: number) => c >= 0xd800 && c <= 0xdbff;
const isLow = (c: number) => c >= 0xdc00 && c <= 0xdfff;

/** Text made of the pieces that matter: words, spaces, newlines, blank lines, emoji (surrogate pairs), CJK. */
const pieces = fc.constantFrom(
  'a',
  'word',
  'longerword',
  ' ',
  '  ',
  '\t',
  '\n',
  '\n\n',
  '\r\n',
  '😀',
  '👍🏽',
  '漢字',
  'é',
  '\u00a0',
);
const textArb = fc.oneof(
  fc.array(pieces, { maxLength: 200 }).map((a) => a.join('')),
  fc.string({ unit: 'grapheme', maxLength: 300 }),
  fc.string({ unit: 'binary', maxLength: 300 }), // includes lone surrogates
);

describe('splitText', () => {
  it('property: every chunk fits, none is empty, and joining them gives the text back', () => {
    fc.assert(
      fc.property(textArb, fc.integer({ min: 2, max: 60 }), (text, max) => {
        const chunks = splitText(text, max);
        assert.equal(chunks.join(''), text);
        for (const c of chunks) {
          assert.ok(c.length <= max, `chunk of ${c.length} > ${max}`);
          assert.ok(c.length > 0, 'empty chunk');
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('property: a surrogate pair is never split across chunks', () => {
    fc.assert(
      fc.property(textArb, fc.integer({ min: 2, max: 40 }), (text, max) => {
        const chunks = splitText(text, max);
        for (let i = 0; i + 1 < chunks.length; i++) {
          const a = chunks[i] ?? '';
          const b = chunks[i + 1] ?? '';
          const torn = isHigh(a.charCodeAt(a.length - 1)) && isLow(b.charCodeAt(0));
          assert.ok(!torn, `pair torn between chunk ${i} and ${i + 1}`);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('property: text within the limit is one chunk; empty text is none', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 50 }), (text) => {
        assert.deepEqual(splitText(text, 50), text ? [text] : []);
      }),
    );
  });

  it('property: a chunk only ends mid-word when it holds no whitespace at all to break at', () => {
    // Text of words separated by single spaces: whenever a chunk (not the last) ends inside a word, it must contain
    // no space other than possibly leading ones (i.e. the word was longer than the limit).
    const wordsArb = fc
      .array(fc.stringMatching(/^[a-z]{1,12}$/), { minLength: 1, maxLength: 60 })
      .map((w) => w.join(' '));
    fc.assert(
      fc.property(wordsArb, fc.integer({ min: 2, max: 40 }), (text, max) => {
        const chunks = splitText(text, max);
        for (let i = 0; i + 1 < chunks.length; i++) {
          const c = chunks[i] ?? '';
          const next = chunks[i + 1] ?? '';
          const endsMidWord = /[a-z]$/.test(c) && /^[a-z]/.test(next);
          if (endsMidWord)
            assert.ok(!/ /.test(c.trimStart()), `split mid-word although ${JSON.stringify(c)} had a space`);
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('prefers a paragraph break over a later line break', () => {
    const text = 'para one line\n\npara two a\npara two b';
    assert.deepEqual(splitText(text, 30), ['para one line\n\n', 'para two a\npara two b']);
  });

  it('prefers a line break over a later word break', () => {
    const text = 'first line\nsecond line words here';
    assert.deepEqual(splitText(text, 25), ['first line\n', 'second line words here']);
  });

  it('breaks between words when there is no newline, keeping the spaces with the earlier chunk', () => {
    assert.deepEqual(splitText('alpha beta gamma delta', 12), ['alpha beta ', 'gamma delta']);
  });

  it('treats a line of only spaces between newlines as a paragraph break', () => {
    assert.deepEqual(splitText('aaaa\n  \nbbbb cccc', 12), ['aaaa\n  \n', 'bbbb cccc']);
  });

  it('cuts a word longer than the limit hard, but not through an emoji', () => {
    assert.deepEqual(splitText('abcdefghij', 4), ['abcd', 'efgh', 'ij']);
    assert.deepEqual(splitText('abc😀def', 4), ['abc', '😀de', 'f']);
  });

  it('does not make a blank first chunk out of leading newlines', () => {
    const chunks = splitText(`\n\n${'x'.repeat(10)}`, 6);
    assert.notEqual(chunks[0]?.trim(), '');
    assert.equal(chunks.join(''), `\n\n${'x'.repeat(10)}`);
  });

  it('handles a long reply quickly', () => {
    const text = `${'Lorem ipsum dolor sit amet, consectetur adipiscing elit.\n'.repeat(20)}\n`.repeat(200);
    const started = performance.now();
    const chunks = splitText(text, 4096);
    assert.ok(performance.now() - started < 500);
    assert.equal(chunks.join(''), text);
    assert.ok(
      chunks.every((c) => c.endsWith('\n\n') || c === chunks.at(-1)),
      'cuts at paragraph breaks',
    );
  });

  it('rejects a limit below 2', () => {
    assert.throws(() => splitText('abc', 1), RangeError);
    assert.throws(() => splitText('abc', 2.5), RangeError);
  });
});
