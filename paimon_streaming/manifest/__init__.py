"""Manifest metadata: records, metadata files (Avro, or ORC/Parquet by `manifest.format`), and the merge of manifests."""
from .entries import (ADD, DELETE, DataFileMeta, DeletionVectorMeta, IndexFileMeta, IndexManifestEntry,
                      ManifestEntry, ManifestFileMeta, SimpleStats)
from .files import IndexManifestFile, ManifestFile, ManifestList, combine_index_entries, index_key
from .merge import live_entries, merge_entries, merge_manifests

__all__ = ["ADD", "DELETE", "DataFileMeta", "DeletionVectorMeta", "IndexFileMeta", "IndexManifestEntry",
           "ManifestEntry", "ManifestFileMeta", "SimpleStats", "IndexManifestFile", "ManifestFile",
           "ManifestList", "combine_index_entries", "index_key", "live_entries", "merge_entries", "merge_manifests"]
