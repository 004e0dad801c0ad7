/** Gmail API messages (format full) → the gmail preset's items (src/gmail/message.ts). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type GmailApiPart, messageBody, toMail } from '../../src/gmail/message.js';

const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64url');
const part = (mimeType: string, data: string | Buffer, extra: Partial<GmailApiPart> = {}): GmailApiPart => ({
  mimeType,
  body: { data: b64(data) },
  ...extra,
});

describe('gmail message parsing', () => {
  it('headers and text/plain preferred over text/html', () => {
    const mail = toMail(
      {
        id: 'm1',
        threadId: 't1',
        snippet: 'hi',
        payload: {
          mimeType: 'multipart/alternative',
          headers: [
            { name: 'From', value: 'Bob <bob@x>' },
            { name: 'to', value: 'me@x' },
            { name: 'SUBJECT', value: 'Hello' },
            { name: 'Date', value: 'Mon, 1 Jan 2026 00:00:00 +0000' },
          ],
          parts: [part('text/html', '<p>html</p>'), part('text/plain', 'plain text\r\nline 2')],
        },
      },
      { includeBody: true, maxBodyChars: 1000 },
    );
    assert.deepEqual(mail, {
      id: 'm1',
      threadId: 't1',
      from: 'Bob <bob@x>',
      to: 'me@x',
      subject: 'Hello',
      date: 'Mon, 1 Jan 2026 00:00:00 +0000',
      snippet: 'hi',
      body: 'plain text\nline 2',
    });
  });

  it('HTML only → text; nested multiparts; attachments skipped', () => {
    const payload: GmailApiPart = {
      mimeType: 'multipart/mixed',
      parts: [
        {
          mimeType: 'multipart/alternative',
          parts: [
            part(
              'text/html',
              '<div>Hi <b>there</b><br>see <a href="https://x.test/a">the doc</a><img src="x.png"></div>',
            ),
          ],
        },
        part('text/plain', 'attached notes', { filename: 'notes.txt' }),
      ],
    };
    const body = messageBody(payload, 1000);
    assert.match(body, /Hi there/);
    assert.match(body, /the doc \[https:\/\/x\.test\/a\]/);
    assert.doesNotMatch(body, /attached notes|<b>|x\.png/);
  });

  it('decodes the part charset; cuts at maxBodyChars (characters, not bytes); includeBody false → empty body', () => {
    const latin1 = part('text/plain', Buffer.from('café', 'latin1'), {
      headers: [{ name: 'Content-Type', value: 'text/plain; charset="ISO-8859-1"' }],
    });
    assert.equal(messageBody(latin1, 100), 'café');
    assert.equal(messageBody(part('text/plain', '😀😀😀abc'), 4), '😀😀😀a');
    assert.equal(
      toMail({ id: 'x', payload: part('text/plain', 'secret') }, { includeBody: false, maxBodyChars: 10 }).body,
      '',
    );
    assert.equal(messageBody(undefined, 10), '');
  });
});
