// The providers' wire formats, written by hand from their API references: Anthropic Messages, OpenAI Chat Completions and OpenAI Responses.

export type ScriptedCall = {
  name: string;
  id?: string;
  /** An object is sent as JSON; a string is sent verbatim (for malformed arguments). */
  input?: unknown;
  /** Responses only: the namespace of a tool offered inside one (codex offers an MCP server's tools so). */
  namespace?: string;
};

export type ScriptedReply = {
  text?: string;
  tool_calls?: ScriptedCall[];
  /** null: the provider reports no usage at all. */
  usage?: { input: number; output: number } | null;
  stop?: string;
};

export type SseEvent = { event?: string; data: string };

export function sse(events: SseEvent[]): string {
  return events.map((e) => `${e.event ? `event: ${e.event}\n` : ''}data: ${e.data}\n\n`).join('');
}

/** The tool arguments as the provider would send them: an object is serialised, a string is sent as is (malformed on purpose). */
function argsText(input: unknown): string {
  return typeof input === 'string' ? input : JSON.stringify(input ?? {});
}

/** Splits text into a few pieces so streaming clients really assemble deltas. */
function pieces(text: string, n = 3): string[] {
  if (text.length < n) return [text];
  const size = Math.ceil(text.length / n);
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

// ---------------------------------------------------------------- Anthropic Messages

export function anthropicMessage(r: ScriptedReply, model: string, n: number): Record<string, unknown> {
  const content: unknown[] = [];
  if (r.text) content.push({ type: 'text', text: r.text });
  for (const [i, call] of (r.tool_calls ?? []).entries()) {
    const input = typeof call.input === 'string' ? {} : (call.input ?? {});
    content.push({ type: 'tool_use', id: call.id ?? `toolu_${n}_${i}`, name: call.name, input });
  }
  const message: Record<string, unknown> = {
    id: `msg_${n}`,
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: r.stop ?? ((r.tool_calls ?? []).length > 0 ? 'tool_use' : 'end_turn'),
    stop_sequence: null,
  };
  if (r.usage !== null) message['usage'] = { input_tokens: r.usage?.input ?? 10, output_tokens: r.usage?.output ?? 5 };
  return message;
}

export function anthropicStream(r: ScriptedReply, model: string, n: number): string {
  const usage = r.usage === null ? undefined : { input: r.usage?.input ?? 10, output: r.usage?.output ?? 5 };
  const start: Record<string, unknown> = { id: `msg_${n}`, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null };
  if (usage) start['usage'] = { input_tokens: usage.input, output_tokens: 1 };
  const events: SseEvent[] = [{ event: 'message_start', data: JSON.stringify({ type: 'message_start', message: start }) }];
  let index = 0;
  if (r.text) {
    events.push({ event: 'content_block_start', data: JSON.stringify({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } }) });
    for (const t of pieces(r.text)) {
      events.push({ event: 'content_block_delta', data: JSON.stringify({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: t } }) });
    }
    events.push({ event: 'content_block_stop', data: JSON.stringify({ type: 'content_block_stop', index }) });
    index++;
  }
  for (const [i, call] of (r.tool_calls ?? []).entries()) {
    const block = { type: 'tool_use', id: call.id ?? `toolu_${n}_${i}`, name: call.name, input: {} };
    events.push({ event: 'content_block_start', data: JSON.stringify({ type: 'content_block_start', index, content_block: block }) });
    for (const part of pieces(argsText(call.input))) {
      events.push({ event: 'content_block_delta', data: JSON.stringify({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: part } }) });
    }
    events.push({ event: 'content_block_stop', data: JSON.stringify({ type: 'content_block_stop', index }) });
    index++;
  }
  const stop = r.stop ?? ((r.tool_calls ?? []).length > 0 ? 'tool_use' : 'end_turn');
  const delta: Record<string, unknown> = { type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null } };
  if (usage) delta['usage'] = { output_tokens: usage.output };
  events.push({ event: 'message_delta', data: JSON.stringify(delta) });
  events.push({ event: 'message_stop', data: JSON.stringify({ type: 'message_stop' }) });
  return sse(events);
}

export function anthropicError(status: number): Record<string, unknown> {
  const type = status === 429 ? 'rate_limit_error' : status === 529 ? 'overloaded_error' : status >= 500 ? 'api_error' : status === 401 ? 'authentication_error' : 'invalid_request_error';
  return { type: 'error', error: { type, message: `scripted ${status}` } };
}

/** An error event inside an open stream, as the API sends when it is overloaded mid-answer. */
export function anthropicStreamError(type: string): string {
  return sse([{ event: 'error', data: JSON.stringify({ type: 'error', error: { type, message: `scripted ${type}` } }) }]);
}

// ---------------------------------------------------------------- OpenAI Chat Completions

export function openaiCompletion(r: ScriptedReply, model: string, n: number): Record<string, unknown> {
  const calls = (r.tool_calls ?? []).map((c, i) => ({ id: c.id ?? `call_${n}_${i}`, type: 'function', function: { name: c.name, arguments: argsText(c.input) } }));
  const body: Record<string, unknown> = {
    id: `chatcmpl-${n}`,
    object: 'chat.completion',
    created: 0,
    model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: r.text ?? null, ...(calls.length > 0 ? { tool_calls: calls } : {}) },
        finish_reason: r.stop ?? (calls.length > 0 ? 'tool_calls' : 'stop'),
      },
    ],
  };
  if (r.usage !== null) {
    const u = { input: r.usage?.input ?? 10, output: r.usage?.output ?? 5 };
    body['usage'] = { prompt_tokens: u.input, completion_tokens: u.output, total_tokens: u.input + u.output };
  }
  return body;
}

export function openaiStream(r: ScriptedReply, model: string, n: number, includeUsage: boolean): string {
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
    JSON.stringify({ id: `chatcmpl-${n}`, object: 'chat.completion.chunk', created: 0, model, choices, ...extra });
  const events: SseEvent[] = [{ data: chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]) }];
  for (const t of r.text ? pieces(r.text) : []) events.push({ data: chunk([{ index: 0, delta: { content: t }, finish_reason: null }]) });
  for (const [i, c] of (r.tool_calls ?? []).entries()) {
    const head = { index: i, id: c.id ?? `call_${n}_${i}`, type: 'function', function: { name: c.name, arguments: '' } };
    events.push({ data: chunk([{ index: 0, delta: { tool_calls: [head] }, finish_reason: null }]) });
    for (const part of pieces(argsText(c.input))) {
      events.push({ data: chunk([{ index: 0, delta: { tool_calls: [{ index: i, function: { arguments: part } }] }, finish_reason: null }]) });
    }
  }
  const finish = r.stop ?? ((r.tool_calls ?? []).length > 0 ? 'tool_calls' : 'stop');
  events.push({ data: chunk([{ index: 0, delta: {}, finish_reason: finish }]) });
  if (includeUsage && r.usage !== null) {
    const u = { input: r.usage?.input ?? 10, output: r.usage?.output ?? 5 };
    events.push({ data: chunk([], { usage: { prompt_tokens: u.input, completion_tokens: u.output, total_tokens: u.input + u.output } }) });
  }
  events.push({ data: '[DONE]' });
  return sse(events);
}

export function openaiError(status: number): Record<string, unknown> {
  return { error: { message: `scripted ${status}`, type: status === 429 ? 'rate_limit_exceeded' : 'server_error', code: null, param: null } };
}

// ---------------------------------------------------------------- OpenAI Responses (what codex speaks)

function responsesUsage(r: ScriptedReply): Record<string, unknown> | null {
  if (r.usage === null) return null;
  const u = { input: r.usage?.input ?? 10, output: r.usage?.output ?? 5 };
  return { input_tokens: u.input, input_tokens_details: { cached_tokens: 0 }, output_tokens: u.output, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: u.input + u.output };
}

/** The output items: one assistant message for the text, then one function_call per tool call. */
function responsesOutput(r: ScriptedReply, n: number): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  if (r.text) out.push({ type: 'message', id: `msg_${n}`, status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: r.text, annotations: [] }] });
  for (const [i, c] of (r.tool_calls ?? []).entries()) {
    const namespace = c.namespace === undefined ? {} : { namespace: c.namespace };
    out.push({ type: 'function_call', id: `fc_${n}_${i}`, call_id: c.id ?? `call_${n}_${i}`, name: c.name, ...namespace, arguments: argsText(c.input), status: 'completed' });
  }
  return out;
}

/** A response object; `stop` set means it ended incomplete for that reason (e.g. max_output_tokens). */
export function responsesObject(r: ScriptedReply, model: string, n: number, output = responsesOutput(r, n)): Record<string, unknown> {
  return {
    id: `resp_${n}`,
    object: 'response',
    created_at: 0,
    status: r.stop === undefined ? 'completed' : 'incomplete',
    incomplete_details: r.stop === undefined ? null : { reason: r.stop },
    error: null,
    model,
    output,
    parallel_tool_calls: true,
    tool_choice: 'auto',
    tools: [],
    usage: responsesUsage(r),
  };
}

/** The stream: created, then per item added / deltas / done, then completed (or incomplete) with the usage. */
export function responsesStream(r: ScriptedReply, model: string, n: number): string {
  let seq = 0;
  const events: SseEvent[] = [];
  const emit = (type: string, body: Record<string, unknown>) => events.push({ event: type, data: JSON.stringify({ type, sequence_number: seq++, ...body }) });
  const output = responsesOutput(r, n);
  emit('response.created', { response: { ...responsesObject(r, model, n, []), status: 'in_progress', incomplete_details: null, usage: null } });
  for (const [index, item] of output.entries()) {
    const id = item['id'];
    if (item['type'] === 'message') {
      const text = r.text ?? '';
      emit('response.output_item.added', { output_index: index, item: { ...item, status: 'in_progress', content: [] } });
      emit('response.content_part.added', { item_id: id, output_index: index, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } });
      for (const delta of pieces(text)) emit('response.output_text.delta', { item_id: id, output_index: index, content_index: 0, delta });
      emit('response.output_text.done', { item_id: id, output_index: index, content_index: 0, text });
      emit('response.content_part.done', { item_id: id, output_index: index, content_index: 0, part: { type: 'output_text', text, annotations: [] } });
    } else {
      const args = String(item['arguments']);
      emit('response.output_item.added', { output_index: index, item: { ...item, status: 'in_progress', arguments: '' } });
      for (const delta of pieces(args)) emit('response.function_call_arguments.delta', { item_id: id, output_index: index, delta });
      emit('response.function_call_arguments.done', { item_id: id, output_index: index, arguments: args });
    }
    emit('response.output_item.done', { output_index: index, item });
  }
  const done = responsesObject(r, model, n, output);
  emit(done['status'] === 'completed' ? 'response.completed' : 'response.incomplete', { response: done });
  return sse(events);
}

/** A failure inside an opened stream: response.failed carrying the error code. */
export function responsesStreamError(code: string): string {
  const type = 'response.failed';
  const response = { id: 'resp_failed', object: 'response', status: 'failed', error: { code, message: `scripted ${code}` }, output: [], usage: null };
  return sse([{ event: type, data: JSON.stringify({ type, sequence_number: 0, response }) }]);
}
