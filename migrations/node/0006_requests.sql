CREATE TABLE "requests" (
	"key" text PRIMARY KEY NOT NULL,
	"command" text NOT NULL,
	"operation" text,
	"thread" text,
	"result" jsonb,
	"at" text NOT NULL
);
--> statement-breakpoint
CREATE INDEX "requests_at_idx" ON "requests" USING btree ("at");