/**
 * A local CLI agent as a model provider: `command` + `args` spawned without a shell, the prompt on stdin,
 * the reply on stdout.
 *
 * stdin (UTF-8, closed after writing):
 * - only a new user message, no system prompt, no earlier turns → exactly that message and a newline, so tools like
 *   `claude -p`, `llm` or `ollama run` see what a person would have typed;
 * - otherwise a transcript of Markdown sections, the new message last:
 *
 *       ### System
 *       <system prompt>
 *
 *       ### User
 *       <earlier turn>
 *
 *       ### Assistant
 *       <earlier reply>
 *
 *       ### User
 *       <new message>
 *
 * Environment: the service's own, minus every `HOOKGATE_*` variable (the ingress token stays out of the agent's
 * reach), plus the provider's `env`, plus `HOOKGATE_MODEL` (the model name) and `HOOKGATE_THINKING` (the level, `off`
 * when none). The child leads its own process group, so a timeout kills the agent and everything it started.
 *
 * Result: exit 0 → the reply is stdout, trimmed. Exit 75 (EX_TEMPFAIL) → retryable failure, retried up to
 * `maxAttempts`. Any other exit, a signal, or a spawn failure → provider_command_failed, not retried (an agent run may
 * have had side effects). More than `maxOutputBytes` on stdout → provider_bad_response.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join, resolve } from 'node:path';
import { type CheckResult, checkFail, checkOk } from '../check.js';
import { type AbortLike, whenAborted } from '../deadline.js';
import type { ProviderConfig } from '../config/schema/models.js';
import { logPath, logSafe, redactSecrets } from '../text-safe.js';
import { badResponse } from './http.js';
import { policyOf, withRetry, type ProviderOptions } from './retry.js';
import { ProviderError, type ModelProvider, type ModelReply, type ModelRequest } from './types.js';

export type CommandConfig = Extract<ProviderConfig, { api: 'command' }>;

export interface CommandOptions extends ProviderOptions {
  /** Between SIGTERM and SIGKILL when a run is stopped. */
  killGraceMs?: number;
  /** Largest stdout accepted. */
  maxOutputBytes?: number;
}

export const DEFAULT_KILL_GRACE_MS = 3000;
export const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;
/** sysexits.h EX_TEMPFAIL: "temporary failure, try again later". */
export const EXIT_TEMPFAIL = 75;
const STDERR_TAIL_BYTES = 4096;
const STDERR_TAIL_LINES = 5;
const STDERR_TAIL_CHARS = 300;
/** When the agent has exited but something it started still holds the pipes open. */
const PIPE_DRAIN_MS = 1000;

export function renderPrompt(request: Pick<ModelRequest, 'system' | 'messages'>): string {
  const only = request.messages[0];
  if (!request.system && request.messages.length === 1 && only?.role === 'user') return `${only.content}\n`;
  const sections: string[] = [];
  if (request.system) sections.push(`### System\n${request.system}`);
  for (const m of request.messages) sections.push(`### ${m.role === 'user' ? 'User' : 'Assistant'}\n${m.content}`);
  return `${sections.join('\n\n')}\n`;
}

export function childEnv(config: CommandConfig, request: Pick<ModelRequest, 'model' | 'thinking'>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.toUpperCase().startsWith('HOOKGATE_')) env[k] = v;
  Object.assign(env, config.env);
  env['HOOKGATE_MODEL'] = request.model;
  env['HOOKGATE_THINKING'] = request.thinking?.trim() || 'off';
  return env;
}

/**
 * Every agent child alive in this process, across providers and config generations. On any exit of hookgate
 * (a forced stop, an uncaught error, `process.exit` anywhere) their process groups get SIGKILL, synchronously in
 * the 'exit' handler: a child left running would go on acting on its own while its run is started again.
 */
const liveChildren = new Set<ChildProcess>();
let exitHookInstalled = false;

function track(child: ChildProcess): void {
  liveChildren.add(child);
  child.once('exit', () => liveChildren.delete(child));
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once('exit', () => killAgents('SIGKILL'));
  }
}

/** Signals the process group of every agent child still running; returns how many there were. */
export function killAgents(sig: NodeJS.Signals): number {
  const n = liveChildren.size;
  for (const child of liveChildren) signalTree(child, sig);
  return n;
}

export function createCommandProvider(id: string, config: CommandConfig, options: CommandOptions = {}): ModelProvider {
  const label = `command provider "${id}"`;
  // Retrying a timed-out agent could repeat its side effects; only an explicit EX_TEMPFAIL is retried.
  const policy = { ...policyOf(config, options), retryAttemptTimeout: false };
  const running = new Set<Running>();
  return {
    id,
    api: 'command',
    complete(request) {
      return withRetry(label, policy, request.signal, (signal) => {
        const run = new Running(label, config, options, request, signal);
        running.add(run);
        return run.done.finally(() => running.delete(run));
      });
    },
    check: async () => checkCommand(config),
    async close() {
      await Promise.all([...running].map((r) => r.stop()));
    },
  };
}

/**
 * `hookgate doctor`: the command resolves to an executable file the way spawn will find it: a path with a slash
 * against `cwd`, a bare name through the PATH the child gets. Nothing is run (an agent may act when started).
 */
export function checkCommand(config: CommandConfig): CheckResult {
  const cwd = resolve(config.cwd ?? process.cwd());
  if (config.cwd !== undefined && !isDirectory(cwd))
    return checkFail(`cwd ${logPath(cwd, 300)} is not a directory`, 'fix cwd of this provider');
  const name = config.command;
  const found = name.includes('/')
    ? [resolve(cwd, name)].filter(isExecutableFile)
    : (config.env?.PATH ?? process.env.PATH ?? '')
        .split(delimiter)
        .filter(Boolean)
        .map((d) => join(resolve(cwd, d), name))
        .filter(isExecutableFile);
  const hit = found[0];
  if (hit) return checkOk(`${logSafe(name, 100)} → ${logPath(hit, 300)}`);
  return checkFail(
    name.includes('/')
      ? `${logPath(resolve(cwd, name), 300)} is not an executable file`
      : `"${logSafe(name, 100)}" is not on PATH`,
    'install it, give command as an absolute path, or fix env.PATH of this provider',
  );
}

function isExecutableFile(p: string): boolean {
  try {
    accessSync(p, constants.X_OK);
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

function isDirectory(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/** One child process, from spawn to its settled result. */
class Running {
  readonly done: Promise<ModelReply>;
  private child: ChildProcess | undefined;
  private failure: ProviderError | undefined;
  private killTimer: NodeJS.Timeout | undefined;
  private settle!: (result: ProviderError | ModelReply) => void;
  private settled = false;
  /** Stops listening for the abort (set once the child starts). */
  private release: () => void = () => {};
  private readonly stdout: Buffer[] = [];
  private stdoutBytes = 0;
  private stderrTail = Buffer.alloc(0);

  constructor(
    private readonly label: string,
    private readonly config: CommandConfig,
    private readonly options: CommandOptions,
    request: ModelRequest,
    private readonly signal: AbortLike,
  ) {
    this.done = new Promise<ModelReply>((resolve, reject) => {
      this.settle = (result) => {
        if (this.settled) return;
        this.settled = true;
        this.release();
        if (result instanceof ProviderError) reject(result);
        else resolve(result);
      };
    });
    if (signal.aborted) {
      this.settle(this.aborted());
    } else {
      this.release = whenAborted(signal, this.onAbort);
      this.start(request);
    }
  }

  /** Stops the child (close of the provider): SIGTERM, SIGKILL after the grace period; resolves once settled. */
  async stop(): Promise<void> {
    this.kill(new ProviderError('provider_timeout', `${this.label}: stopped (provider closed)`, { retryable: false }));
    await this.done.catch(() => {});
  }

  private readonly onAbort = () => this.kill(this.aborted());

  private aborted(): ProviderError {
    return new ProviderError('provider_timeout', `${this.label}: aborted`, {
      retryable: false,
      cause: this.signal.reason,
    });
  }

  private start(request: ModelRequest): void {
    let child: ChildProcess;
    try {
      child = spawn(this.config.command, this.config.args, {
        cwd: this.config.cwd,
        env: childEnv(this.config, request),
        stdio: ['pipe', 'pipe', 'pipe'],
        shell: false,
        // Its own process group (POSIX), so the whole tree can be signalled at once.
        detached: process.platform !== 'win32',
        windowsHide: true,
      });
    } catch (err) {
      return void this.settle(this.spawnFailed(err));
    }
    this.child = child;
    if (child.pid !== undefined) track(child);
    const maxOut = this.options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
    child.stdout?.on('data', (chunk: Buffer) => {
      if (this.failure) return;
      this.stdoutBytes += chunk.length;
      if (this.stdoutBytes > maxOut) {
        this.kill(badResponse(this.label, `more than ${maxOut} bytes on stdout`));
        return;
      }
      this.stdout.push(chunk);
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      const joined = Buffer.concat([this.stderrTail, chunk]);
      this.stderrTail = joined.subarray(Math.max(0, joined.length - STDERR_TAIL_BYTES));
    });
    // EPIPE when the agent exits without reading all of its input: the exit status tells the story.
    child.stdin?.on('error', () => {});
    child.on('error', (err) => {
      // Spawn failure (ENOENT, EACCES...); a failed kill() also lands here and is not a result.
      if (child.pid === undefined) this.settle(this.spawnFailed(err));
    });
    child.on('exit', () => {
      // Normally 'close' follows at once; a grandchild holding the pipes must not hold the run.
      setTimeout(() => this.destroyPipes(), PIPE_DRAIN_MS).unref();
    });
    child.on('close', (code, sig) => this.finish(code, sig));
    child.stdin?.end(renderPrompt(request));
  }

  private finish(code: number | null, sig: NodeJS.Signals | null): void {
    if (this.failure) return this.settle(this.failure);
    if (code === 0) return this.settle({ text: Buffer.concat(this.stdout).toString('utf8').trim() });
    const how = code !== null ? `exited with code ${code}` : `killed by ${sig ?? 'a signal'}`;
    const tail = this.stderrSummary();
    this.settle(
      new ProviderError('provider_command_failed', `${this.label}: ${how}${tail ? `: ${tail}` : ''}`, {
        retryable: code === EXIT_TEMPFAIL,
      }),
    );
  }

  /** The last few non-empty stderr lines, redacted (values of the provider's env are likely credentials). */
  private stderrSummary(): string {
    const lines = this.stderrTail
      .toString('utf8')
      .split(/\r?\n/)
      .map((l) => l.trim())
      .filter(Boolean)
      .slice(-STDERR_TAIL_LINES);
    return redactSecrets(lines.join(' | '), Object.values(this.config.env ?? {}), STDERR_TAIL_CHARS);
  }

  private spawnFailed(err: unknown): ProviderError {
    const code = (err as { code?: unknown } | null)?.code;
    const why =
      code === 'ENOENT' ? 'ENOENT (command or cwd not found)' : typeof code === 'string' ? code : 'spawn failed';
    return new ProviderError(
      'provider_command_failed',
      `${this.label}: cannot start "${this.config.command}": ${why}`,
      {
        retryable: false,
        cause: err,
      },
    );
  }

  /** Records why the run ends, then SIGTERM to the group and SIGKILL after the grace period. */
  private kill(why: ProviderError): void {
    if (this.settled) return;
    this.failure ??= why;
    const child = this.child;
    if (!child || child.pid === undefined) return this.settle(this.failure);
    if (this.killTimer) return;
    signalTree(child, 'SIGTERM');
    const grace = this.options.killGraceMs ?? DEFAULT_KILL_GRACE_MS;
    this.killTimer = setTimeout(() => {
      signalTree(child, 'SIGKILL');
      // Even a process that cannot die (uninterruptible I/O) must not hold the run forever.
      setTimeout(() => this.destroyPipes(), PIPE_DRAIN_MS).unref();
    }, grace);
    this.killTimer.unref();
  }

  private destroyPipes(): void {
    if (this.settled) return;
    this.child?.stdout?.destroy();
    this.child?.stderr?.destroy();
    this.finish(this.child?.exitCode ?? null, this.child?.signalCode ?? null);
  }
}

/** Signals the child's whole process group; falls back to the child alone (Windows, or the group is gone). */
function signalTree(child: ChildProcess, sig: NodeJS.Signals): void {
  if (child.pid !== undefined && process.platform !== 'win32') {
    try {
      process.kill(-child.pid, sig);
      return;
    } catch {
      // ESRCH: the group is gone already.
    }
  }
  try {
    child.kill(sig);
  } catch {
    // Already exited.
  }
}
