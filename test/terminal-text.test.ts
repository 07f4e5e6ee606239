// What others wrote reaches a person's terminal through nxc: a session's answer, a peer's subject, a relay's error.
// Escape sequences in it are shown, never obeyed (OSC 52 would set the reader's clipboard, a clear-screen and a
// colour would paint "ALL CLEAR" over what happened); --json keeps the text exactly, escaped by JSON.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { visible, visibleDeep } from '../node-agent/cli/visible.js';
import { makeWorkspace, type TestWorkspace } from './helpers/workspace.js';

const HOSTILE = 'looks fine\u001b]52;c;ZWNobyBwd25lZA==\u0007\u001b[2J\u001b[31mALL CLEAR\u001b[0m\rX \u009b2J \u202eevil\u202c';
/** Any character a terminal acts on: C0 but tab and newline, DEL, C1, and the bidirectional overrides. */
const OBEYED = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

describe('visible', () => {
  it('shows each control character as a mark, and keeps newlines, tabs and ordinary text', () => {
    expect(visible('a\u001b[31mb\u0007c\rd\u007fe')).toBe('a\u241b[31mb\u2407c\u240dd\u2421e');
    expect(visible('\u009b2J \u202eabc\u2066')).toBe('<U+009B>2J <U+202E>abc<U+2066>');
    expect(visible('line one\n\tline two: é, 漢字, 🙂')).toBe('line one\n\tline two: é, 漢字, 🙂');
  });

  it('reaches every string of a view, and changes nothing else', () => {
    const view = { n: 3, ok: true, none: null, list: ['\u001bx', { deep: '\u0007' }] };
    expect(visibleDeep(view)).toEqual({ n: 3, ok: true, none: null, list: ['\u241bx', { deep: '\u2407' }] });
    expect(view.list[0]).toBe('\u001bx');
  });
});

describe('nxc output of text others wrote', () => {
  let ws: TestWorkspace;
  let thread = '';
  beforeAll(async () => {
    ws = await makeWorkspace();
    const sent = await ws.nxc(['send', '@bob', '--subject', `subject ${HOSTILE}`, '--json', HOSTILE]);
    expect(sent.code, sent.stderr).toBe(0);
    thread = sent.json.thread as string;
  }, 60_000);
  afterAll(() => ws?.cleanup());

  it('threads show and status print no character a terminal obeys; the marks stand in their place', async () => {
    const shown = await ws.nxc(['threads', 'show', thread]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).not.toMatch(OBEYED);
    expect(shown.stdout).toContain('looks fine\u241b]52;c;ZWNobyBwd25lZA==\u2407\u241b[2J');
    const status = await ws.nxc(['status', '--all']);
    expect(status.stdout).toContain('subject looks fine\u241b]52');
    expect(status.stdout).not.toMatch(OBEYED);
  });

  it('--json keeps the text exactly as written', async () => {
    const shown = await ws.nxc(['threads', 'show', thread, '--json']);
    expect(shown.json.messages[0].text).toBe(HOSTILE);
    expect(shown.stdout).not.toMatch(OBEYED);
  });

  it('an error that quotes what was typed shows it too', async () => {
    const r = await ws.nxc(['threads', 'show', 't-\u001b[2Jnope']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('\u241b[2J');
    expect(r.stderr).not.toMatch(OBEYED);
  });
});
