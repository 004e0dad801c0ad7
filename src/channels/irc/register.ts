/** Connecting (TCP or TLS) and registering (PASS, CAP/SASL PLAIN, NICK/USER, nick alternatives) on an IRC server. */
import { randomInt } from 'node:crypto';
import { connect as netConnect, isIP, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { logSafe } from '../../text-safe.js';
import { codeOf, type IrcConnection, SERVER_TEXT_MAX } from './connection.js';
import { type IrcConfig, IrcError } from './protocol.js';

// ---------------------------------------------------------------------------------------------------------------
// Connecting and registering

/** Certificate problems: retrying will not fix them, the configuration (or the server's certificate) must change. */
const TLS_CERT_ERRORS = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_UNTRUSTED',
  'CERT_REVOKED',
  'CERT_REJECTED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

export function dial(cfg: IrcConfig, timeoutMs: number, signal: AbortSignal): Promise<Socket> {
  const where = `${cfg.host}:${cfg.port}`;
  return new Promise((resolve, reject) => {
    const socket: Socket = cfg.tls
      ? tlsConnect({
          host: cfg.host,
          port: cfg.port,
          // SNI takes a host name, never an address.
          ...(isIP(cfg.host) ? {} : { servername: cfg.host }),
          rejectUnauthorized: !cfg.tlsInsecure,
        })
      : netConnect({ host: cfg.host, port: cfg.port });
    const readyEvent = cfg.tls ? 'secureConnect' : 'connect';
    const cleanup = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      socket.off('error', onError);
      socket.off(readyEvent, onReady);
    };
    const fail = (err: IrcError) => {
      cleanup();
      socket.destroy();
      reject(err);
    };
    const onError = (err: Error) => {
      const code = codeOf(err);
      if (TLS_CERT_ERRORS.has(code)) {
        fail(
          new IrcError(
            false,
            `the TLS certificate of ${where} was not accepted (${code}); for a self-signed server on a private network set tlsInsecure: true`,
          ),
        );
      } else if (/^ERR_SSL|^EPROTO$/.test(code)) {
        fail(
          new IrcError(
            false,
            `TLS handshake with ${where} failed (${code}); is ${cfg.port} a TLS port? (set tls: false for a plain-text port)`,
          ),
        );
      } else fail(new IrcError(true, `cannot connect to ${where} (${code})`));
    };
    const onReady = () => {
      cleanup();
      // Until the connection object attaches its own handler, an error must not go unhandled (it would crash).
      socket.on('error', () => undefined);
      socket.setNoDelay(true);
      socket.setKeepAlive(true, 60_000);
      resolve(socket);
    };
    const onAbort = () => fail(new IrcError(true, 'connection attempt aborted'));
    // A plain-text server says nothing to a TLS ClientHello: with TLS on, a silent port is most often that.
    const hint = cfg.tls ? '; if this is a plain-text port, set tls: false' : '';
    const timer = setTimeout(
      () => fail(new IrcError(true, `cannot connect to ${where} (no answer within ${timeoutMs} ms${hint})`)),
      timeoutMs,
    );
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    socket.once('error', onError);
    socket.once(readyEvent, onReady);
  });
}

/** The nick, then variants for when it is taken (433): `nick_`, `nick__`, then shortened with random digits. */
export function alternateNicks(nick: string): string[] {
  const digits = (n: number) => String(randomInt(10 ** (n - 1), 10 ** n));
  return [
    nick,
    `${nick}_`,
    `${nick}__`,
    `${nick.slice(0, 7)}${digits(2)}`,
    `${nick.slice(0, 6)}${digits(3)}`,
    `${nick.slice(0, 5)}${digits(4)}`,
  ];
}

/** SASL numerics that end the exchange with a failure (IRCv3 sasl-3.1). */
const SASL_FAILURES: Record<string, string> = {
  '902': 'the account is locked (902)',
  '904': 'the account name or password was rejected (904)',
  '905': 'the credentials are too long (905)',
  '906': 'authentication was aborted (906)',
  '907': 'already authenticated (907)',
  '908': 'the server does not offer PLAIN (908)',
};

/** PASS, CAP/SASL, NICK, USER, up to RPL_WELCOME (001). Throws IrcError. */
export async function register(
  conn: IrcConnection,
  cfg: IrcConfig,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<void> {
  const nicks = alternateNicks(cfg.nick);
  let nickIndex = 0;
  const sasl = cfg.saslPassword !== undefined;
  let saslDone = false;
  let capLs = '';

  if (sasl) conn.write('CAP LS 302');
  if (cfg.password !== undefined) conn.write(`PASS :${cfg.password}`);
  conn.write(`NICK ${cfg.nick}`);
  conn.write(`USER ${cfg.username ?? cfg.nick} 0 * :${cfg.realname ?? 'hookgate'}`);

  const fatal = (why: string) => new IrcError(false, `IRC registration failed: ${why}`);
  const nextNick = () => {
    nickIndex++;
    const next = nicks[nickIndex];
    if (next === undefined)
      throw new IrcError(true, `IRC registration failed: the nick ${cfg.nick} and its alternatives are in use`);
    conn.nick = next;
    conn.write(`NICK ${next}`);
  };

  await conn.waitFor(
    (m) => {
      switch (m.command) {
        case '001':
          if (sasl && !saslDone) throw fatal('the server does not support SASL, but saslPassword is set');
          conn.nick = m.params[0] ?? conn.nick;
          return true;
        case '433': // ERR_NICKNAMEINUSE
        case '436': // ERR_NICKCOLLISION
        case '437': // ERR_UNAVAILRESOURCE (nick delay)
          nextNick();
          return undefined;
        case '432': // ERR_ERRONEUSNICKNAME: our own nick is a config error; an alternative may just be too long
          if (nickIndex === 0) throw fatal(`the server does not accept the nick ${cfg.nick} (432)`);
          nextNick();
          return undefined;
        case '464':
          throw fatal('the server password was rejected (464)');
        case '465':
          throw fatal('this client is banned from the server (465)');
        case 'ERROR': {
          const why = logSafe(m.params.at(-1) ?? '', SERVER_TEXT_MAX);
          // Some servers (ngircd) answer a wrong PASS with just ERROR "... Bad password": that needs a config change.
          if (cfg.password !== undefined && /password/i.test(why))
            throw fatal(`the server password was rejected (${why})`);
          throw new IrcError(true, `IRC registration failed: the server closed the connection: ${why}`);
        }
        case '421': // ERR_UNKNOWNCOMMAND: a server without CAP cannot do SASL
          if (sasl && m.params[1]?.toUpperCase() === 'CAP')
            throw fatal('the server does not support CAP/SASL, but saslPassword is set');
          return undefined;
        case 'CAP': {
          const sub = m.params[1]?.toUpperCase();
          if (sub === 'LS') {
            // `CAP * LS * :caps` continues on the next line (CAP 302); `CAP * LS :caps` is the last one.
            const more = m.params.length >= 4 && m.params[2] === '*';
            capLs += ` ${m.params.at(-1) ?? ''}`;
            if (more) return undefined;
            const cap = capLs.split(' ').find((c) => c === 'sasl' || c.startsWith('sasl='));
            if (!cap) throw fatal('the server does not offer SASL (no sasl capability), but saslPassword is set');
            const mechs = cap.includes('=') ? cap.slice(5).split(',') : undefined;
            if (mechs && !mechs.map((x) => x.toUpperCase()).includes('PLAIN'))
              throw fatal('the server does not offer SASL PLAIN');
            conn.write('CAP REQ :sasl');
          } else if (sub === 'ACK' && /(^|\s)sasl(\s|$)/.test(m.params.at(-1) ?? '')) {
            conn.write('AUTHENTICATE PLAIN');
          } else if (sub === 'NAK') {
            throw fatal('the server refused the sasl capability');
          }
          return undefined;
        }
        case 'AUTHENTICATE':
          if (m.params[0] === '+' && sasl) {
            const account = cfg.saslUsername ?? cfg.nick;
            // RFC 4616: authzid NUL authcid NUL password; base64 sent in chunks of 400, a full last chunk followed by "+".
            const payload = Buffer.from(`${account}\0${account}\0${cfg.saslPassword ?? ''}`, 'utf8').toString('base64');
            for (let i = 0; i < payload.length; i += 400) conn.write(`AUTHENTICATE ${payload.slice(i, i + 400)}`);
            if (payload.length % 400 === 0) conn.write('AUTHENTICATE +');
          }
          return undefined;
        case '903': // RPL_SASLSUCCESS
          saslDone = true;
          conn.write('CAP END');
          return undefined;
        default: {
          const failure = SASL_FAILURES[m.command];
          if (failure && sasl) throw fatal(`SASL: ${failure}`);
          return undefined;
        }
      }
    },
    timeoutMs,
    'registering with the IRC server',
    signal,
  );
}
