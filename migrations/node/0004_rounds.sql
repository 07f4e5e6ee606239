CREATE TABLE "rounds" (
	"id" text PRIMARY KEY NOT NULL,
	"operation" text NOT NULL,
	"workspace" text,
	"board" jsonb,
	"head" jsonb NOT NULL,
	"completed" boolean NOT NULL,
	"next_deadline" text
);
--> statement-breakpoint
CREATE INDEX "rounds_open_idx" ON "rounds" USING btree ("completed","next_deadline");--> statement-breakpoint
CREATE INDEX "rounds_operation_idx" ON "rounds" USING btree ("operation");