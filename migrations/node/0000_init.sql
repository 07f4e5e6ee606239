CREATE TABLE "operations" (
	"id" text PRIMARY KEY NOT NULL,
	"state" jsonb NOT NULL,
	"finished" boolean NOT NULL,
	"opened_lamport" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "ops" (
	"id" text PRIMARY KEY NOT NULL,
	"local_seq" bigserial NOT NULL,
	"workspace" text NOT NULL,
	"origin" text NOT NULL,
	"lamport" bigint NOT NULL,
	"ts" text NOT NULL,
	"kind" text NOT NULL,
	"operation" text NOT NULL,
	"thread" text,
	"session" text,
	"body" jsonb NOT NULL,
	"sig" text,
	CONSTRAINT "ops_local_seq_unique" UNIQUE("local_seq")
);
--> statement-breakpoint
CREATE TABLE "persona_runs" (
	"workspace" text NOT NULL,
	"role" text NOT NULL,
	"hash" text NOT NULL,
	"lamport" bigint NOT NULL,
	CONSTRAINT "persona_runs_workspace_role_pk" PRIMARY KEY("workspace","role")
);
--> statement-breakpoint
CREATE TABLE "session_procs" (
	"session" text NOT NULL,
	"turn" integer NOT NULL,
	"sidecar_pid" integer,
	"runtime_pid" integer,
	"started_at" text NOT NULL,
	"ended_at" text,
	"exit_code" integer,
	"signal" text,
	CONSTRAINT "session_procs_session_turn_pk" PRIMARY KEY("session","turn")
);
--> statement-breakpoint
CREATE INDEX "operations_finished_idx" ON "operations" USING btree ("finished","opened_lamport");--> statement-breakpoint
CREATE INDEX "ops_operation_idx" ON "ops" USING btree ("operation","lamport");--> statement-breakpoint
CREATE INDEX "ops_thread_idx" ON "ops" USING btree ("thread","lamport");--> statement-breakpoint
CREATE INDEX "ops_session_idx" ON "ops" USING btree ("session");--> statement-breakpoint
CREATE INDEX "ops_lamport_idx" ON "ops" USING btree ("lamport");