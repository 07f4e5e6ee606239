// The forms: `nxc reply` (with `nxc done` beside it) and `nxc withdraw` as a person, posted to the node's own command path. Each
// rendered form carries a request key of its own, so a form sent twice (a reload that posts again) is
// applied once, and the second post gets the first answer.
import { newRequestKey } from '../../../../protocol/commands.js';
import { esc, seg } from '../html.js';

export type ReplyForm = {
  workspace: string;
  thread: string;
  /** The handle the page posts as (the person's NXC_ACTOR). */
  actor: string;
  /** Where to go back to after the reply is posted. */
  back: string;
  /** Text to put back in the box after a refusal. */
  text?: string;
  label?: string;
  /**
   * Offer Done beside Reply (`nxc done <thread>`, as the person named in the same field): the result is read,
   * nothing is posted and nobody is woken. It needs no text, and carries a request key of its own.
   */
  done?: boolean;
};

export function replyForm(f: ReplyForm): string {
  const id = `${f.workspace}-${f.thread}`.replace(/[^A-Za-z0-9_-]/g, '_');
  return `<form class="reply" method="post" action="/w/${seg(f.workspace)}/t/${seg(f.thread)}/reply">
<input type="hidden" name="back" value="${esc(f.back)}">
<input type="hidden" name="request" value="${newRequestKey()}">
<label for="text-${id}">${esc(f.label ?? 'Your answer')}</label>
<textarea id="text-${id}" name="text" rows="3" required>${esc(f.text ?? '')}</textarea>
<div class="as"><label for="actor-${id}">Reply as</label><input type="text" id="actor-${id}" name="actor" value="${esc(f.actor)}" size="16" maxlength="40" autocomplete="username" spellcheck="false" required>
<button type="submit">Reply</button>${f.done === true ? doneButton(f) : ''}</div>
</form>`;
}

function doneButton(f: ReplyForm): string {
  return `
<input type="hidden" name="done_request" value="${newRequestKey()}">
<button type="submit" class="done" formaction="/w/${seg(f.workspace)}/t/${seg(f.thread)}/done" formnovalidate title="nxc done ${esc(f.thread)}: read, nothing to add; it leaves Needs you and wakes nobody">Done</button>`;
}

export type WithdrawForm = {
  workspace: string;
  /** The operation's first thread: the one the sender's send handed back. */
  thread: string;
  actor: string;
  back: string;
};

/** `nxc withdraw --thread <first thread>`: only the person who sent the first commission may; the command says so otherwise. */
export function withdrawForm(f: WithdrawForm): string {
  const id = `${f.workspace}-${f.thread}`.replace(/[^A-Za-z0-9_-]/g, '_');
  return `<form class="withdraw" method="post" action="/w/${seg(f.workspace)}/t/${seg(f.thread)}/withdraw" aria-describedby="withdraw-about-${id}">
<input type="hidden" name="back" value="${esc(f.back)}">
<input type="hidden" name="request" value="${newRequestKey()}">
<p class="meta" id="withdraw-about-${id}">Takes the commission back as <code>nxc withdraw --thread ${esc(f.thread)}</code> does: its open threads are answered as withdrawn, its sessions are asked to stop, and once they are gone what they left uncommitted is parked on a branch and the working copy moves on. A later message in this thread brings the work back. Only the person who sent it may.</p>
<div class="as"><label for="wactor-${id}">Withdraw as</label><input type="text" id="wactor-${id}" name="actor" value="${esc(f.actor)}" size="16" maxlength="40" autocomplete="username" spellcheck="false" required>
<button type="submit" class="danger">Withdraw</button></div>
</form>`;
}

