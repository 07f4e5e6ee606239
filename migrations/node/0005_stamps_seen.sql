CREATE TABLE "stamps_seen" (
	"jti" text PRIMARY KEY NOT NULL,
	"forget_after" bigint NOT NULL
);
--> statement-breakpoint
CREATE INDEX "stamps_seen_forget_idx" ON "stamps_seen" USING btree ("forget_after");