CREATE TABLE "operation_parts" (
	"operation" text NOT NULL,
	"kind" text NOT NULL,
	"key" text NOT NULL,
	"value" jsonb NOT NULL,
	CONSTRAINT "operation_parts_operation_kind_key_pk" PRIMARY KEY("operation","kind","key")
);
--> statement-breakpoint
INSERT INTO "operation_parts" ("operation", "kind", "key", "value") SELECT o."id", 'thread', t."key", t."value" FROM "operations" o, jsonb_each(o."state"->'threads') t;--> statement-breakpoint
INSERT INTO "operation_parts" ("operation", "kind", "key", "value") SELECT o."id", 'session', s."key", s."value" FROM "operations" o, jsonb_each(o."state"->'sessions') s;--> statement-breakpoint
UPDATE "operations" SET "state" = "state" - 'threads' - 'sessions';
