"""The LSM tree of a primary-key bucket: sorted runs, universal compaction, lookup, and the
deletion-vector maintenance that makes every batch readable without merging."""
