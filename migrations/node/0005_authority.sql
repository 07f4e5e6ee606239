ALTER TABLE "ops" ADD COLUMN "inert" text;--> statement-breakpoint
CREATE INDEX "ops_inert_idx" ON "ops" USING btree ("inert") WHERE "ops"."inert" is not null;