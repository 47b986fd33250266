"""Snapshot expiration: the tags document's scenarios, retention options, consumers,
changelog and deletion-vector index files, and interop with pypaimon and Java."""
from __future__ import annotations

import datetime as dt
import os
import time

import pyarrow as pa
import pytest

from paimon_streaming.commit import CommitMessage, Increment
from paimon_streaming.consumers import ConsumerManager
from paimon_streaming.errors import InvalidOptionError
from paimon_streaming.file_cleanup import FileCleaner
from paimon_streaming.table import Table
from conftest import pypaimon_create, pypaimon_create_tag, pypaimon_read, pypaimon_write, rows_by

SCHEMA = pa.schema([("id", pa.int64(), False), ("v", pa.string())])
FUTURE = 2 ** 62
# histories counted snapshot by snapshot: no COMPACT snapshot merging the small files in between
ONE_SNAPSHOT_PER_WRITE = {"compaction.min.file-num": "1000"}


def batch(ids, v="x"):
    return pa.table({"id": list(ids), "v": [v] * len(ids)}, schema=SCHEMA)


def referenced_files(t) -> set[str]:
    """Every file path the table's snapshots and tags reference (data, manifests, index)."""
    cleaner = FileCleaner(t.file_io, t.path, t.schema)
    snaps = t.snapshots() + [t.tag_manager.snapshot(n) for n in t.tags()]
    out = set()
    for s in snaps:
        out |= cleaner.metadata_files(s, changelog=t.snapshot_manager.exists(s.id))
        out |= {cleaner.data_file_path(e) for e in cleaner.scan.live_entries(s)}
        out |= {cleaner.data_file_path(e) for e in cleaner.changelog_files(s)}
    return out


def files_on_disk(t) -> set[str]:
    """Data, manifest and index files under the table (branch directories hold only metadata)."""
    skip = {"snapshot", "schema", "tag", "consumer", "commit-user", "branch"}
    out = set()
    for root, dirs, files in os.walk(t.path):
        dirs[:] = [d for d in dirs if not (root == t.path and d in skip)]
        out.update(f"{root}/{f}" for f in files)
    return out


class History:
    """Builds a table history snapshot by snapshot: file X committed at c, deleted at d."""

    def __init__(self, table):
        self.t = table
        self.files: dict[str, CommitMessage] = {}
        self.ids: dict[str, int] = {}

    def commit(self, add: list[str] = (), delete: list[str] = ()) -> int:
        messages = []
        for name in add:
            (msg,) = self.t.write_messages(batch([len(self.ids)], name))
            self.files[name] = msg
            self.ids[name] = len(self.ids)
            messages.append(msg)
        for name in delete:
            m = self.files[name]
            messages.append(CommitMessage(m.partition, m.bucket, m.total_buckets,
                                          data=Increment(deleted_files=list(m.data.new_files))))
        (sid,) = self.t.new_commit().commit(messages, "u", self.t.snapshot_manager.latest_id() or 1,
                                            ignore_empty=False)
        return sid

    def path(self, name: str) -> str:
        (f,) = self.files[name].data.new_files
        return f"{self.t.path}/bucket-0/{f.file_name}"

    def exists(self, name: str) -> bool:
        return os.path.exists(self.path(name))


def test_tags_document_scenarios(catalog):
    """Tags at 100, 200, 300. A file committed at 105 and deleted at 120 is held by no tag and
    goes when its deleting snapshot expires; deleted at 201 it stays for tag 200 until that
    tag is deleted; and so on for every way a life span can straddle the tags."""
    t = catalog.create_table("db.doc", SCHEMA, options=ONE_SNAPSHOT_PER_WRITE)
    life = {"c105_d120": (105, 120), "c105_d201": (105, 201), "c50_d150": (50, 150),
            "c201_d300": (201, 300), "c100_d101": (100, 101), "c150_d250": (150, 250),
            "c120_d305": (120, 305), "c101_d199": (101, 199), "c1_live": (1, None)}
    h = History(t)
    tag_rows = {}
    for sid in range(1, 311):
        got = h.commit([n for n, (c, _) in life.items() if c == sid],
                       [n for n, (_, d) in life.items() if d == sid])
        assert got == sid
        if sid in (100, 200, 300):
            t.create_tag(f"t{sid}")
            tag_rows[f"t{sid}"] = rows_by(t.to_arrow(), "id")
    latest_rows = rows_by(t.to_arrow(), "id")

    # at most snapshot.expire.limit (50) per run
    assert t.expire_snapshots(retain_min=1, older_than=FUTURE).earliest == 51
    # expire [51, 119): nothing deleted at 120 or later is touched yet
    assert t.expire_snapshots(retain_min=310 - 119 + 1, older_than=FUTURE, max_deletes=500).earliest == 119
    assert h.exists("c105_d120") and h.exists("c101_d199")
    assert h.exists("c100_d101") and h.exists("c50_d150")   # tag 100 holds them
    assert open(f"{t.path}/snapshot/EARLIEST").read() == "119"
    # expire [119, 121): the file deleted at 120 goes, nothing else
    assert t.expire_snapshots(retain_min=310 - 121 + 1, older_than=FUTURE, max_deletes=500).earliest == 121
    assert not h.exists("c105_d120") and h.exists("c105_d201")

    result = t.expire_snapshots(retain_min=1, older_than=FUTURE, max_deletes=1000)
    assert result.earliest == 310 and [s.id for s in t.snapshots()] == [310]
    expected = {"c105_d120": False, "c105_d201": True, "c50_d150": True, "c201_d300": False,
                "c100_d101": True, "c150_d250": True, "c120_d305": True, "c101_d199": False, "c1_live": True}
    assert {n: h.exists(n) for n in life} == expected
    for name, rows in tag_rows.items():
        assert rows_by(t.to_arrow(tag=name), "id") == rows
    assert rows_by(t.to_arrow(), "id") == latest_rows
    assert files_on_disk(t) == referenced_files(t)

    t.delete_tag("t200")          # only tag 200 held these two; tag 300 still holds c120_d305
    assert not h.exists("c105_d201") and not h.exists("c150_d250") and h.exists("c120_d305")
    assert rows_by(t.to_arrow(tag="t100"), "id") == tag_rows["t100"]
    assert rows_by(t.to_arrow(tag="t300"), "id") == tag_rows["t300"]
    t.delete_tag("t300")
    assert not h.exists("c120_d305")
    t.delete_tag("t100")
    assert not h.exists("c50_d150") and not h.exists("c100_d101") and h.exists("c1_live")
    assert files_on_disk(t) == referenced_files(t)
    assert rows_by(t.to_arrow(), "id") == latest_rows


def test_retention_options_run_after_commits(catalog):
    t = catalog.create_table("db.pk", SCHEMA, primary_keys=["id"],
                             options={"bucket": "2", "snapshot.num-retained.max": "3",
                                      "snapshot.num-retained.min": "1"})
    contents = {}
    for i in range(8):
        t.write_arrow(batch(range(i, i + 5), f"v{i}"))
        contents[t.latest_snapshot().id] = rows_by(t.to_arrow(), "id")
        if i % 3 == 2:
            t.compact(full=True)
            contents[t.latest_snapshot().id] = rows_by(t.to_arrow(), "id")
        latest = t.latest_snapshot().id
        ids = [s.id for s in t.snapshots()]
        assert ids == list(range(max(1, latest - 2), latest + 1))
        for sid in ids:
            assert rows_by(t.to_arrow(snapshot_id=sid), "id") == contents[sid]
        assert files_on_disk(t) == referenced_files(t)
    assert open(f"{t.path}/snapshot/EARLIEST").read() == str(t.snapshots()[0].id)


@pytest.mark.parametrize("changelog_options, kept", [
    ({}, 2),
    ({"changelog.num-retained.max": "5"}, 5),             # the changelog kept longer: snapshots too
    ({"changelog.num-retained.max": "1"}, 2),             # shorter: the snapshot options decide
])
def test_changelog_retention_keeps_snapshots_as_long(catalog, changelog_options, kept):
    """Java keeps a longer-retained changelog in `changelog/` after its snapshot expires; we keep
    the snapshot (and with it its changelog) as long instead, so streams can start that far back."""
    t = catalog.create_table("db.cl", SCHEMA, primary_keys=["id"],
                             options={"bucket": "1", "changelog-producer": "input", "snapshot.num-retained.max": "2",
                                      "snapshot.num-retained.min": "1", **ONE_SNAPSHOT_PER_WRITE, **changelog_options})
    for i in range(8):
        t.write_arrow(batch([i], f"v{i}"))
    latest = t.latest_snapshot().id
    assert [s.id for s in t.snapshots()] == list(range(latest - kept + 1, latest + 1))
    assert files_on_disk(t) == referenced_files(t)


def test_min_above_max_is_rejected_at_creation(catalog):
    with pytest.raises(InvalidOptionError, match="num-retained.min' must not be greater"):
        catalog.create_table("db.bad", SCHEMA, options={"snapshot.num-retained.max": "2"})


@pytest.mark.parametrize("options", [
    {"changelog.num-retained.min": "3", "changelog.num-retained.max": "2"},
    {"changelog.num-retained.min": "12", "snapshot.num-retained.max": "11"},   # max defaults to the snapshots'
    {"changelog.num-retained.max": "5", "snapshot.num-retained.min": "8", "snapshot.num-retained.max": "9"}])
def test_changelog_min_above_max_is_rejected_as_java_rejects_it(catalog, options):
    """Java 1.4.2's SchemaValidation refuses these at creation and in every later table copy
    ("changelog.num-retained.min should not be larger than changelog.num-retained.max")."""
    with pytest.raises(InvalidOptionError, match="'changelog.num-retained.min' .* must not be greater"):
        catalog.create_table("db.bad", SCHEMA, options=options)
    t = catalog.create_table("db.ok", SCHEMA)
    with pytest.raises(InvalidOptionError, match="'changelog.num-retained.min' .* must not be greater"):
        with t.update_schema() as u:
            for key, value in options.items():
                u.set_option(key, value)
    assert t.schema_manager.latest().id == 0


def test_time_retained_and_arguments(catalog):
    t = catalog.create_table("db.t", SCHEMA, options=ONE_SNAPSHOT_PER_WRITE)
    for i in range(5):
        t.write_arrow(batch([i]))
        time.sleep(0.003)
    assert t.expire_snapshots(retain_min=1).expired == 0            # all younger than 1 h
    # snapshot s goes only when its successor is older than the threshold
    assert t.expire_snapshots(retain_min=1, older_than=t.snapshot(3).time_millis).earliest == 2
    assert t.expire_snapshots(retain_min=2, older_than=dt.datetime.now() + dt.timedelta(minutes=1)).earliest == 4
    assert t.expire_snapshots(retain_max=1, retain_min=1).earliest == 5
    assert t.to_arrow().num_rows == 5
    with pytest.raises(InvalidOptionError, match="retain_min .* retain_max"):
        t.expire_snapshots(retain_max=1, retain_min=3)


def test_expiration_after_a_commit_reads_nothing_while_nothing_can_expire(catalog, monkeypatch):
    """The expiration after each commit: once a run was held back by the earliest snapshot's
    successor being younger than snapshot.time-retained, later runs skip every request until
    that successor ages out or num-retained.max is reached, and then expire as before."""
    from paimon_streaming.expire import SnapshotExpiration
    from paimon_streaming.snapshot import SnapshotManager
    t = catalog.create_table("db.t", SCHEMA, options={"snapshot.num-retained.min": "1",
                                                      "snapshot.num-retained.max": "6", **ONE_SNAPSHOT_PER_WRITE})
    for i in range(4):
        t.write_arrow(batch([i]))
    expiration = SnapshotExpiration(t.file_io, t.path, t.schema)
    successor = t.snapshot(2).time_millis
    hour = 3_600_000
    assert expiration.expire(latest=4, now_ms=successor + hour - 1).expired == 0  # held back by snapshot 2

    def no_reads(self):
        raise AssertionError("read the snapshots although nothing could expire")
    monkeypatch.setattr(SnapshotManager, "latest_id", no_reads)
    monkeypatch.setattr(SnapshotManager, "earliest_id", no_reads)
    assert expiration.expire(latest=6, now_ms=successor + hour - 1).earliest == 1
    monkeypatch.undo()
    # a manual run (no `latest`) always looks; so does one past num-retained.max or past the time
    assert expiration.expire(now_ms=successor + hour - 1).expired == 0
    assert expiration.expire(latest=4, now_ms=successor + hour + 1).earliest == 2
    for i in range(4, 8):
        t.write_arrow(batch([i]))  # 8 snapshots: the commits' own expiration keeps the newest 6
    assert [s.id for s in t.snapshots()] == [3, 4, 5, 6, 7, 8]
    assert t.to_arrow().num_rows == 8


def test_expiration_after_a_commit_reads_nothing_below_num_retained_min(catalog, monkeypatch):
    from paimon_streaming.expire import SnapshotExpiration
    from paimon_streaming.snapshot import SnapshotManager
    t = catalog.create_table("db.t", SCHEMA)  # snapshot.num-retained.min 10
    for i in range(3):
        t.write_arrow(batch([i]))
    expiration = SnapshotExpiration(t.file_io, t.path, t.schema)
    calls = []
    original = SnapshotManager.latest_id

    def counted(self):
        calls.append(1)
        return original(self)
    monkeypatch.setattr(SnapshotManager, "latest_id", counted)
    # the commits' own expiration looked once and found the earliest, 1, held by the count
    assert expiration.expire(latest=10, older_than_ms=FUTURE).expired == 0 and not calls  # 10 kept: no look
    assert expiration.expire(latest=11, older_than_ms=FUTURE).expired == 0 and calls  # 11 would expire 1: looks
    assert [s.id for s in t.snapshots()] == [1, 2, 3]  # (only 3 exist)


@pytest.mark.parametrize("how", ["rollback to an expired tag", "drop and create again"])
def test_commits_keep_num_retained_max_after_the_earliest_moves_down(catalog, how):
    """The commits' own expiration remembers the earliest snapshot of a run that expired
    nothing; a rollback to a tag of an expired snapshot, or the table made again, moves the
    earliest down. Before, the next commits kept skipping the run until the remembered id was
    reached again: 31 snapshots with snapshot.num-retained.max 5."""
    options = {"snapshot.num-retained.max": "5", "snapshot.num-retained.min": "1", **ONE_SNAPSHOT_PER_WRITE}
    t = catalog.create_table("db.t", SCHEMA, options=options)
    t.write_arrow(batch([0]))
    t.create_tag("early", snapshot_id=1)
    for i in range(1, 20):
        t.write_arrow(batch([i]))
    assert t.expire_snapshots().expired == 0  # the earliest (16) remembered
    if how == "rollback to an expired tag":
        t.rollback_to("early")
    else:
        catalog.drop_table("db.t")
        t = catalog.create_table("db.t", SCHEMA, options=options)
    for i in range(100, 110):
        t.write_arrow(batch([i]))
        assert len(t.snapshots()) <= 5


def test_consumers_protect_their_snapshots(catalog):
    t = catalog.create_table("db.t", SCHEMA, options={"snapshot.num-retained.min": "1", **ONE_SNAPSHOT_PER_WRITE})
    for i in range(6):
        t.write_arrow(batch([i]))
    consumers = ConsumerManager(t.file_io, t.path)
    consumers.record("reader", 3)
    assert t.expire_snapshots(older_than=FUTURE).earliest == 3
    assert [s.id for s in t.snapshots()] == [3, 4, 5, 6]
    assert t.to_arrow(snapshot_id=3).num_rows == 3
    consumers.delete("reader")
    assert t.expire_snapshots(older_than=FUTURE).earliest == 6

    # a consumer file whose position is not a number (or none Java reads: beyond a long, which
    # took every snapshot for consumed): the consumer's snapshots stay, and the error names the file
    for i in range(3):
        t.write_arrow(batch([10 + i]))
    from paimon_streaming.errors import CorruptFileError
    for value, error in (("null", "nextSnapshot is None, not an integer"),
                         ("99999999999999999999999", "nextSnapshot 9+ is beyond a 64-bit integer")):
        with open(consumers.path("broken"), "w") as f:
            f.write(f'{{"nextSnapshot": {value}}}')
        with pytest.raises(CorruptFileError, match=r"consumer file .*consumer-broken cannot be parsed: " + error):
            t.expire_snapshots(older_than=FUTURE)
        assert [s.id for s in t.snapshots()] == [6, 7, 8, 9]


def test_consumer_expiration_time(catalog):
    t = catalog.create_table("db.t", SCHEMA, options={
        "snapshot.num-retained.max": "2", "snapshot.num-retained.min": "1", "consumer.expiration-time": "1 h",
        **ONE_SNAPSHOT_PER_WRITE})
    for i in range(3):
        t.write_arrow(batch([i]))
    consumers = ConsumerManager(t.file_io, t.path)
    consumers.record("old", 2)
    consumers.record("fresh", 2)
    t.write_arrow(batch([9]))
    assert [s.id for s in t.snapshots()] == [2, 3, 4]                 # both consumers hold 2
    two_hours_ago = time.time() - 7200
    os.utime(consumers.path("old"), (two_hours_ago, two_hours_ago))
    t.write_arrow(batch([10]))
    assert consumers.consumer_ids() == ["fresh"]
    consumers.delete("fresh")
    t.write_arrow(batch([11]))
    assert [s.id for s in t.snapshots()] == [5, 6]


def test_changelog_files_go_with_their_snapshot(catalog):
    t = catalog.create_table("db.t", SCHEMA)
    for i in range(3):
        (data,) = t.write_messages(batch([i]))
        (log,) = t.write_messages(batch([i], "changelog"))
        msg = CommitMessage(data.partition, data.bucket, data.total_buckets,
                            data=Increment(new_files=data.data.new_files, changelog_files=log.data.new_files))
        t.new_commit().commit([msg], "u", i)
    snaps = t.snapshots()
    assert all(s.changelog_manifest_list for s in snaps)
    cleaner = FileCleaner(t.file_io, t.path, t.schema)
    logs = {s.id: [cleaner.data_file_path(e) for e in cleaner.changelog_files(s)] for s in snaps}
    lists = {s.id: f"{t.path}/manifest/{s.changelog_manifest_list}" for s in snaps}
    t.expire_snapshots(retain_max=1, retain_min=1)
    for sid in (1, 2):
        assert not any(os.path.exists(p) for p in logs[sid]) and not os.path.exists(lists[sid])
    assert all(os.path.exists(p) for p in logs[3]) and os.path.exists(lists[3])
    assert t.to_arrow().num_rows == 3
    assert files_on_disk(t) == referenced_files(t)


def test_deletion_vector_table_read_by_java_after_expiration(catalog):
    from java_oracle import get_oracle
    t = catalog.create_table("db.dv", SCHEMA, primary_keys=["id"],  # keep vectors: no deleted-ratio rewrites
                             options={"bucket": "2", "deletion-vectors.enabled": "true",
                                      "compaction.delete-ratio-threshold": "1.0"})
    for i in range(6):
        t.write_arrow(batch(range(i * 3, i * 3 + 6), f"v{i}"))
        if i == 2:
            t.create_tag("mid")
    mid = rows_by(t.to_arrow(tag="mid"), "id")
    index_before = set(os.listdir(f"{t.path}/index"))
    t.expire_snapshots(retain_max=2, retain_min=1)
    assert set(os.listdir(f"{t.path}/index")) < index_before       # old DV files went
    assert files_on_disk(t) == referenced_files(t)
    retained = [s.id for s in t.snapshots()]
    with get_oracle().batch() as b:
        reads = {sid: b.read(t.path, snapshot_id=sid) for sid in retained}
        tag = b.read(t.path, tag="mid")
    for sid, pending in reads.items():
        assert rows_by(pa.Table.from_pylist(pending.result), "id") == rows_by(t.to_arrow(snapshot_id=sid), "id")
    assert rows_by(pa.Table.from_pylist(tag.result), "id") == mid


def test_mixed_writers_with_pypaimon_tags(catalog, warehouse):
    """pypaimon and we write the same table and both create tags; after our expiration
    pypaimon reads every retained snapshot and every tag completely."""
    pypaimon_create(warehouse, "db.mixed", SCHEMA, primary_keys=["id"], options={"bucket": "2"})
    t = catalog.get_table("db.mixed")
    content = {}
    for i in range(6):
        if i % 2:
            pypaimon_write(warehouse, "db.mixed", batch(range(i, i + 4), f"py{i}"))
        else:
            t.write_arrow(batch(range(i, i + 4), f"ps{i}"))
        sid = t.snapshot_manager.latest_id()
        content[sid] = rows_by(t.to_arrow(snapshot_id=sid), "id")
        if i == 1:
            pypaimon_create_tag(warehouse, "db.mixed", "py-tag")
        if i == 2:
            t.create_tag("our-tag")
    tags = {n: t.tag_manager.snapshot(n).id for n in t.tags()}
    t.expire_snapshots(retain_max=2, retain_min=1)
    assert files_on_disk(t) == referenced_files(t)
    for sid in [s.id for s in t.snapshots()]:
        assert rows_by(pypaimon_read(warehouse, "db.mixed", snapshot_id=sid), "id") == content[sid]
    for name, sid in tags.items():
        assert rows_by(pypaimon_read(warehouse, "db.mixed", tag=name), "id") == content[sid]


def _dirs(root: str) -> list[str]:
    return sorted(os.path.relpath(d, root) for d, _, _ in os.walk(root))


def test_clean_empty_directories_removes_what_javas_removes(catalog, tmp_path):
    """`snapshot.clean-empty-directories` = true: expiration then removes the bucket and
    partition directories its deletions left empty, deepest first, as Java's does (it was
    accepted and ignored); a partition with files keeps its directories, and without the
    option every directory stays. Checked against Java's expiration on a copy of the table."""
    import shutil
    from java_oracle import get_oracle
    schema = pa.schema([("id", pa.int64(), False), ("y", pa.string(), False), ("d", pa.string(), False)])
    options = {"bucket": "-1", "snapshot.clean-empty-directories": "true", "snapshot.num-retained.min": "1",
               "partition.timestamp-pattern": "$y-01-$d"}
    t = catalog.create_table("db.dirs", schema, partition_keys=["y", "d"], options=options)
    t.write_arrow(pa.table({"id": [1, 2, 3], "y": ["2020", "2020", "2099"], "d": ["01", "02", "01"]}, schema=schema))
    t.expire_partitions("1 d")                                  # drops y=2020 (both days)
    t.write_arrow(pa.table({"id": [4], "y": ["2099"], "d": ["01"]}, schema=schema))
    ours, javas, kept = (str(tmp_path / n) for n in ("ours", "java", "kept"))
    for where in (ours, javas, kept):
        shutil.copytree(t.path, where)
    with Table.open(kept).update_schema() as update:
        update.set_option("snapshot.clean-empty-directories", "false")
    assert Table.open(ours).expire_snapshots(retain_max=1, retain_min=1).expired == 2
    assert Table.open(kept).expire_snapshots(retain_max=1, retain_min=1).expired == 2
    with get_oracle().batch() as b:
        b.expire(javas, {"snapshot.num-retained.max": 1, "snapshot.num-retained.min": 1})
    assert _dirs(ours) == _dirs(javas)
    assert "y=2020" not in _dirs(ours) and "y=2099/d=01/bucket-0" in _dirs(ours)
    assert "y=2020/d=01/bucket-0" in _dirs(kept)
    assert Table.open(ours).to_arrow().num_rows == 2


def test_clean_empty_directories_after_changelog_expiration(catalog, tmp_path):
    """`snapshot.clean-empty-directories` after the expiration of Java's long-lived changelogs,
    as Java's `ExpireChangelogImpl`: a dropped partition's changelog files, which the changelogs
    kept past the snapshots, go, and with them its directories (they stayed); the other
    partition keeps its. Checked against Java's changelog expiration on a copy."""
    import shutil
    from java_oracle import get_oracle
    schema = pa.schema([("id", pa.int64(), False), ("p", pa.string(), False)])
    t = catalog.create_table("db.cl", schema, primary_keys=["id", "p"], partition_keys=["p"],
                             options={"bucket": "1", "changelog-producer": "input", "snapshot.num-retained.min": "1",
                                      "changelog.num-retained.max": "10", "snapshot.clean-empty-directories": "true"})
    t.write_arrow(pa.table({"id": [1, 2], "p": ["2020-01-01", "2099-01-01"]}, schema=schema))
    t.expire_partitions("1 d")
    for i in (3, 4):
        t.write_arrow(pa.table({"id": [i], "p": ["2099-01-01"]}, schema=schema))
    java, javas = get_oracle(), str(tmp_path / "java")
    with java.batch() as b:  # the snapshots go, their changelogs stay
        b.expire(t.path, {"snapshot.num-retained.max": 1})
    assert os.listdir(f"{t.path}/p=2020-01-01/bucket-0")  # its changelog file
    shutil.copytree(t.path, javas)
    assert Table.open(t.path).expire_changelogs(retain_max=2, retain_min=2, older_than=FUTURE).expired == 2
    with java.batch() as b:  # (decoupled, so Java expires changelogs, with its min above the snapshots')
        b.expire(javas, {"snapshot.num-retained.max": 1, "changelog.num-retained.max": 2,
                         "changelog.num-retained.min": 2})
    assert "p=2020-01-01" not in _dirs(t.path) and "p=2099-01-01/bucket-0" in _dirs(t.path)
    assert _dirs(t.path) == _dirs(javas)
    assert Table.open(t.path).to_arrow().num_rows == 3


def test_clean_empty_directories_after_tag_deletion(catalog, tmp_path):
    """`snapshot.clean-empty-directories` after deleting a tag, as Java's `TagManager.deleteTag`:
    the files only the tag kept (a dropped partition's) go, and with them their bucket and
    partition directories, deepest first (they stayed); a partition with files keeps its, and
    without the option every directory stays. Checked against Java's tag deletion on a copy."""
    import shutil
    from java_oracle import get_oracle
    schema = pa.schema([("id", pa.int64(), False), ("y", pa.string(), False), ("d", pa.string(), False)])
    options = {"bucket": "-1", "snapshot.clean-empty-directories": "true", "snapshot.num-retained.min": "1",
               "partition.timestamp-pattern": "$y-01-$d"}
    t = catalog.create_table("db.tagged", schema, partition_keys=["y", "d"], options=options)
    t.write_arrow(pa.table({"id": [1, 2, 3], "y": ["2020", "2020", "2099"], "d": ["01", "02", "01"]}, schema=schema))
    t.create_tag("old")
    t.expire_partitions("1 d")                                  # drops y=2020 (both days)
    t.write_arrow(pa.table({"id": [4], "y": ["2099"], "d": ["01"]}, schema=schema))
    assert t.expire_snapshots(retain_max=1, retain_min=1).expired == 2
    assert "y=2020/d=02/bucket-0" in _dirs(t.path)              # the tag keeps its files
    ours, javas, kept = (str(tmp_path / n) for n in ("ours", "java", "kept"))
    for where in (ours, javas, kept):
        shutil.copytree(t.path, where)
    with Table.open(kept).update_schema() as update:
        update.set_option("snapshot.clean-empty-directories", "false")
    assert Table.open(ours).delete_tag("old") > 0 and Table.open(kept).delete_tag("old") > 0
    with get_oracle().batch() as b:
        b.delete_tag(javas, "old")
    assert "y=2020" not in _dirs(ours) and "y=2099/d=01/bucket-0" in _dirs(ours)
    assert _dirs(ours) == _dirs(javas)
    assert "y=2020/d=01/bucket-0" in _dirs(kept)
    assert Table.open(ours).to_arrow().num_rows == 2


def test_java_interop_of_expiration(catalog, warehouse):
    """Table A: Java writes, compacts and tags; we write too and expire; Java then reads every
    retained snapshot and its tag exactly as before, and nothing unreferenced is left. Table B:
    Java expires by its own options while our tag holds an old snapshot; the tag stays
    complete for Java and for us. (Two JVM runs for both.)"""
    from java_oracle import get_oracle
    java = get_oracle()
    path_a, path_b = f"{warehouse}/db.db/ja", f"{warehouse}/db.db/jb"
    fields = [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "v", "type": "STRING"},
              {"name": "p", "type": "STRING NOT NULL"}]

    def rows(ids, v):
        return [{"id": i, "v": v, "p": "a" if i % 2 else "b"} for i in ids]
    with java.batch() as b:
        b.create_table(path_a, fields, primary_keys=["id", "p"], partition_keys=["p"], options={"bucket": "2"})
        for i in range(4):
            b.write(path_a, rows(range(i * 3, i * 3 + 6), f"j{i}"))
        b.compact(path_a)
        b.create_tag(path_a, "java-tag", snapshot_id=3)
        b.write(path_a, rows(range(2, 5), "j9"))
        b.create_table(path_b, fields, primary_keys=["id", "p"], options={
            "bucket": "1", "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2"})
        for i in range(3):
            b.write(path_b, rows(range(i, i + 3), f"j{i}"))

    a = catalog.get_table("db.ja")
    a.write_arrow(pa.Table.from_pylist(rows(range(8, 12), "ours"), a.arrow_schema()))
    before = {s.id: rows_by(a.to_arrow(snapshot_id=s.id), "id", "p") for s in a.snapshots()}
    java_tag_rows = rows_by(a.to_arrow(tag="java-tag"), "id", "p")
    a.expire_snapshots(retain_max=2, retain_min=1)
    retained = [s.id for s in a.snapshots()]
    assert len(retained) == 2
    assert files_on_disk(a) == referenced_files(a)
    bt = catalog.get_table("db.jb")
    bt.create_tag("ours", snapshot_id=bt.snapshot_manager.latest_id())
    our_tag_rows = rows_by(bt.to_arrow(tag="ours"), "id", "p")

    with java.batch() as b:
        reads = {sid: b.read(path_a, snapshot_id=sid) for sid in retained}
        java_tag = b.read(path_a, tag="java-tag")
        for i in range(3, 6):
            b.write(path_b, rows(range(i, i + 3), f"j{i}"))
        b.compact(path_b)
        our_tag = b.read(path_b, tag="ours")
    for sid, pending in reads.items():
        assert rows_by(pa.Table.from_pylist(pending.result), "id", "p") == before[sid]
    assert rows_by(pa.Table.from_pylist(java_tag.result), "id", "p") == java_tag_rows
    assert bt.snapshot_manager.earliest_id() > bt.tag_manager.snapshot("ours").id   # Java expired past it
    assert rows_by(pa.Table.from_pylist(our_tag.result), "id", "p") == our_tag_rows
    assert rows_by(bt.to_arrow(tag="ours"), "id", "p") == our_tag_rows


def test_statistics_files_go_when_no_retained_snapshot_names_them(catalog, warehouse):
    """Java's ANALYZE writes `statistics/<file>` and names it in the snapshot (later commits
    carry the name on). Expiring a snapshot deletes its statistics file only when no retained
    snapshot names it too."""
    import json
    from java_oracle import get_oracle
    path = f"{warehouse}/db.db/stats"
    with get_oracle().batch() as b:
        b.create_table(path, [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "v", "type": "STRING"}],
                       primary_keys=["id"], options={"bucket": "1"})
        for i in range(3):
            b.write(path, [{"id": i, "v": "j"}])
    os.makedirs(f"{path}/statistics")
    for sid, stats in [(1, "stats-one"), (2, "stats-one"), (3, "stats-three")]:
        with open(f"{path}/snapshot/snapshot-{sid}") as f:
            snap = json.load(f)
        snap["statistics"] = stats
        with open(f"{path}/snapshot/snapshot-{sid}", "w") as f:
            json.dump(snap, f)
        with open(f"{path}/statistics/{stats}", "w") as f:
            f.write('{"snapshotId": %d, "schemaId": 0, "mergedRecordCount": %d, "colStats": {}}' % (sid, sid))
    t = catalog.get_table("db.stats")
    t.expire_snapshots(retain_max=2, retain_min=1)
    assert [s.id for s in t.snapshots()] == [2, 3]
    assert sorted(os.listdir(f"{path}/statistics")) == ["stats-one", "stats-three"]   # snapshot 2 names it
    t.expire_snapshots(retain_max=1, retain_min=1)
    assert os.listdir(f"{path}/statistics") == ["stats-three"]
    assert files_on_disk(t) == referenced_files(t)
    assert sorted(r["id"] for r in t.to_arrow().to_pylist()) == [0, 1, 2]


def _damage(path: str) -> None:
    from paimon_streaming.file_cache import clear_all
    with open(path, "wb") as f:
        f.write(b"not avro")
    clear_all()   # read it as a fresh process would


def _all_files(t) -> set[str]:
    return files_on_disk(t)


def test_unreadable_metadata_keeps_every_file_the_expiration_cannot_vouch_for(catalog):
    """Expiring snapshots whose retained neighbour (the new earliest snapshot, a tag below a
    deleting snapshot, another branch) cannot be read deletes the expired snapshot files but
    no data file or manifest: a file that neighbour may use is never deleted on a guess."""
    # the tag of snapshot 1 holds A, which snapshot 2 deleted: its manifest list unreadable
    t = catalog.create_table("db.tagged", SCHEMA, options=ONE_SNAPSHOT_PER_WRITE)
    h = History(t)
    h.commit(["A"])
    t.create_tag("t1", 1)
    h.commit(["B"], ["A"])
    h.commit(["C"])
    _damage(f"{t.path}/manifest/{t.snapshot(1).base_manifest_list}")
    before = _all_files(t)
    t.expire_snapshots(retain_max=1, retain_min=1, older_than=FUTURE)
    assert [s.id for s in t.snapshots()] == [3]
    assert h.exists("A") and _all_files(t) == before
    assert rows_by(t.to_arrow(), "id") == [{"id": 1, "v": "B"}, {"id": 2, "v": "C"}]

    # the new earliest snapshot's manifest list unreadable
    t = catalog.create_table("db.end", SCHEMA, options=ONE_SNAPSHOT_PER_WRITE)
    h = History(t)
    h.commit(["A"])
    h.commit(["B"], ["A"])
    h.commit(["C"])
    _damage(f"{t.path}/manifest/{t.snapshot(3).delta_manifest_list}")
    before = _all_files(t)
    t.expire_snapshots(retain_max=1, retain_min=1, older_than=FUTURE)
    assert [s.id for s in t.snapshots()] == [3]
    assert h.exists("A") and _all_files(t) == before

    # another branch's own snapshot unreadable: main's expiration cannot tell what it uses
    t = catalog.create_table("db.branched", SCHEMA, options=ONE_SNAPSHOT_PER_WRITE)
    h = History(t)
    h.commit(["A"])
    t.create_tag("t1", 1)
    branch = t.create_branch("b", tag="t1")
    branch.write_arrow(batch([7], "on-branch"))
    h.commit(["B"], ["A"])
    h.commit(["C"])
    t.delete_tag("t1")
    _damage(f"{branch.path}/manifest/{branch.latest_snapshot().delta_manifest_list}")
    before = _all_files(t)
    t.expire_snapshots(retain_max=1, retain_min=1, older_than=FUTURE)
    assert [s.id for s in t.snapshots()] == [3]
    assert h.exists("A") and _all_files(t) == before


def test_expire_changelogs_refuses_impossible_arguments_before_touching_javas_changelogs(catalog, warehouse):
    """Java's expiration with `changelog.num-retained.max` above the snapshots' leaves long-lived
    changelogs; `expire_changelogs` with retain_min above retain_max (or below 1) refuses,
    naming the arguments and options, and every changelog stays."""
    from java_oracle import get_oracle
    path = f"{warehouse}/db.db/cl"
    options = {"bucket": "1", "changelog-producer": "input", "snapshot.num-retained.min": "1",
               "snapshot.num-retained.max": "1", "changelog.num-retained.max": "10"}
    with get_oracle().batch() as b:
        b.create_table(path, [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "v", "type": "STRING"}],
                       primary_keys=["id"], options=options)
        for i in range(3):
            b.write(path, [{"id": i, "v": "j"}])
        b.expire(path)
    t = catalog.get_table("db.cl")
    before = sorted(os.listdir(f"{path}/changelog"))
    assert "changelog-1" in before
    for retain_max, retain_min, max_deletes in [(1, 2, None), (5, 0, None), (5, 1, 0)]:
        with pytest.raises(InvalidOptionError, match=r"cannot expire the long-lived changelogs of .*need 1 <= "
                                                     r"retain_min .*\(changelog.num-retained.min"):
            t.expire_changelogs(retain_max=retain_max, retain_min=retain_min, max_deletes=max_deletes)
    assert sorted(os.listdir(f"{path}/changelog")) == before
    assert t.expire_changelogs(retain_max=1, retain_min=1, older_than=FUTURE).expired > 0
