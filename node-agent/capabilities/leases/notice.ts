// The fixed text a parked operation's next session is told: where its work is, and what moved meanwhile. Pure.
import type { ParkRecord } from '../../../protocol/leases.js';

export type RestoreFacts = {
  operation: string;
  record: ParkRecord;
  /** Where the operation's branch and its base point now (null: the branch no longer exists). */
  branch_tip: string | null;
  base_tip: string | null;
  /** Whether the work was put back in the working tree; when not, why. */
  applied: boolean;
  reason: string | null;
};

/**
 * The notice, in fixed words, so a session (and a person reading its prompt) can rely on its shape. It always
 * names the branch and the commit holding the work, and says whether the branch or its base moved since the
 * park: the case nobody would otherwise notice.
 */
export function restoreNotice(f: RestoreFacts): string {
  const r = f.record;
  const lines = [`Working copy: operation ${f.operation} was parked while another operation used this working copy.`];
  if (r.work === null) {
    lines.push(`Nothing was uncommitted when it was parked; its branch was ${r.branch} at ${r.head}.`);
  } else {
    lines.push(`Its uncommitted work is on branch ${r.park_branch} at commit ${r.work} (made on ${r.branch} at ${r.head}).`);
  }
  if (f.applied) {
    lines.push(
      r.work === null
        ? `It is back on ${r.branch}.`
        : `It is back on ${r.branch} with that work uncommitted in the tree, as it was left (staged changes staged again).`,
    );
  } else {
    lines.push(`The work was NOT put back in the tree: ${f.reason ?? 'unknown reason'}.`);
    if (r.work !== null) lines.push(`To bring it over: git cherry-pick --no-commit -m 1 ${r.work}`);
  }
  if (f.branch_tip === null) lines.push(`Branch ${r.branch} no longer exists.`);
  else if (f.branch_tip === r.head) lines.push(`Branch ${r.branch} has not moved since.`);
  else lines.push(`Branch ${r.branch} HAS MOVED ON since: it was at ${r.head}, it is now at ${f.branch_tip}.`);
  if (r.base !== r.branch) {
    if (f.base_tip === null) lines.push(`Its base ${r.base} no longer exists.`);
    else if (f.base_tip === r.base_commit) lines.push(`Its base ${r.base} has not moved since.`);
    else lines.push(`Its base ${r.base} HAS MOVED ON since: it was at ${r.base_commit}, it is now at ${f.base_tip}.`);
  }
  return lines.join('\n');
}
