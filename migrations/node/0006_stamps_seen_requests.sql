CREATE TABLE "requests" (
	"key" text PRIMARY KEY NOT NULL,
	"command" text NOT NULL,
	"operation" text,
	"thread" text,
	"result" jsonb,
	"at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "stamps_seen" (
	"jti" text PRIMARY KEY NOT NULL,
	"forget_after" bigint NOT NULL
);
--> statement-breakpoint
CREATE INDEX "requests_at_idx" ON "requests" USING btree ("at");--> statement-breakpoint
CREATE INDEX "stamps_seen_forget_idx" ON "stamps_seen" USING btree ("forget_after");