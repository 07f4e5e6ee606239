CREATE TABLE "pending_ops" (
	"id" text PRIMARY KEY NOT NULL,
	"workspace" text NOT NULL,
	"key" text NOT NULL,
	"reason" text NOT NULL,
	"raw" text NOT NULL,
	"received_at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "workspace_keys" (
	"workspace" text NOT NULL,
	"key" text NOT NULL,
	"signed_by" text NOT NULL,
	"op" text NOT NULL,
	"lamport" bigint NOT NULL,
	"ts" text NOT NULL,
	CONSTRAINT "workspace_keys_workspace_key_pk" PRIMARY KEY("workspace","key")
);
--> statement-breakpoint
ALTER TABLE "ops" ADD COLUMN "key" text;--> statement-breakpoint
ALTER TABLE "ops" ADD COLUMN "raw" text;--> statement-breakpoint
CREATE INDEX "pending_ops_workspace_idx" ON "pending_ops" USING btree ("workspace","key");