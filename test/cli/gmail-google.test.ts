import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CliError } from '../../src/errors.js';
import { refreshAccessToken } from '../../src/cli/gmail-google.js';

describe('gmail-google: a token endpoint that cannot be reached', () => {
  it('is named as a URL made safe to show: its query values never reach the message', async () => {
    // Port 1 on loopback refuses at once.
    const tokenUrl = 'http://127.0.0.1:1/token?key=QUERYSECRET123';
    await assert.rejects(
      refreshAccessToken({ tokenUrl, clientId: 'id', clientSecret: 'cs', refreshToken: 'rt' }),
      (err: unknown) => {
        assert.ok(err instanceof CliError);
        assert.equal(err.code, 'cli_unreachable');
        assert.match(
          err.message,
          /^token endpoint http:\/\/127\.0\.0\.1:1\/token\?key=\*\*\*: cannot reach http:\/\/127\.0\.0\.1:1 /,
        );
        assert.doesNotMatch(err.message, /QUERYSECRET123/);
        return true;
      },
    );
  });
});
