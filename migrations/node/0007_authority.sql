ALTER TABLE "operations" ADD COLUMN "shown" boolean DEFAULT true NOT NULL;--> statement-breakpoint
ALTER TABLE "ops" ADD COLUMN "inert" text;--> statement-breakpoint
CREATE INDEX "operations_shown_idx" ON "operations" USING btree ("shown","finished","opened_lamport");--> statement-breakpoint
CREATE INDEX "ops_inert_idx" ON "ops" USING btree ("inert") WHERE "ops"."inert" is not null;--> statement-breakpoint
UPDATE "operations" SET "shown" = false WHERE "state"->'threads' = '{}'::jsonb;
