/**
 * The durable record. One interface, two drivers (SQLite now, PostgreSQL later) and one shared test suite
 * (test/store/contract.ts). Every method is async so a networked driver fits; the SQLite driver batches the
 * commits of concurrent callers into one transaction (group commit).
 */

export type WakeMode = 'now' | 'next-heartbeat';
export type SessionMode = 'isolated' | 'persistent';
export type ContentSource = 'webhook' | 'email';
export type RunState = 'queued' | 'running' | 'succeeded' | 'failed' | 'timed_out';

/** A system event of a session (the main session for wakes and run summaries). */
export interface NewSystemEvent {
  id: string;
  sessionKey: string;
  agentId: string;
  text: string;
  /** What produced it: a wake request, a run summary, the CLI. */
  origin: 'wake' | 'summary' | 'cli';
  runId?: string | null;
  createdAt: number;
}

export interface SystemEvent extends NewSystemEvent {
  consumedAt: number | null;
}

/** An accepted agent run, with every normalised field of the request. */
export interface NewRun {
  id: string;
  agentId: string;
  sessionKey: string;
  sessionMode: SessionMode;
  name: string;
  message: string;
  wakeMode: WakeMode;
  deliver: boolean;
  channel: string;
  to: string | null;
  /** Canonical `<provider>/<model>`, or null for the agent's default. */
  model: string | null;
  thinking: string | null;
  timeoutSeconds: number;
  allowUnsafeExternalContent: boolean;
  contentSource: ContentSource;
  /** The hook sub-path that produced it (`agent`, `gmail`, ...). */
  hookPath: string;
  mappingId: string | null;
  createdAt: number;
}

export interface Run extends NewRun {
  state: RunState;
  attempts: number;
  updatedAt: number;
  startedAt: number | null;
  finishedAt: number | null;
  error: string | null;
  reply: string | null;
}

/** Metadata of one received hook request: never the payload, never a token. */
export interface ReceivedHook {
  at: number;
  method: string;
  path: string;
  clientIp: string;
  status: number;
  code: string | null;
  eventIds: string[];
  runIds: string[];
  mappingId: string | null;
  durationMs: number;
}

export interface IdempotencyClaim {
  /** Scope of the key: the hook sub-path it was used on. */
  scope: string;
  /** SHA-256 of the key (keys are not stored in clear). */
  keyHash: string;
  /** SHA-256 of the request body: the same key with another body is a conflict, not a duplicate. */
  fingerprint: string;
  expiresAt: number;
}

/** What a repeated key gets back: the caller's own description of its answer, and the first outcome. */
export interface Replay {
  spec: Record<string, unknown>;
  outcome: AcceptOutcome;
}

/** Everything one request asks for, committed atomically. */
export interface AcceptCommand {
  events: NewSystemEvent[];
  runs: NewRun[];
  idempotency?: IdempotencyClaim;
  /** Opaque description of the answer (plain data): stored with the key, returned to repeats. */
  answerSpec: Record<string, unknown>;
  /** Its `status` is the answer's; event and run ids are filled in by the store. */
  received: ReceivedHook;
}

export type EventOutcome = 'queued' | 'coalesced';

export interface AcceptOutcome {
  /** Per event of the command, in order: the stored id (the earlier one when coalesced) and the outcome. */
  events: { eventId: string; outcome: EventOutcome }[];
}

export type AcceptResult =
  | { kind: 'accepted'; outcome: AcceptOutcome }
  | { kind: 'duplicate'; replay: Replay; status: number }
  | { kind: 'conflict' };

export interface SessionSummary {
  key: string;
  agentId: string;
  pendingEvents: number;
  runs: number;
  lastActivityAt: number;
  lastChannel: string | null;
  lastTo: string | null;
}

export interface SessionDetail extends SessionSummary {
  pending: SystemEvent[];
  recentEvents: SystemEvent[];
  recentRuns: Run[];
}

export interface ListRunsQuery {
  state?: RunState;
  sessionKey?: string;
  limit?: number;
}

export interface Store {
  /**
   * Commit what one request asks for, atomically, together with its idempotency key and received record.
   * A repeated key (same scope and body, not expired) commits nothing new but the received record and returns
   * the first answer's spec and outcome; the same key with another body is a conflict.
   */
  accept(cmd: AcceptCommand): Promise<AcceptResult>;
  /** Record a request that was answered without an accept (rejections). Batched like accept. */
  recordReceived(rec: ReceivedHook): Promise<void>;

  getRun(id: string): Promise<Run | undefined>;
  listRuns(q?: ListRunsQuery): Promise<Run[]>;
  /** Put a finished (failed / timed_out / succeeded) run back in the queue. */
  requeueRun(id: string, now: number): Promise<Run | undefined>;

  listSessions(limit?: number): Promise<SessionSummary[]>;
  getSession(key: string): Promise<SessionDetail | undefined>;
  listReceived(limit?: number): Promise<ReceivedHook[]>;

  /** Delete expired idempotency keys and received-hook records older than `receivedBefore`. */
  prune(now: number, receivedBefore: number): Promise<{ idempotency: number; received: number }>;
  close(): Promise<void>;
}
