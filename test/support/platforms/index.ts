/**
 * Local stand-ins of the platform APIs, for channel tests and end-to-end tests. Each `start…()` listens on
 * 127.0.0.1:<random port> and returns { url, received, requests, failNext(n, kind, headers?), waitForMessages(n), close() };
 * configure the channel's apiBaseUrl / serverUrl / serviceUrl (and tokenUrl) with `url`.
 */
export type { FailureKind, RecordedRequest, StandIn } from './base.js';
export { startTelegram, TELEGRAM_TEST_TOKEN, type TelegramMessage } from './telegram.js';
export { startSlack, SLACK_TEST_TOKEN, type SlackMessage } from './slack.js';
export { startDiscord, DISCORD_TEST_TOKEN, type DiscordMessage } from './discord.js';
export { startWhatsApp, WHATSAPP_TEST_TOKEN, WHATSAPP_TEST_PHONE_NUMBER_ID, type WhatsAppMessage } from './whatsapp.js';
export { startSignal, SIGNAL_TEST_NUMBER, type SignalMessage } from './signal.js';
export { startIMessage, BLUEBUBBLES_TEST_PASSWORD, type IMessageMessage, type IMessageStandIn } from './imessage.js';
export {
  createServiceAccountKey,
  startGoogleChat,
  GOOGLECHAT_TEST_SPACE,
  type GoogleChatMessage,
  type GoogleChatStandIn,
} from './googlechat.js';
export {
  startMsTeams,
  MSTEAMS_TEST_APP_ID,
  MSTEAMS_TEST_APP_PASSWORD,
  MSTEAMS_TEST_CONVERSATION,
  type MsTeamsMessage,
  type MsTeamsStandIn,
} from './msteams.js';
export { closedPortUrl, outbound, recordingContext, assertNoSecrets } from './fixtures.js';
