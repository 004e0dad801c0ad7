/** Help text everywhere, and shell completion generated from the command tree. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import type { Command } from 'commander';
import { buildProgram } from '../../src/cli/program.js';
import { CLI, runCli } from '../support/server.js';

function commands(cmd: Command, path: string[] = []): Array<{ path: string; cmd: Command }> {
  return [
    { path: path.join(' ') || '(program)', cmd },
    ...cmd.commands.flatMap((c) => commands(c, [...path, c.name()])),
  ];
}

/** Completions bash offers for `line` (a trailing space completes the next word), with the generated script loaded. */
function bashComplete(line: string): string[] {
  const script = `source <("${process.execPath}" "${CLI}" completion bash)
read -ra COMP_WORDS <<< "$LINE"; [[ "$LINE" == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$((\${#COMP_WORDS[@]} - 1)); _hookgate; printf '%s\\n' "\${COMPREPLY[@]}"`;
  const r = spawnSync('bash', ['-c', script], { env: { ...process.env, LINE: line }, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.split('\n').filter(Boolean);
}

describe('cli: help text and completion', () => {
  it('every command, argument and option has help text', async () => {
    const missing: string[] = [];
    for (const { path, cmd } of commands(await buildProgram())) {
      if (!cmd.description()) missing.push(`${path}: no description`);
      for (const a of cmd.registeredArguments)
        if (!a.description) missing.push(`${path} <${a.name()}>: no description`);
      for (const o of cmd.options) if (!o.description) missing.push(`${path} ${o.flags}: no description`);
    }
    assert.deepEqual(missing, []);
  });

  it('bash: the script registers a completion for hookgate and completes subcommands, options and choices', async () => {
    const registered = spawnSync(
      'bash',
      ['-c', `source <("${process.execPath}" "${CLI}" completion bash); complete -p hookgate`],
      { encoding: 'utf8' },
    );
    assert.equal(registered.status, 0, registered.stderr);
    assert.match(registered.stdout, /complete .*-F _hookgate hookgate/);
    assert.deepEqual(bashComplete('hookgate ru'), ['runs']);
    assert.deepEqual(bashComplete('hookgate runs '), ['list', 'show', 'retry', '--verbose', '--help']);
    assert.deepEqual(bashComplete('hookgate runs list --li'), ['--limit']);
    assert.deepEqual(bashComplete('hookgate runs list --state '), [
      'queued',
      'running',
      'succeeded',
      'failed',
      'timed_out',
    ]);
    assert.deepEqual(bashComplete('hookgate send hook gh --si'), ['--sign']);
    assert.deepEqual(bashComplete('hookgate completion '), ['bash', 'zsh', 'fish', '--verbose', '--help']);
    assert.deepEqual(bashComplete('hookgate gmail '), ['setup', 'status', 'stop', '--verbose', '--help']);
    assert.deepEqual(
      bashComplete('hookgate gmail setup --pu'),
      ['--push-endpoint', '--push-path'],
      'the hidden --pubsub-url is not offered',
    );
  });

  it('zsh and fish scripts are printed; an unknown shell is a usage error', async () => {
    const zsh = await runCli(['completion', 'zsh']);
    assert.equal(zsh.code, 0);
    assert.match(zsh.stdout, /^#compdef hookgate\nautoload -U \+X bashcompinit && bashcompinit\n/);
    const fish = await runCli(['completion', 'fish']);
    assert.equal(fish.code, 0);
    assert.match(
      fish.stdout,
      /complete -c hookgate -n '__hookgate_at \\'runs\\'' -a 'list' -d 'list runs, newest first'/,
    );
    assert.match(fish.stdout, /-l limit -r -d /);
    for (const [shell, check] of [
      ['zsh', ['-n']],
      ['fish', ['--no-execute']],
    ] as const) {
      const has = spawnSync(shell, ['-c', 'true']).status === 0;
      if (!has) continue;
      const r = spawnSync(shell, [...check], { input: shell === 'zsh' ? zsh.stdout : fish.stdout, encoding: 'utf8' });
      assert.equal(r.status, 0, `${shell} syntax: ${r.stderr}`);
    }
    const bad = await runCli(['completion', 'powershell']);
    assert.equal(bad.code, 1);
  });
});
