-- Migration number: 0008  files listed in helppuff.json's knowledge.files (`helppuff config apply`):
-- a listed file taken out of the list is removed at the next apply; a file uploaded by hand
-- (`helppuff knowledge upload`) is not touched by it.
ALTER TABLE knowledge_files ADD COLUMN listed INTEGER NOT NULL DEFAULT 0;
