-- Each op's author workspace, taken from its text when it is appended, so a joining node can ask for the
-- ops of a few workspaces first (filtered history) without the relay reading every op of the stream.
-- Rows stored before this column get it from their text once, here.
ALTER TABLE stream_ops ADD COLUMN IF NOT EXISTS workspace text;
UPDATE stream_ops SET workspace = (op::json) ->> 'workspace' WHERE workspace IS NULL;
CREATE INDEX IF NOT EXISTS stream_ops_workspace_seq ON stream_ops (stream, workspace, seq);
