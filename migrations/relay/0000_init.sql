-- The relay's tables: streams (with their head), the ops of each stream by seq, and the operator token.
CREATE TABLE streams (
  name text PRIMARY KEY,
  token_hash text NOT NULL,
  head bigint NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE stream_ops (
  stream text NOT NULL REFERENCES streams (name),
  seq bigint NOT NULL,
  op_id text NOT NULL,
  op text NOT NULL,
  received_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (stream, seq),
  UNIQUE (stream, op_id)
);

CREATE TABLE relay_operator (
  id smallint PRIMARY KEY CHECK (id = 1),
  token_hash text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
