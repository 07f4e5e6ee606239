// For `npm run test:load`: CPU-burning processes beside the suite (NEXUS_CPU_BURN of them, default 4), so the
// core scenarios are shown to hold on a machine as busy as CI and users' machines get. Stopped at teardown,
// and waited for: the suite's leak check runs next and must not find them still dying.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';

export default function setup(): () => Promise<void> {
  const n = Number(process.env['NEXUS_CPU_BURN'] ?? 4);
  const burners: ChildProcess[] = [];
  for (let i = 0; i < n; i++) {
    burners.push(spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }));
  }
  process.stderr.write(`test:load: ${n} CPU-burning processes run beside the suite\n`);
  return async () => {
    await Promise.all(
      burners.map(async (b) => {
        if (b.exitCode !== null || b.signalCode !== null) return;
        const gone = once(b, 'exit');
        b.kill('SIGKILL');
        await gone;
      }),
    );
  };
}
