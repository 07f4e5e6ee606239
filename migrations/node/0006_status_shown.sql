ALTER TABLE "operations" ADD COLUMN "shown" boolean DEFAULT true NOT NULL;--> statement-breakpoint
CREATE INDEX "operations_shown_idx" ON "operations" USING btree ("shown","finished","opened_lamport");--> statement-breakpoint
UPDATE "operations" SET "shown" = false WHERE "state"->'threads' = '{}'::jsonb;
