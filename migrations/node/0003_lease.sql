CREATE TABLE "leases" (
	"workspace" text PRIMARY KEY NOT NULL,
	"state" jsonb NOT NULL,
	"head" jsonb NOT NULL
);
