// docker-compose.yml as the tests read it: parsed with its anchors merged, and the node service's
// command matched against the nxs command table (the verb it names, and its flags parsed strictly).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { NXS } from '../../node-agent/cli/nxs.js';
import { findVerb, verbArgs, type Args, type Verb } from '../../node-agent/cli/spec.js';
import { REPO } from './workspace.js';

export type Service = {
  image?: string;
  build?: unknown;
  pull_policy?: string;
  user?: string;
  command?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
};

export const COMPOSE_TEXT = readFileSync(join(REPO, 'docker-compose.yml'), 'utf8');
export const compose = parse(COMPOSE_TEXT, { merge: true }) as { services: Record<string, Service>; volumes: Record<string, unknown> };

/** The image's ENTRYPOINT, from the Dockerfile: what a service's `command` is given to. */
export function entrypoint(): string[] {
  const line = /^ENTRYPOINT\s+(\[.*\])\s*$/m.exec(readFileSync(join(REPO, 'Dockerfile'), 'utf8'));
  if (line === null) throw new Error('the Dockerfile has no ENTRYPOINT in exec form');
  return JSON.parse(line[1]!) as string[];
}

/** The nxs verb a command names and its parsed flags; throws USAGE as the CLI would for a flag it does not know. */
export function nxsCommand(argv: readonly string[]): { verb: Verb; args: Args } {
  const found = findVerb(NXS, argv);
  if (found === null) throw new Error(`nxs ${argv.join(' ')}: no such verb`);
  return { verb: found.verb, args: verbArgs(NXS, found.verb, found.rest) };
}

/** A compose port mapping `HOST_IP:HOST_PORT:CONTAINER_PORT`, its host port possibly a `${VAR:-default}`. */
export function portMapping(spec: string): { hostIp: string; hostPort: string; containerPort: number } {
  const m = /^(\d{1,3}(?:\.\d{1,3}){3}):(\$\{[A-Z_]+:-\d+\}|\d+):(\d+)$/.exec(spec);
  if (m === null) throw new Error(`${spec}: not HOST_IP:HOST_PORT:CONTAINER_PORT`);
  return { hostIp: m[1]!, hostPort: m[2]!, containerPort: Number(m[3]) };
}

/** The value that follows `flag` in argv. */
export function flagValue(argv: readonly string[], flag: string): string | undefined {
  const i = argv.indexOf(flag);
  return i < 0 ? undefined : argv[i + 1];
}
