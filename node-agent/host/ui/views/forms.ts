// The reply form: `nxc reply` as a person, posted to the node's own command path.
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
};

export function replyForm(f: ReplyForm): string {
  const id = `${f.workspace}-${f.thread}`.replace(/[^A-Za-z0-9_-]/g, '_');
  return `<form class="reply" method="post" action="/w/${seg(f.workspace)}/t/${seg(f.thread)}/reply">
<input type="hidden" name="back" value="${esc(f.back)}">
<label for="text-${id}">${esc(f.label ?? 'Your answer')}</label>
<textarea id="text-${id}" name="text" rows="3" required>${esc(f.text ?? '')}</textarea>
<div class="as"><label for="actor-${id}">Reply as</label><input type="text" id="actor-${id}" name="actor" value="${esc(f.actor)}" size="16" maxlength="40" autocomplete="username" spellcheck="false" required>
<button type="submit">Reply</button></div>
</form>`;
}
