/**
 * `hookgate completion bash|zsh|fish`: a completion script generated from the commander program itself, so a new
 * command or option is completed as soon as it exists. zsh loads the bash script through bashcompinit.
 */
import type { Command, Option } from 'commander';

export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

/** One command of the tree, by its path of names (`runs list`; '' for the program). */
interface Node {
  path: string;
  description: string;
  subcommands: Array<{ name: string; description: string }>;
  options: Option[];
  /** Words a positional argument may be (an argument with choices, like this command's SHELL). */
  argChoices: string[];
}

function nodes(program: Command): Node[] {
  const out: Node[] = [];
  const walk = (cmd: Command, path: string, inherited: Option[]) => {
    const own = cmd.options.filter((o) => !o.hidden);
    // Options of the program (--verbose) work after any subcommand too; --config is offered where a command reads it.
    const options = [...own, ...inherited.filter((i) => !own.some((o) => o.long === i.long))];
    const subs = cmd.commands.filter((c) => !(c as Command & { _hidden?: boolean })._hidden);
    out.push({
      path,
      description: cmd.description(),
      subcommands: subs.map((c) => ({ name: c.name(), description: c.description() })),
      options,
      argChoices: cmd.registeredArguments.flatMap((a) => a.argChoices ?? []),
    });
    for (const c of subs)
      walk(
        c,
        path ? `${path} ${c.name()}` : c.name(),
        path === '' ? own.filter((o) => o.long !== '--version' && o.long !== '--config') : inherited,
      );
  };
  walk(program, '', []);
  return out;
}

const flags = (o: Option) => [o.short, o.long].filter((f): f is string => !!f);
const takesValue = (o: Option) => o.required || o.optional;
const sq = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

export function completionScript(program: Command, shell: Shell): string {
  if (shell === 'fish') return fish(program);
  const script = bash(program);
  return shell === 'bash'
    ? script
    : `#compdef ${program.name()}\nautoload -U +X bashcompinit && bashcompinit\n${script}`;
}

function bash(program: Command): string {
  const name = program.name();
  const fn = `_${name.replace(/[^A-Za-z0-9_]/g, '_')}`;
  const all = nodes(program);
  const words = all.map((n) => {
    const w = [...n.subcommands.map((s) => s.name), ...n.argChoices, ...n.options.flatMap(flags), '--help'];
    return `    ${sq(n.path)}) echo ${sq(w.join(' '))} ;;`;
  });
  const choices = all.flatMap((n) =>
    n.options
      .filter((o) => o.argChoices?.length)
      .map(
        (o) =>
          `    ${flags(o)
            .map((f) => sq(`${n.path}|${f}`))
            .join('|')}) echo ${sq(o.argChoices!.join(' '))} ;;`,
      ),
  );
  const valued = all.flatMap((n) => n.options.filter(takesValue).flatMap(flags));
  const commands = all.filter((n) => n.path !== '').map((n) => sq(n.path));
  return `# ${name} completion for bash. Load it with: source <(${name} completion bash)
${fn}_words() {
  case "$1" in
${words.join('\n')}
  esac
}
${fn}_choices() {
  case "$1" in
${choices.join('\n')}
  esac
}
${fn}_is_command() {
  case "$1" in
    ${commands.join('|')}) return 0 ;;
  esac
  return 1
}
${fn}() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="\${COMP_WORDS[COMP_CWORD-1]}" path='' i w choices
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="\${COMP_WORDS[i]}"
    case "$w" in -*) continue ;; esac
    if ${fn}_is_command "\${path:+$path }$w"; then path="\${path:+$path }$w"; fi
  done
  case "$prev" in
    -c|--config) COMPREPLY=($(compgen -f -- "$cur")); return ;;
  esac
  choices="$(${fn}_choices "$path|$prev")"
  if [[ -n "$choices" ]]; then COMPREPLY=($(compgen -W "$choices" -- "$cur")); return; fi
  case " ${[...new Set(valued)].join(' ')} " in
    *" $prev "*) COMPREPLY=(); return ;;
  esac
  COMPREPLY=($(compgen -W "$(${fn}_words "$path")" -- "$cur"))
}
complete -o default -F ${fn} ${name}
`;
}

function fish(program: Command): string {
  const name = program.name();
  const fn = `__${name.replace(/[^A-Za-z0-9_]/g, '_')}`;
  const fq = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  const all = nodes(program);
  const lines = [
    `# ${name} completion for fish. Load it with: ${name} completion fish | source`,
    `set -g ${fn}_commands ${all
      .filter((n) => n.path !== '')
      .map((n) => fq(n.path))
      .join(' ')}`,
    `function ${fn}_path`,
    '    set -l words (commandline -opc)',
    '    set -e words[1]',
    "    set -l path ''",
    '    for w in $words',
    "        string match -q -- '-*' $w; and continue",
    '        set -l next (string trim -- "$path $w")',
    `        contains -- $next $${fn}_commands; and set path $next`,
    '    end',
    '    echo $path',
    'end',
    `function ${fn}_at`,
    `    set -l p (${fn}_path)`,
    '    test "$p" = "$argv[1]"',
    'end',
    `complete -c ${name} -f`,
  ];
  for (const n of all) {
    const at = `-n ${fq(`${fn}_at ${fq(n.path)}`)}`;
    for (const s of n.subcommands) lines.push(`complete -c ${name} ${at} -a ${fq(s.name)} -d ${fq(s.description)}`);
    if (n.argChoices.length) lines.push(`complete -c ${name} ${at} -a ${fq(n.argChoices.join(' '))}`);
    for (const o of n.options) {
      const parts = [`complete -c ${name} ${at}`];
      if (o.short) parts.push(`-s ${o.short.slice(1)}`);
      if (o.long) parts.push(`-l ${o.long.slice(2)}`);
      if (takesValue(o)) parts.push(o.long === '--config' ? '-r -F' : '-r');
      if (o.argChoices?.length) parts.push(`-a ${fq(o.argChoices.join(' '))}`);
      parts.push(`-d ${fq(o.description)}`);
      lines.push(parts.join(' '));
    }
  }
  return `${lines.join('\n')}\n`;
}
