// Runs once before the suite: builds dist/ (sessions run the built CLI) and a migrated store template.
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';

export default async function setup(project: TestProject): Promise<void> {
  execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
  // One NEXUS_HOME for the whole run: its store template is made once and copied by every workspace.
  const home = join(tmpdir(), `nexus-test-home-${process.pid}`);
  mkdirSync(home, { recursive: true });
  const { storeTemplate } = await import('../../node-agent/adapters/store/index.js');
  await storeTemplate(home);
  project.provide('nexusHome', home);
}

declare module 'vitest' {
  export interface ProvidedContext {
    nexusHome: string;
  }
}
