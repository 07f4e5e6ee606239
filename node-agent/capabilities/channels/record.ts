// Channel rounds as one record: the board's op kinds and projection, `#name` sends and `nxc guide personas`,
// the policy every batch passes, the reactions after a commit and the tick step.
import { CHANNEL_OP_KINDS } from '../../../protocol/round.js';
import type { ThreadsCapability } from '../threads/index.js';
import { channelHandlers } from './commands.js';
import { roundPolicy, roundReactions, roundTick, sendToChannel } from './policy.js';
import { roundsProjection } from './projection.js';

export const channelsCapability: ThreadsCapability<'send' | 'guide.personas'> = {
  name: 'channels',
  opKinds: CHANNEL_OP_KINDS,
  projections: [roundsProjection],
  handlers: { ...channelHandlers, send: sendToChannel },
  appendPolicies: [roundPolicy],
  afterCommit: [roundReactions],
  tick: [roundTick],
};
