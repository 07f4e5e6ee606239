// For `npm run test:load`: CPU-burning processes beside the suite (NEXUS_CPU_BURN of them, default 4), so the
// core scenarios are shown to hold on a machine as busy as CI and users' machines get. Stopped at teardown.
import { spawn, type ChildProcess } from 'node:child_process';

export default function setup(): () => void {
  const n = Number(process.env['NEXUS_CPU_BURN'] ?? 4);
  const burners: ChildProcess[] = [];
  for (let i = 0; i < n; i++) {
    burners.push(spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }));
  }
  process.stderr.write(`test:load: ${n} CPU-burning processes run beside the suite\n`);
  return () => {
    for (const b of burners) b.kill('SIGKILL');
  };
}
