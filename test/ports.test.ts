// The port `npm start` asks for, and how it tells a taken address from any other failure to start:
// by the error's chain of causes, which the relay keeps from the OS error up (a real relay on a taken
// port: test/relay-ws.test.ts).
import { describe, expect, it } from 'vitest';
import { addressInUse, preferredPort } from '../launcher/ports.js';
import { NexusError } from '../protocol/errors.js';

describe('the port npm start asks for', () => {
  it.each([
    [undefined, 7420],
    ['', 7420],
    ['0', 0],
    ['7555', 7555],
  ])('NEXUS_RELAY_PORT=%s asks for port %i', (raw, port) => {
    expect(preferredPort(raw === undefined ? {} : { NEXUS_RELAY_PORT: raw })).toBe(port);
  });

  it.each(['-1', '70000', 'soon', '7420x'])('NEXUS_RELAY_PORT=%s is refused', (raw) => {
    expect(() => preferredPort({ NEXUS_RELAY_PORT: raw })).toThrow(/not a port/);
  });
});

describe('a taken address, told by the chain of causes', () => {
  const osError = Object.assign(new Error('listen EADDRINUSE: address already in use 127.0.0.1:7420'), { code: 'EADDRINUSE' });
  it.each([
    ['the OS error itself', osError, true],
    ['a coded error keeping the OS error as its cause', new NexusError('INTERNAL', 'taken', undefined, { cause: osError }), true],
    ['the OS error two causes down', new Error('start failed', { cause: new NexusError('INTERNAL', 'taken', undefined, { cause: osError }) }), true],
    ["the relay's own code for it", new NexusError('ADDRESS_IN_USE', '127.0.0.1:7420 is in use'), true],
    ['another listen failure', Object.assign(new Error('listen EACCES: permission denied'), { code: 'EACCES' }), false],
    ['a message that only quotes the words', new NexusError('USAGE', 'cannot listen: EADDRINUSE'), false],
    ['a store failure', new NexusError('STORE_FAILED', 'no store'), false],
    ['nothing', null, false],
  ])('from %s', (_what, err, expected) => {
    expect(addressInUse(err)).toBe(expected);
  });
});
