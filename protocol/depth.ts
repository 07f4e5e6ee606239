// The depth guard's one number: how long an open chain of commissions may grow. The engine refuses past
// it and every prompt names it, so it lives with the vocabulary both read.

/** The longest open chain of commissions a workspace admits. */
export const DEPTH_CAP = 32;
