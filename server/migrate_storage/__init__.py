"""`pizza-apiserver migrate-storage`: rewrite stored objects in their storage version (docs/storage.md)."""
