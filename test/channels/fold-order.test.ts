// Properties of a round played from random scripts: any arrival order folds to the same board, and the brakes hold.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { allRecords, foldBoard, inFlight, MAX_ROUND_CONCURRENCY, passesUsed, type Channel } from '../../node-agent/capabilities/channels/index.js';
import { CHANNELS, play, type Move } from './sim.js';

const moveArb: fc.Arbitrary<Move> = fc.record({
  action: fc.nat({ max: 12 }),
  pick: fc.nat({ max: 40 }),
  flag: fc.nat({ max: 20 }),
  minutes: fc.integer({ min: 1, max: 45 }),
});
const scriptArb = fc.array(moveArb, { minLength: 5, maxLength: 120 });
const channelArb = fc.constantFrom<Channel>(...Object.values(CHANNELS));

describe('the board fold', () => {
  it('folds any arrival order of a round’s ops, re-deliveries included, to the same board', () => {
    const arb = channelArb.chain((ch) =>
      scriptArb.chain((moves) => {
        const run = play(ch, moves);
        return fc.array(fc.nat({ max: run.ops.length - 1 }), { maxLength: 10 }).chain((again) => {
          const delivered = [...run.ops, ...again.map((i) => run.ops[i]!)];
          return fc.shuffledSubarray(delivered, { minLength: delivered.length, maxLength: delivered.length }).map((shuffled) => ({ run, shuffled }));
        });
      }),
    );
    fc.assert(
      fc.property(arb, ({ run, shuffled }) => {
        expect(foldBoard(run.ops)).toEqual(run.final);
        expect(foldBoard(shuffled)).toEqual(run.final);
      }),
      { numRuns: 300 },
    );
  });
});

describe('the brakes, on every board a round passes through', () => {
  it('an ordered run never has two steps in flight; a fan-out never more than eight; passes never exceed the limit', () => {
    fc.assert(
      fc.property(channelArb, scriptArb, (ch, moves) => {
        const run = play(ch, moves);
        for (const b of run.boards) {
          const flying = allRecords(b).filter(inFlight).length;
          if (b.channel.flow === 'sequential') expect(flying).toBeLessThanOrEqual(1);
          else expect(flying).toBeLessThanOrEqual(MAX_ROUND_CONCURRENCY);
          expect(passesUsed(b)).toBeLessThanOrEqual(b.channel.passes);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('every step opens one hop below the requester, in every pass', () => {
    fc.assert(
      fc.property(channelArb, scriptArb, fc.nat({ max: 30 }), (ch, moves, depth) => {
        const run = play(ch, moves, depth);
        expect(run.depths.every((d) => d === depth + 1)).toBe(true);
        expect(run.final.requester.depth).toBe(depth);
      }),
      { numRuns: 100 },
    );
  });

  it('a completed round was completed once, and nothing started after it', () => {
    fc.assert(
      fc.property(channelArb, scriptArb, (ch, moves) => {
        const { ops } = play(ch, moves);
        let open = true;
        for (const op of ops) {
          if (op.kind === 'round.completed') {
            expect(open).toBe(true);
            open = false;
          } else if (op.kind === 'round.reasked') open = true;
          else if (op.kind === 'step.started' || op.kind === 'round.reworked') expect(open).toBe(true);
        }
      }),
      { numRuns: 200 },
    );
  });
});
