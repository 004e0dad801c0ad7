import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { hookSummary, summaryEvent } from '../../src/runtime/summary.js';
import { logSafe as sanitizeForLog, truncateWithEllipsis } from '../../src/text-safe.js';

// String.prototype.isWellFormed is ES2024 (the project targets ES2023 lib): look for a lone surrogate instead.
const wellFormed = (s: string): boolean =>
  !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(s);

describe('hookSummary', () => {
  it('ok reply', () => {
    assert.equal(hookSummary('Email', { ok: true, reply: 'done' }), 'Hook Email: done');
  });

  it('error', () => {
    assert.equal(
      hookSummary('Email', { ok: false, error: 'model not allowed: x/y' }),
      'Hook Email (error): model not allowed: x/y',
    );
    assert.equal(hookSummary('Email', { ok: false, error: '  ' }), 'Hook Email (error): unknown error');
  });

  it('empty ok reply', () => {
    assert.equal(hookSummary('Email', { ok: true, reply: '' }), 'Hook Email: (no reply)');
    assert.equal(hookSummary('Email', { ok: true, reply: ' \n\t\u0000 ' }), 'Hook Email: (no reply)');
  });

  it('trims, collapses whitespace, removes control characters', () => {
    assert.equal(
      hookSummary('Email', { ok: true, reply: '  line one\n\n  line\ttwo\r\n' }),
      'Hook Email: line one line two',
    );
    assert.equal(
      hookSummary('Email', { ok: true, reply: 'a\u0000b\u001b[31mred\u007f\u0085' }),
      'Hook Email: ab[31mred',
    );
  });

  it('truncates to 2000 characters with an ellipsis', () => {
    const line = hookSummary('E', { ok: true, reply: 'x'.repeat(5000) });
    const body = line.slice('Hook E: '.length);
    assert.equal(body.length, 2000);
    assert.ok(body.endsWith('…'));
    assert.equal(hookSummary('E', { ok: true, reply: 'x'.repeat(2000) }).length, 'Hook E: '.length + 2000);
  });

  it('never splits a surrogate pair when truncating', () => {
    const body = hookSummary('E', { ok: true, reply: `${'x'.repeat(1998)}😀😀` }).slice('Hook E: '.length);
    assert.equal(body, `${'x'.repeat(1998)}…`);
    assert.ok(wellFormed(body));
  });

  it('sanitises the name and defaults it', () => {
    assert.equal(hookSummary('  Git\nHub \u0000 push ', { ok: true, reply: 'r' }), 'Hook Git Hub push: r');
    assert.equal(hookSummary('', { ok: true, reply: 'r' }), 'Hook Hook: r');
    assert.equal(hookSummary(' \n ', { ok: false, error: 'e' }), 'Hook Hook (error): e');
    const long = hookSummary('n'.repeat(500), { ok: true, reply: 'r' });
    assert.equal(long, `Hook ${'n'.repeat(199)}…: r`);
  });
});

describe('sanitizeForLog', () => {
  it('control characters become spaces and whitespace collapses', () => {
    assert.equal(sanitizeForLog('a\nb\r\n\tc\u0000d\u001b[0m'), 'a b c d [0m');
    assert.equal(sanitizeForLog('  x  '), 'x');
  });

  it('neutralises line separators and bidi overrides', () => {
    assert.equal(sanitizeForLog('a\u2028b\u2029c\u202ed\u2066e'), 'a b c d e');
  });

  it('truncates to max with an ellipsis, default 500', () => {
    assert.equal(sanitizeForLog('x'.repeat(1000)).length, 500);
    assert.equal(sanitizeForLog('abcdef', 4), 'abc…');
    assert.equal(sanitizeForLog('abcd', 4), 'abcd');
    assert.equal(sanitizeForLog('abcd', 1), '…');
    assert.equal(sanitizeForLog('abcd', 0), '');
  });

  it('is surrogate-safe', () => {
    assert.equal(sanitizeForLog('ab😀cd', 4), 'ab…');
    assert.equal(truncateWithEllipsis('😀😀😀', 4), '😀…');
  });

  it('property: one line, bounded, well-formed when the input is', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 300 }), fc.integer({ min: 0, max: 120 }), (text, max) => {
        const out = sanitizeForLog(text, max);
        assert.ok(out.length <= max);
        assert.ok(!/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/.test(out));
        assert.ok(!/\s\s/.test(out));
        assert.ok(wellFormed(out));
      }),
      { numRuns: 300, seed: 99 },
    );
  });
});

describe('summaryEvent', () => {
  const run = { id: 'run-1', name: 'Git\nHub', allowUnsafeExternalContent: false };
  it('is an untrusted main-session summary named by the hook (flattened), unless the run allowed unsafe content', () => {
    const e = summaryEvent(run, 'Hook Git Hub: ok', 'main', 5);
    assert.equal(e.sessionKey, 'main');
    assert.deepEqual(
      { ...e, id: '' },
      {
        id: '',
        sessionKey: 'main',
        agentId: 'main',
        text: 'Hook Git Hub: ok',
        origin: 'summary',
        runId: 'run-1',
        createdAt: 5,
        untrusted: true,
        source: 'Git Hub',
      },
    );
    const trusted = summaryEvent({ ...run, allowUnsafeExternalContent: true }, 'Hook Git Hub: ok', 'main', 5);
    assert.equal(trusted.untrusted, false);
    assert.equal(trusted.source, null);
  });
});
