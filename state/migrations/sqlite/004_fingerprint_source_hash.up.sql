-- fingerprints carry the hash of the source values (24-byte entries; older ones are dropped)
DELETE FROM subsync_fingerprint;
DELETE FROM subsync_fingerprint_recent;
ALTER TABLE subsync_fingerprint_recent ADD COLUMN source INTEGER NOT NULL DEFAULT 0;
