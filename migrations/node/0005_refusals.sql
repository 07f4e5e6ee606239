ALTER TABLE "session_procs" ADD COLUMN "refused_code" text;--> statement-breakpoint
ALTER TABLE "session_procs" ADD COLUMN "refused_message" text;