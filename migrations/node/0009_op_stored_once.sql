ALTER TABLE "ops" ALTER COLUMN "body" SET DATA TYPE json USING (CASE WHEN "raw" IS NOT NULL THEN ("raw"::json) -> 'body' ELSE "body"::json END), DROP COLUMN "raw";--> statement-breakpoint
DROP INDEX "ops_session_idx";--> statement-breakpoint
CREATE INDEX "ops_session_idx" ON "ops" USING btree ("session") WHERE "ops"."session" is not null;
