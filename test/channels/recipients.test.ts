import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_RECIPIENT_LENGTH, recipientProblem } from '../../src/channels/recipients.js';

describe('recipientProblem: the rule every channel shares, then its own', () => {
  const digits = { checkRecipient: (to: string) => (/^[0-9]+$/.test(to) ? undefined : 'digits only') };

  it('refuses ".", "..", control and bidi characters and over-long values on every channel, even one without a rule', () => {
    for (const to of ['.', '..', ' .. ', 'a\nb', 'a\u0000b', 'a\u202eb', 'x'.repeat(MAX_RECIPIENT_LENGTH + 1)]) {
      assert.match(
        recipientProblem('log', undefined, to) ?? '',
        /^"to" is not a recipient of channel log: expected one line of at most 512 characters, not "\." or "\.\."$/,
        JSON.stringify(to),
      );
    }
    for (const to of ['', 'anything at all', '#ops', 'x'.repeat(MAX_RECIPIENT_LENGTH)])
      assert.equal(recipientProblem('log', undefined, to), undefined, to);
  });

  it("names the platform's shape, checks the trimmed value, and never quotes the value", () => {
    assert.equal(
      recipientProblem('discord', digits, 'abc'),
      '"to" is not a recipient of channel discord: expected digits only',
    );
    assert.equal(
      recipientProblem('discord', digits, '..'),
      '"to" is not a recipient of channel discord: expected digits only',
    );
    assert.equal(recipientProblem('discord', digits, ' 123\n'), undefined);
    assert.doesNotMatch(recipientProblem('discord', digits, 'SECRET-VALUE') ?? '', /SECRET/);
  });

  it("only undefined from a plugin's rule accepts: a throw or any other answer refuses", () => {
    const throwing = {
      checkRecipient: (): string | undefined => {
        throw new Error('boom');
      },
    };
    assert.match(
      recipientProblem('myplugin', throwing, '1') ?? '',
      /expected a recipient its checkRecipient accepts \(it threw\)$/,
    );
    for (const answer of [42, '', null, false]) {
      assert.match(
        recipientProblem('myplugin', { checkRecipient: () => answer as unknown as string }, '1') ?? '',
        /expected a recipient its checkRecipient accepts$/,
        String(answer),
      );
    }
  });
});
