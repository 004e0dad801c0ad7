/** `hookgate gmail setup / status / stop`: see docs/gmail.md. */
import { type Command, Option } from 'commander';
import { gmailSetup, type SetupOptions } from './gmail-setup.js';
import { gmailStatus, gmailStopCommand } from './gmail-status.js';
import { configOption, jsonOption } from './options.js';

export function addGmailCommands(program: Command): void {
  const gmail = program
    .command('gmail')
    .description('Gmail push: set up Pub/Sub for a mailbox, show its watch, stop it (docs/gmail.md)');
  gmail
    .command('setup')
    .description(
      'create the Pub/Sub topic, let Gmail publish to it, create the push subscription to hookgate, and write hooks.gmail into the config; idempotent',
    )
    .requiredOption('--account <address>', 'the mailbox to watch (you@example.com)')
    .requiredOption('--project <id>', 'the Google Cloud project id of the topic and subscription')
    .requiredOption(
      '--push-endpoint <url>',
      "the public https URL Pub/Sub posts to; just an origin (https://hooks.example.com) gets hookgate's path {hooks.path}/{push path} appended",
    )
    .requiredOption(
      '--service-account <email>',
      "the push subscription's identity: the service account whose OIDC token hookgate checks on each push",
    )
    .option('--topic <name>', 'the Pub/Sub topic Gmail publishes to', 'hookgate-gmail')
    .option('--subscription <name>', 'the push subscription', 'hookgate-gmail-push')
    .option(
      '--push-path <path>',
      'the sub-path of hooks.path that receives the pushes (hooks.gmail.pushPath)',
      'gmail-push',
    )
    .option('--audience <aud>', "the OIDC token's audience (default: the push endpoint URL)")
    .option('--labels <list>', 'comma-separated labels to watch', 'INBOX')
    .option(
      '--client-id <id>',
      `the OAuth client id, written in clear (default: written as { env: "GMAIL_CLIENT_ID" })`,
    )
    .option(
      '--client-secret <secret>',
      'the OAuth client secret, written in clear in the config (default: { env: "GMAIL_CLIENT_SECRET" }, better)',
    )
    .option(
      '--refresh-token <token>',
      'the refresh token, written in clear in the config (default: { env: "GMAIL_REFRESH_TOKEN" }, better)',
    )
    .option(
      '--access-token <token>',
      'a Google access token for the Pub/Sub calls (default: $GOOGLE_OAUTH_ACCESS_TOKEN; e.g. from gcloud auth print-access-token)',
    )
    .option(
      '--credentials <file>',
      'a service-account key (or authorized_user) JSON file for the Pub/Sub calls (default: $GOOGLE_APPLICATION_CREDENTIALS)',
    )
    .option('--print', 'print the equivalent gcloud commands and the config block; call nothing, write nothing')
    .option('--no-write-config', 'do the Google Cloud part only; print the config block instead of writing it')
    .addOption(
      new Option(
        '--pubsub-url <url>',
        'Pub/Sub base URL (tests: a local stand-in; default $HOOKGATE_PUBSUB_URL, else Google)',
      ).hideHelp(),
    )
    .addOption(
      new Option(
        '--token-url <url>',
        "OAuth token endpoint for --credentials (default $HOOKGATE_GOOGLE_TOKEN_URL, else the key file's token_uri)",
      ).hideHelp(),
    )
    .addOption(jsonOption())
    .addOption(configOption())
    .action((o: SetupOptions) => gmailSetup(o));
  gmail
    .command('status')
    .description(
      "the mailbox's watch as the store knows it: expiry, last history id, last push, messages fetched, last error (reads the store, creates nothing)",
    )
    .addOption(jsonOption())
    .addOption(configOption())
    .action((o: { config?: string; json?: boolean }) => gmailStatus(o));
  gmail
    .command('stop')
    .description("stop Gmail's notifications for the mailbox (users.stop, with the OAuth client of hooks.gmail)")
    .addOption(jsonOption())
    .addOption(configOption())
    .action((o: { config?: string; json?: boolean }) => gmailStopCommand(o));
}
