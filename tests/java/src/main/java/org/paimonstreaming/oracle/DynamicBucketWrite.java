package org.paimonstreaming.oracle;

import static org.paimonstreaming.oracle.OracleProtocol.NODES;
import static org.paimonstreaming.oracle.OracleProtocol.ROW_KIND;
import static org.paimonstreaming.oracle.OracleProtocol.stringMap;

import org.apache.paimon.Snapshot;
import org.apache.paimon.crosspartition.GlobalIndexAssigner;
import org.apache.paimon.crosspartition.IndexBootstrap;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.index.BucketAssigner;
import org.apache.paimon.index.HashBucketAssigner;
import org.apache.paimon.index.SimpleHashBucketAssigner;
import org.apache.paimon.table.BucketMode;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.RowKeyExtractor;
import org.apache.paimon.table.sink.StreamTableCommit;
import org.apache.paimon.table.sink.TableCommit;
import org.apache.paimon.table.sink.TableWriteImpl;
import org.apache.paimon.types.RowType;

import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;

/**
 * The "write-dynamic" op: rows written to a dynamic-bucket table ('bucket' = '-1') with their
 * buckets assigned as Java 1.4.2's Flink sinks assign them, in one plain JVM (each "parallel"
 * assigner an object here, rows routed to them as Flink's shuffle routes them), then written by
 * {@code TableWriteImpl.write(row, bucket)} and committed (batch, or stream with "commitUser" /
 * "commitIdentifier", as the "write" op).
 *
 * <ul>
 *   <li>HASH_DYNAMIC (primary key with every partition key): {@link HashBucketAssigner}s as
 *       {@code HashBucketAssignerOperator} (bucket from the HASH index files, key hash =
 *       trimmed primary key's hashCode), {@link SimpleHashBucketAssigner}s for an overwrite;
 *       "assigners" of them (default {@code dynamic-bucket.initial-buckets}, else 1), each row
 *       routed to assigner {@link BucketAssigner#computeAssigner}. The writer's
 *       DynamicBucketIndexMaintainer writes the HASH index files.
 *   <li>KEY_DYNAMIC (cross-partition upserts): one {@link GlobalIndexAssigner} (RocksDB index,
 *       needs frocksdbjni) as {@code GlobalIndexAssignerOperator}: bootstrapped by
 *       {@link IndexBootstrap} from the table, rows buffered, then at the end of input (batch:
 *       an empty table takes the bulk-load path) or at the first checkpoint (stream) placed by the
 *       merge engine's ExistingProcessor: the rows written include the retractions (-D) in a
 *       moved key's old partition. No overwrite.
 * </ul>
 *
 * <p>Result: {"written": [row...]}: every row handed to the writer, in order, with "_ROW_KIND"
 * and "_BUCKET".
 */
final class DynamicBucketWrite {

    private DynamicBucketWrite() {}

    static JsonNode write(FileStoreTable table, JsonNode cmd) throws Exception {
        table = PaimonOracle.onBranch(table, cmd);
        BucketMode mode = table.bucketMode();
        if (mode != BucketMode.HASH_DYNAMIC && mode != BucketMode.KEY_DYNAMIC) {
            throw new IllegalArgumentException("write-dynamic needs a dynamic-bucket table, not " + mode);
        }
        RowType rowType = table.rowType();
        List<InternalRow> rows = PaimonOracle.rowsOf(cmd, rowType);
        boolean stream = cmd.hasNonNull("commitUser") || cmd.hasNonNull("commitIdentifier");
        boolean overwrite = cmd.path("overwrite").asBoolean(false);
        String user = cmd.hasNonNull("commitUser") ? cmd.get("commitUser").asText() : UUID.randomUUID().toString();
        long identifier = BatchWriteBuilder.COMMIT_IDENTIFIER;
        if (stream) {
            if (overwrite) {
                throw new IllegalArgumentException("write-dynamic: an overwrite is a batch write");
            }
            if (cmd.hasNonNull("commitIdentifier")) {
                identifier = cmd.get("commitIdentifier").asLong();
            } else {
                Optional<Snapshot> last = table.snapshotManager().latestSnapshotOfUser(user);
                identifier = last.map(s -> s.commitIdentifier() + 1).orElse(1L);
            }
        }
        ArrayNode written = NODES.arrayNode();
        IOManager ioManager = PaimonOracle.ioManager();
        List<CommitMessage> messages;
        TableCommit commit;
        try {
            TableWriteImpl<?> w;
            if (stream) {
                w = (TableWriteImpl<?>) table.newStreamWriteBuilder().withCommitUser(user).newWrite();
                commit = table.newStreamWriteBuilder().withCommitUser(user).newCommit();
            } else {
                BatchWriteBuilder builder = table.newBatchWriteBuilder();
                if (overwrite) {
                    builder = builder.withOverwrite(stringMap(cmd.get("staticPartition")));
                }
                w = (TableWriteImpl<?>) builder.newWrite();
                commit = builder.newCommit();
            }
            try (TableWriteImpl<?> writer = w) {
                writer.withIOManager(ioManager);
                Collector collect = (row, bucket) -> {
                    ObjectNode o = ValueCodec.rowToJson(row, rowType);
                    o.put(ROW_KIND, row.getRowKind().shortString());
                    o.put("_BUCKET", bucket);
                    written.add(o);
                    writer.write(row, bucket);
                };
                if (mode == BucketMode.HASH_DYNAMIC) {
                    assignHashDynamic(table, cmd, rows, user, overwrite, collect);
                } else {
                    if (overwrite) {
                        throw new IllegalArgumentException("write-dynamic: no overwrite of a cross-partition table");
                    }
                    assignKeyDynamic(table, rows, ioManager, !stream, collect);
                }
                messages = stream ? writer.prepareCommit(false, identifier) : writer.prepareCommit(true, identifier);
            }
            PaimonOracle.pauseBeforeCommit(cmd);
            try (TableCommit c = commit) {
                if (stream) {
                    ((StreamTableCommit) c).commit(identifier, messages);
                } else {
                    ((org.apache.paimon.table.sink.BatchTableCommit) c).commit(messages);
                }
            }
        } finally {
            ioManager.close();
        }
        ObjectNode result = NODES.objectNode();
        result.set("written", written);
        return result;
    }

    interface Collector {
        void accept(InternalRow row, int bucket) throws Exception;
    }

    /** As Flink's HashBucketAssignerOperator, with `assigners` parallel instances. */
    static void assignHashDynamic(FileStoreTable table, JsonNode cmd, List<InternalRow> rows, String user,
                                  boolean overwrite, Collector collect) throws Exception {
        Integer initial = table.coreOptions().dynamicBucketInitialBuckets();
        int n = cmd.hasNonNull("assigners") ? cmd.get("assigners").asInt() : initial == null ? 1 : initial;
        long target = table.coreOptions().dynamicBucketTargetRowNum();
        Integer maxBuckets = table.coreOptions().dynamicBucketMaxBuckets();
        BucketAssigner[] assigners = new BucketAssigner[n];
        for (int i = 0; i < n; i++) {
            assigners[i] = overwrite
                    ? new SimpleHashBucketAssigner(n, i, target, maxBuckets)
                    : new HashBucketAssigner(table.snapshotManager(), user, table.store().newIndexFileHandler(),
                            n, n, i, target, maxBuckets);
        }
        RowKeyExtractor extractor = table.createRowKeyExtractor();
        for (InternalRow row : rows) {
            extractor.setRecord(row);
            BinaryRow partition = extractor.partition();
            int hash = extractor.trimmedPrimaryKey().hashCode();
            // Flink's shuffle to the assigners (HashBucketAssignerOperator's input channel)
            int channel = BucketAssigner.computeAssigner(partition.hashCode(), hash, n, n);
            collect.accept(row, assigners[channel].assign(partition, hash));
        }
    }

    /** As Flink's GlobalIndexAssignerOperator with parallelism 1. */
    static void assignKeyDynamic(FileStoreTable table, List<InternalRow> rows, IOManager ioManager,
                                 boolean endInput, Collector collect) throws Exception {
        GlobalIndexAssigner assigner = new GlobalIndexAssigner(table);
        List<Exception> failed = new ArrayList<>();
        try {
            assigner.open(0, ioManager, 1, 0, (row, bucket) -> {
                try {
                    collect.accept(row, bucket);
                } catch (Exception e) {
                    failed.add(e);
                }
            });
            new IndexBootstrap(table).bootstrap(1, 0, row -> {
                try {
                    assigner.bootstrapKey(row);
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            });
            for (InternalRow row : rows) {
                assigner.processInput(row); // buffered until the bootstrap ends
            }
            assigner.endBoostrap(endInput);
        } finally {
            assigner.close();
        }
        if (!failed.isEmpty()) {
            throw failed.get(0);
        }
    }
}
