"""README.md's examples run and do what the text around them says.

Each code block is found by its first line (robust to prose edits), run as a user would run it on
a fresh local warehouse, and checked against the README's claims: a statement whose comment starts
with a Python literal (`x.to_pylist()  # [{'id': 1}]`, `t.delete(...)  # None: ...`) must give
that value, and each test asserts what the surrounding prose claims (rows, snapshot kinds, files).

Placeholders are substituted explicitly and visibly (the `(old, new)` pairs given to `run_block`,
each asserted present in the block): `/data/warehouse` is the test's warehouse, S3 roots local
ones; `batch`, `changes`, `corrections`, `events` and the like, which the README leaves to the
reader, are defined by each test before its block runs. The command-line blocks run in-process
through `paimon_streaming.cli.main`; `ingest` and `demo` (Spark, Kafka) are parsed and validated up
to where they would start Spark (their runs: test_ingest*.py, test_demo.py). The Spark sink and
data source blocks run on the shared session. Not run here: the docker compose block (no Docker
compose on CI machines: test_docker_compose.py checks the file), the set-up commands
(.ci/user_install.sh runs them), the kafka-python source blocks (test_kafka_source.py runs
it against a real broker) and the benchmarks (their scripts and flags are checked to exist).
"""
from __future__ import annotations

import ast
import contextlib
import datetime
import io
import json
import re
import shlex
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

import paimon_streaming as ps
from paimon_streaming.cli import build_parser, main
from paimon_streaming.system_tables import system_table

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


# ----------------------------------------------------------------------------------------------
# README blocks

def readme_blocks() -> list[tuple[int, str, str]]:
    """(line of the block's first line, language, text) for every fenced block, indented ones
    (inside list items) with their indentation removed."""
    lines = README.read_text().split("\n")
    blocks, i = [], 0
    while i < len(lines):
        m = re.match(r"^(\s*)```(\w*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        indent, j = len(m.group(1)), i + 1
        while not re.match(r"^\s*```\s*$", lines[j]):
            j += 1
        blocks.append((i + 2, m.group(2), "\n".join(line[indent:] for line in lines[i + 1:j])))
        i = j + 1
    return blocks


def block(first_line: str, lang: str = "python") -> str:
    """The one block of `lang` whose first line starts with `first_line`."""
    found = [text for _, lg, text in readme_blocks() if lg == lang and text.lstrip().startswith(first_line)]
    assert len(found) == 1, f"README.md: {len(found)} {lang} blocks start with {first_line!r}"
    return found[0]


def substitute(text: str, subst: list[tuple[str, str]]) -> str:
    for old, new in subst:
        assert old in text, f"README block no longer holds {old!r}"
        text = text.replace(old, new)
    return text


def _literal_comment(src_lines: list[str], node: ast.stmt):
    """The Python literal a statement's comment starts with (on its last line, or, when that has
    none, on the comment-only lines that follow), or a sentinel when there is none."""
    last = src_lines[node.end_lineno - 1]
    tail = last[node.end_col_offset:].strip()
    text = tail[1:].strip() if tail.startswith("#") else ""
    k = node.end_lineno
    while not tail and k < len(src_lines) and src_lines[k].strip().startswith("#"):
        text += " " + src_lines[k].strip()[1:].strip()
        k += 1
    text = text.strip()
    if not text or text[0] not in "[{('\"-0123456789N":
        return _NONE
    for end in range(len(text), 0, -1):
        try:
            return ast.literal_eval(text[:end])
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    return _NONE


_NONE = object()


def run_block(src: str, ns: dict, subst: list[tuple[str, str]] = ()) -> dict[str, object]:
    """Runs a Python block statement by statement in `ns`; returns each expression statement's
    value by its source (first line, comment removed) and asserts the literal comments."""
    src = substitute(src, list(subst))
    lines = src.split("\n")
    values: dict[str, object] = {}
    for node in ast.parse(src).body:
        code = ast.get_source_segment(src, node)
        key = code.split("\n")[0].split("  #")[0].strip()
        if isinstance(node, ast.Expr):
            value = eval(compile(ast.Expression(node.value), "<README>", "eval"), ns)
            values[key] = value
            expected = _literal_comment(lines, node)
            if expected is not _NONE:
                assert value == expected, f"README: {code}\n  gives {value!r}\n  the comment says {expected!r}"
                values.setdefault("_checked", []).append(key)
        else:
            exec(compile(ast.Module([node], []), "<README>", "exec"), ns)
    return values


def wh_subst(warehouse: str) -> list[tuple[str, str]]:
    return [("/data/warehouse", warehouse)]


def cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def kinds(table) -> list[str]:
    return [s.commit_kind for s in table.snapshots()]


# ----------------------------------------------------------------------------------------------
# Usage

# `pa.table({...})` in the README: rows of the orders table it creates.
FIRST_ORDERS = ('pa.table({"id": [1, 2, 7, 500, 2000], "name": ["Ada", "Bob", "Cy", "Grace", "Di"], '
                '"amount": [5, 20, 30, 40, 50], '
                '"dt": ["2023-12-31", "2024-01-01", "2024-01-01", "2024-02-01", "2024-05-01"]}, schema=schema)')
# before `orders.write_arrow(batch, overwrite=True)`: a batch, a history of 8 snapshots, the tag
# and the branch the block's later lines read
HISTORY = ("batch = orders.to_arrow()\n"
           "for _ in range(6): orders.write_arrow(batch)\n"
           "orders.create_tag('daily-2024-01-01')\n"
           "orders.create_branch('dev', tag='daily-2024-01-01')\n"
           "orders.write_arrow(batch, overwrite=True)")


def usage_namespace(warehouse: str) -> tuple[dict, dict]:
    ns: dict = {}
    values = run_block(block("import pyarrow as pa\nimport paimon_streaming as ps"), ns,
                       wh_subst(warehouse) + [("pa.table({...})", FIRST_ORDERS),
                                              ("orders.write_arrow(batch, overwrite=True)", HISTORY)])
    return ns, values


def test_usage(warehouse):
    ns, v = usage_namespace(warehouse)
    orders = ns["orders"]
    assert ns["sid"] == 1                       # "returns the id of the last snapshot it committed"
    assert orders.snapshots()[-1].commit_kind == "OVERWRITE"
    assert sorted(v["orders.to_arrow()"]["id"].to_pylist()) == [1, 2, 7, 500, 2000]
    filtered = v['orders.to_arrow(columns=["id", "amount"], filter=[("dt", "=", "2024-01-01"), ("amount", ">", 10)])']
    assert filtered.column_names == ["id", "amount"] and sorted(filtered["id"].to_pylist()) == [2, 7]
    ored = v['orders.to_arrow(filter=[[("id", "<", 10)], [("id", ">", 1000)]])']
    assert sorted(ored["id"].to_pylist()) == [1, 2, 7, 2000]
    assert v['orders.to_arrow(columns=[], filter=[("dt", "=", "2024-01-01")]).num_rows'] == 2   # "a count"
    assert v["orders.to_arrow(snapshot_id=3)"].num_rows == 5
    assert v['orders.to_arrow(tag="daily-2024-01-01")'].num_rows == 5
    # "what changed after snapshot 3 up to 7": the rows of APPEND snapshots 4, 5 and 7 (6 compacts)
    assert [s.commit_kind for s in orders.snapshots()[3:7]] == ["APPEND", "APPEND", "COMPACT", "APPEND"]
    assert v["orders.changes_between(3, 7)"].num_rows == 15
    assert all(isinstance(s, ps.Snapshot) for s in v["orders.snapshots()"])
    assert ns["t"].path == orders.path and ns["dev"].to_arrow().num_rows == 5
    # "Tables and databases" (the prose after the block)
    cat = ns["cat"]
    assert cat.list_databases() == ["shop"] and cat.list_tables("shop") == ["orders"]
    cat.create_table("shop.orders", ns["schema"], primary_keys=["id", "dt"], partition_keys=["dt"],
                     ignore_if_exists=True)
    cat.create_table("other.t", ns["schema"])              # "create_table creates a missing database"
    cat.drop_table("other.t")
    cat.drop_database("other", cascade=True)
    assert cat.list_databases() == ["shop"]


def test_delete_and_update(warehouse):
    ns, _ = usage_namespace(warehouse)
    before = ns["orders"].snapshots()[-1].id
    v = run_block(block("import pyarrow.compute as pc"), ns)
    assert v['orders.delete([("dt", "<", "2024-01-01")])'] == before + 1
    assert isinstance(v['orders.delete([("name", "in", ["Ada", "Grace"])], commit_user="gdpr-job")'], int)
    assert "_checked" in v                          # the `# None: no row matched` line
    rows = {r["id"]: r for r in ns["orders"].to_arrow().to_pylist()}
    assert sorted(rows) == [2, 7, 2000]
    assert rows[7]["name"] == "cancelled" and rows[7]["amount"] is None
    assert str(rows[2000]["amount"]) == "100.00" and str(rows[2]["amount"]) == "20.00"


def test_cross_partition_upsert(warehouse):
    ns = {"pa": pa, "cat": ps.Catalog(warehouse)}
    v = run_block(block('by_day = cat.create_table("shop.orders_by_day"'), ns)
    assert v["_checked"] == ["by_day.to_arrow().to_pylist()"]


def test_file_indexes(warehouse):
    # the block creates the table and reads; rows written first so the reads have something to find
    ns = {"pa": pa, "cat": ps.Catalog(warehouse)}
    src = block("users_schema = pa.schema(")
    create, reads = src.split("users.to_arrow(", 1)
    run_block(create, ns)
    users = ns["users"]
    emails = ["ada@example.com", "b@example.com", "c@example.com", "d@example.com"]
    for i, (email, country) in enumerate(zip(emails, ["IS", "DE", "FO", "DE"])):   # a file each
        users.write_arrow(pa.table({"id": [i + 1], "email": [email], "country": [country],
                                    "signup_date": [datetime.date(2025, 1, 1 + i)]}, schema=ns["users_schema"]))
    v = run_block("users.to_arrow(" + reads, ns)
    assert v['users.to_arrow(filter=[("email", "=", "ada@example.com")])']["id"].to_pylist() == [1]
    assert sorted(v['users.to_arrow(filter=[("country", "in", ["IS", "FO"])])']["id"].to_pylist()) == [1, 3]
    snapshot = users.latest_snapshot()
    planned = lambda flt: sum(len(s.files) for s in users.plan(snapshot, flt))  # noqa: E731
    assert planned([("email", "=", "ada@example.com")]) < planned(None)   # "reads only the files that may hold it"
    assert planned([("country", "in", ["IS", "FO"])]) < planned(None)


def test_parquet_writer_v2(warehouse):
    ns, _ = usage_namespace(warehouse)
    run_block(block('fast = cat.create_table("db.events_v2"'), ns)
    fast = ns["fast"]
    fast.write_arrow(pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"], "amount": [1, 2, 3],
                               "dt": ["x", "y", "z"]}, schema=ns["schema"]))
    files = [f for f in Path(fast.path).rglob("data-*.parquet")]
    assert files
    meta = pq.ParquetFile(files[0]).metadata
    encodings = {e for rg in range(meta.num_row_groups) for c in range(meta.num_columns)
                 for e in meta.row_group(rg).column(c).encodings}
    assert "DELTA_BINARY_PACKED" in encodings


def test_collection_aggregates(warehouse):
    ns = {"pa": pa, "cat": ps.Catalog(warehouse)}
    v = run_block(block('item = pa.struct([("sku", pa.string())'), ns)
    assert v["_checked"] == ["orders.to_arrow().to_pylist()"]


# the README names this schema in a comment
def test_partial_update_sequence_group_aggregates(warehouse):
    ns = {"pa": pa, "cat": ps.Catalog(warehouse)}
    v = run_block(block('schema = pa.schema([pa.field("id", pa.int64(), False), ("version", pa.int64()), '
                        '("amount", pa.int64()),'), ns)
    assert v["_checked"] == ["t.to_arrow().to_pylist()"]


def test_variant(warehouse):
    ns = {"pa": pa, "cat": ps.Catalog(warehouse)}
    v = run_block(block("from paimon_streaming import variant"), ns)
    assert len(v["_checked"]) == 1


# ----------------------------------------------------------------------------------------------
# Schema evolution, rescaling

# A table holding every column the block changes: name, amount, note (NOT NULL), legacy, status,
# the ROW `address` and the ARRAY<ROW> `items`; `batch` adds a column for union_by_name.
EVOLVE_PRELUDE = """
schema = pa.schema([pa.field("id", pa.int64(), False), ("name", pa.string()), ("amount", pa.decimal128(12, 2)),
                    pa.field("note", pa.string(), False), ("legacy", pa.int32()), ("status", pa.string()),
                    ("address", pa.struct([("street", pa.string())])),
                    ("items", pa.list_(pa.struct([("sku", pa.string())]))), pa.field("dt", pa.string(), False)])
orders = cat.create_table("shop.orders", schema, primary_keys=["id", "dt"], partition_keys=["dt"],
                          options={"bucket": "4"})
orders.write_arrow(pa.table({"id": [1], "name": ["Ada"], "amount": [5], "note": ["n"], "legacy": [1],
                             "status": ["x"], "address": [{"street": "Main"}], "items": [[{"sku": "A"}]],
                             "dt": ["2024-01-01"]}, schema=schema))
batch = pa.table({"id": [2], "dt": ["2024-01-02"], "channel": ["web"]})
"""


def test_schema_evolution(warehouse):
    ns = {"pa": pa, "cat": ps.Catalog(warehouse)}
    exec(EVOLVE_PRELUDE, ns)
    run_block(block("with orders.update_schema() as update:"), ns)
    cat = ns["cat"]
    assert cat.list_tables("shop") == ["orders_v1"]
    t = cat.get_table("shop.orders_v1")
    schema = t.to_arrow().schema
    assert schema.names == ["id", "coupon", "customer", "amount", "note", "status", "address", "items", "dt",
                            "channel"]
    assert schema.field("amount").type == pa.decimal128(14, 2) and schema.field("note").nullable
    assert schema.field("address").type.names == ["street", "zip"]
    assert schema.field("items").type.value_type.names == ["sku", "qty"]
    assert t.options.raw["snapshot.num-retained.min"] == "20"
    t.write_arrow(pa.table({"id": [3], "customer": ["Cy"], "note": ["m"], "dt": ["2024-01-03"]}))
    rows = {r["id"]: r for r in t.to_arrow().to_pylist()}
    assert rows[1]["customer"] == "Ada" and rows[1]["coupon"] is None    # "same field id: the data stays"
    assert rows[3]["status"] == "new"                                    # the default, written in place of nulls


def test_schema_evolution_cli(warehouse):
    ns = {"pa": pa, "cat": ps.Catalog(warehouse)}
    exec(EVOLVE_PRELUDE, ns)
    text = ("paimon-streaming alter <table> --add-column \"coupon STRING AFTER id\" --rename name=customer "
            "--type amount=\"DECIMAL(14, 2)\" --drop-not-null note --default status=\"'new'\" --drop-default col "
            "--drop legacy --set key=value --unset key [--comment text] [--json]")
    readme = README.read_text().replace("\n", " ")
    assert text.replace("\n", " ") in readme
    # `--drop-default col` and `--set key=value --unset key`: placeholders, given a column with a
    # default and a real option here
    argv = shlex.split(substitute(drop_brackets(text), [
        ("paimon-streaming ", ""), ("<table>", ns["orders"].path), ("--drop-default col", "--drop-default status"),
        ("--set key=value --unset key", "--set snapshot.num-retained.min=20 --unset snapshot.num-retained.min")]))
    code, out, err = cli(argv)
    assert code == 0, err
    t = ps.Table.open(ns["orders"].path)
    schema = t.to_arrow().schema
    assert schema.names[:3] == ["id", "coupon", "customer"] and "legacy" not in schema.names
    assert schema.field("amount").type == pa.decimal128(14, 2) and schema.field("note").nullable


RESCALE_PRELUDE = """
schema = pa.schema([pa.field("id", pa.int64(), False), ("amount", pa.int64()), pa.field("dt", pa.string(), False)])
orders = cat.create_table("shop.orders", schema, primary_keys=["id", "dt"], partition_keys=["dt"],
                          options={"bucket": "4"})
orders.write_arrow(pa.table({"id": list(range(40)), "amount": list(range(40)),
                             "dt": ["2024-04-30", "2024-05-01", "2024-05-02", "2024-06-01"] * 10}, schema=schema))
"""


def _bucket_counts(table) -> dict[str, int]:
    """Each partition's bucket count, as its live files record it."""
    return {split.partition_values[0]: split.total_buckets for split in table.plan(table.latest_snapshot(), None)}


def test_rescale(warehouse):
    ns = {"pa": pa, "cat": ps.Catalog(warehouse)}
    exec(RESCALE_PRELUDE, ns)
    before = ns["orders"].to_arrow().sort_by("id")
    src = block("orders.rescale(bucket=8)")
    first, rest = src.split("\n", 1)
    run_block(first, ns)                         # "the option, and every partition rewritten"
    orders = ns["orders"]
    assert orders.options.raw["bucket"] == "8" and orders.snapshots()[-1].commit_kind == "OVERWRITE"
    assert orders.to_arrow().sort_by("id").equals(before)
    run_block(rest, ns)                          # already at 8: nothing to do
    assert orders.to_arrow().sort_by("id").equals(before)
    # the other two lines on a table of 4 buckets: "only these partitions now", "the rest later"
    ns = {"pa": pa, "cat": ps.Catalog(warehouse + "-2")}
    exec(RESCALE_PRELUDE, ns)
    partial, later = rest.split("\n")
    run_block(partial, ns)
    assert _bucket_counts(ns["orders"]) == {"2024-04-30": 4, "2024-05-01": 8, "2024-05-02": 8, "2024-06-01": 8}
    run_block(later, ns)
    assert set(_bucket_counts(ns["orders"]).values()) == {8}
    assert ns["orders"].to_arrow().sort_by("id").equals(before)


def test_rescale_cli(warehouse):
    ns = {"pa": pa, "cat": ps.Catalog(warehouse)}
    exec(RESCALE_PRELUDE, ns)
    lines = [line.split("  #")[0].strip() for line in block("paimon-streaming rescale", "bash").split("\n")]
    # "[--where dt '>=' 2024-05-01] [--json]": the optional parts given
    argv = shlex.split(drop_brackets(substitute(lines[0], wh_subst(warehouse))))[1:]
    code, out, err = cli(argv)
    assert code == 0, err
    report = json.loads(out)
    t = ps.Table.open(ns["orders"].path)
    # only the selected partitions were rewritten into 8 buckets
    assert t.options.raw["bucket"] == "8"
    assert _bucket_counts(t) == {"2024-04-30": 4, "2024-05-01": 8, "2024-05-02": 8, "2024-06-01": 8}
    code, out, err = cli(shlex.split(substitute(lines[1], wh_subst(warehouse)))[1:])
    assert code == 0, err
    assert "2024-04-30" in out                   # "the partitions still at another count"
    assert report


# ----------------------------------------------------------------------------------------------
# Incremental queries, append compaction, row tracking, deletion vectors

KV_SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.int64())])


def test_changes_between(warehouse):
    cat = ps.Catalog(warehouse)
    t = cat.create_table("shop.orders", KV_SCHEMA, primary_keys=["id"], options={"bucket": "2"})
    start = datetime.datetime.now()
    for i in range(20):                          # 20 snapshots at least, tags at 12 and at the end
        t.write_arrow(pa.table({"id": [i % 5, 100 + i], "v": [i, i]}, schema=KV_SCHEMA))
        if t.snapshots()[-1].id >= 12 and "2024-05-01" not in t.tags():
            t.create_tag("2024-05-01")
    t.create_tag("2024-05-02")
    end = datetime.datetime.now() + datetime.timedelta(seconds=1)
    # the README's dates name a day of commits; here the commits happened between start and end
    v = run_block(block("t.changes_between(12, 20)"), {"t": t, "datetime": datetime.datetime},
                  [("datetime(2024, 5, 1)", f"datetime.fromisoformat('{start.isoformat()}')"),
                   ("datetime(2024, 5, 2)", f"datetime.fromisoformat('{end.isoformat()}')")])
    assert v["t.changes_between(12, 20)"].num_rows > 0
    diff = v['t.changes_between("2024-05-01", "2024-05-02", row_kind_column="_kind")']
    assert diff.column_names == ["id", "v", "_kind"] and set(diff["_kind"].to_pylist()) <= {"+I", "-U", "+U", "-D"}
    delta = next(val for key, val in v.items() if key.startswith("t.changes_between(datetime"))
    assert delta.num_rows == 40                  # every row written, unmerged ("rows come as written")


def test_append_compaction(warehouse):
    cat = ps.Catalog(warehouse)
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string())])
    ns = {"cat": cat, "schema": schema, "batch": pa.table({"id": [1, 2], "dt": ["a", "a"]}, schema=schema)}
    src = block('events = cat.create_table("shop.events", schema, partition_keys=["dt"])')
    create_write, compacts = src.split("events.compact()", 1)
    run_block(create_write, ns)
    events = ns["events"]
    for _ in range(4):                           # "every fifth small file of a bucket: + COMPACT merging them"
        events.write_arrow(ns["batch"])
    assert kinds(events) == ["APPEND"] * 4 + ["APPEND", "COMPACT"]
    run_block("events.compact()" + compacts, ns)
    assert events.to_arrow().num_rows == 10


def test_row_tracking(warehouse):
    cat = ps.Catalog(warehouse)
    schema = pa.schema([("id", pa.int64()), ("embedding", pa.float64())])
    ns = {"cat": cat, "schema": schema, "batch": pa.table({"id": [1, 2, 3], "embedding": [0.5, 1.5, 2.5]})}
    src = block('logs = cat.create_table("shop.logs"')
    core = "\n".join(line for line in src.split("\n") if not line.startswith("spark."))   # Spark: test_spark_*
    v = run_block(core, ns)
    ids = v['logs.to_arrow(columns=["id", "_ROW_ID", "_SEQUENCE_NUMBER"])']
    assert ids.column_names == ["id", "_ROW_ID", "_SEQUENCE_NUMBER"]
    assert ids["_ROW_ID"].to_pylist() == [0, 1, 2] and ids["_SEQUENCE_NUMBER"].to_pylist() == [1, 1, 1]
    # the filter the prose gives
    assert ns["logs"].to_arrow(filter=[("_ROW_ID", ">=", 1), ("_ROW_ID", "<", 2)])["id"].to_pylist() == [2]
    run_block(block('features = cat.create_table("ml.features"'), ns)
    assert sorted(ns["features"].to_arrow()["id"].to_pylist()) == [1, 2, 3]


def test_deletion_vectors(warehouse):
    ns, _ = usage_namespace(warehouse)
    ns["cat"].drop_table("shop.orders")
    ns["schema"] = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string()), ("op", pa.string())])
    ns["batch"] = pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"], "op": ["+I"] * 3}, schema=ns["schema"])
    ns["changes"] = pa.table({"id": [1, 2], "v": ["a2", None], "op": ["+U", "-D"]}, schema=ns["schema"])
    src = block('t = cat.create_table("shop.orders", schema, primary_keys=["id"],\n'
                '                     options={"bucket": "4", "deletion-vectors.enabled": "true"})')
    run_block(src, ns)
    t = ns["t"]
    assert kinds(t)[:2] == ["APPEND", "COMPACT"]          # "APPEND (level-0 files) + COMPACT (lookup + DVs)"
    assert {r["id"]: r["v"] for r in t.to_arrow().to_pylist()} == {1: "a2", 3: "c"}


def test_full_compaction_every_n_commits(warehouse):
    cat = ps.Catalog(warehouse)
    schema = KV_SCHEMA
    ns = {"cat": cat, "schema": schema, "batch": pa.table({"id": [1, 2], "v": [1, 2]}, schema=schema),
          "batch_id": 0}
    src = block('t = cat.create_table("shop.orders", schema, primary_keys=["id"],\n'
                '                     options={"bucket": "4", "deletion-vectors.enabled": "true",\n'
                '                              "full-compaction.delta-commits"')
    run_block(src, ns)                           # batch id 0: compacts fully
    t = ns["t"]
    for batch_id in (1, 2):
        t.write_arrow(pa.table({"id": [1, 3], "v": [batch_id, batch_id]}, schema=schema),
                      commit_user="orders-job", commit_identifier=batch_id)
    t.write_arrow(pa.table({"id": [3], "v": [100]}, schema=schema), commit_user="orders-job", commit_identifier=100)
    assert {r["id"]: r["v"] for r in t.to_arrow().to_pylist()} == {1: 2, 2: 2, 3: 100}
    levels: dict[int, list[int]] = {}
    for f in system_table(t, "files").to_pylist():
        levels.setdefault(f["bucket"], []).append(f["level"])
    # each bucket the batches since id 0 touched: one file, at the top level, without vectors
    assert levels and all(ls == [5] for ls in levels.values()), levels


# ----------------------------------------------------------------------------------------------
# Tags, rollback, expiration; partition expiration; branches; external paths

def test_tags_rollback_expiration(warehouse):
    cat = ps.Catalog(warehouse)
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.int64()), pa.field("dt", pa.string(), False)])
    t = cat.create_table("shop.orders", schema, primary_keys=["id", "dt"], partition_keys=["dt"],
                         options={"bucket": "1"})
    old = (datetime.date.today() - datetime.timedelta(days=30)).isoformat()
    for i in range(6):
        t.write_arrow(pa.table({"id": [i], "v": [i], "dt": [old if i == 0 else datetime.date.today().isoformat()]},
                               schema=schema))
    v = run_block(block('t.create_tag("2024-q1")'), {"t": t})   # in order: the rollback before the tag's deletion
    assert v['t.to_arrow(tag="2024-q1")'].num_rows == 6
    assert v["t.tags()"] == ["2024-q1"] and t.tags() == []
    assert t.snapshots()[-1].commit_kind == "OVERWRITE"                           # the partitions' drop
    assert sorted(t.to_arrow()["dt"].to_pylist()) == [datetime.date.today().isoformat()] * 5   # 30 days > 7 d


def test_partition_expiration(warehouse):
    cat = ps.Catalog(warehouse)
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string())])
    ns = {"cat": cat, "schema": schema}
    run_block(block('cat.create_table("db.clicks"'), ns)
    clicks = cat.get_table("db.clicks")
    today = datetime.date.today().strftime("%Y%m%d")
    clicks.write_arrow(pa.table({"id": [1, 2], "dt": ["20200101", today]}, schema=schema))
    # the writer checks within `partition.expiration-check-interval` (1 h) of its first commit, at
    # a random phase as Java's: not necessarily at this commit
    clicks.expire_partitions()
    # "drops, by one OVERWRITE commit, every partition whose time is older"
    assert clicks.to_arrow()["dt"].to_pylist() == [today]
    assert "OVERWRITE" in kinds(clicks)
    # without waiting for the check: `expire_partitions()` ("default: the option") drops them now


def test_branches(warehouse):
    ns, _ = usage_namespace(warehouse)
    orders = ns["orders"]
    main_rows = orders.to_arrow().sort_by("id")
    ns["corrections"] = pa.table({"id": [1], "name": ["Ada L."], "amount": [6], "dt": ["2023-12-31"]},
                                 schema=ns["schema"])
    v = run_block(block('orders.create_tag("before-backfill")'), ns)   # the branch read before its deletion
    assert v['cat.get_table("shop.orders$branch_backfill")'].branch == "backfill"
    assert v["orders.branches()"] == ["dev"]     # the prelude's branch
    staged, main_before = v["dev.to_arrow()"], v["orders.to_arrow()"]
    assert main_before.sort_by("id").equals(main_rows)                       # "main is untouched"
    assert staged.num_rows == 5 and "Ada L." in staged["name"].to_pylist()   # "the staged state"
    assert orders.to_arrow().filter(pa.compute.field("id") == 1)["name"].to_pylist() == ["Ada L."]


def test_external_paths(warehouse, tmp_path):
    cat = ps.Catalog(warehouse)
    schema = KV_SCHEMA
    cold_a, cold_b = tmp_path / "cold-a", tmp_path / "cold-b"
    # the README's S3 roots; local roots here (`file:///...`, which the prose allows)
    run_block(block('cat.create_table("db.events", schema, primary_keys=["id"], options={'),
              {"cat": cat, "schema": schema},
              [("s3://cold-a/lake,s3://cold-b/lake", f"file://{cold_a}/lake,file://{cold_b}/lake")])
    t = cat.get_table("db.events")
    t.write_arrow(pa.table({"id": list(range(20)), "v": list(range(20))}, schema=schema))   # 4 buckets' files
    assert t.to_arrow().num_rows == 20
    in_a = list((cold_a / "lake").rglob("data-*"))
    in_b = list((cold_b / "lake").rglob("data-*"))
    assert in_a and in_b                              # "round-robin": the roots in turn
    assert not list(Path(t.path).rglob("data-*.parquet"))


# ----------------------------------------------------------------------------------------------
# The command line

CLI_PRELUDE_SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("customer", pa.string()), ("status", pa.string()),
                                ("amount", pa.decimal128(12, 2)), ("note", pa.string()),
                                pa.field("dt", pa.string(), False)])


def _cli_line(lines: list[str], command: str) -> str:
    found = [line for line in lines if line.startswith(f"paimon-streaming {command} ")]
    assert len(found) == 1, command
    return found[0].split("   #")[0].strip()


def _argv(line: str, subst: list[tuple[str, str]] = ()) -> list[str]:
    """The line's arguments with the substitutions made and the optional parts' brackets dropped
    (every optional part given)."""
    return shlex.split(drop_brackets(substitute(line, list(subst))))[1:]


def drop_brackets(text: str) -> str:
    """The text without the brackets that mark optional parts (those outside quotes)."""
    out, quote = [], None
    for ch in text:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "[]":
            continue
        out.append(ch)
    return "".join(out)


def _ok(argv: list[str]):
    code, out, err = cli(argv)
    assert code == 0, (argv, err)
    return json.loads(out) if "--json" in argv else out


def test_command_line_block(warehouse):
    cat = ps.Catalog(warehouse)
    orders = cat.create_table("shop.orders", CLI_PRELUDE_SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                              options={"bucket": "4"})
    orders.write_arrow(pa.table({"id": [1, 2, 7, 8], "customer": ["c-1", "c-17", "c-2", "c-3"],
                                 "status": ["new"] * 4, "amount": [1, 2, 3, 4], "note": [None] * 4,
                                 "dt": ["2023-12-31", "2024-06-01", "2024-06-01", "2024-07-01"]},
                                schema=CLI_PRELUDE_SCHEMA))
    lines = substitute(block("paimon-streaming demo [--warehouse DIR]", "bash"), wh_subst(warehouse)).split("\n")
    path = orders.path
    assert all(path in line for line in lines[2:])

    assert _ok(_argv(_cli_line(lines, "info")))["primary_keys"] == ["id", "dt"]
    assert [s["kind"] for s in _ok(_argv(_cli_line(lines, "snapshots")))] == ["APPEND"]
    _ok(_argv(_cli_line(lines, "alter"), [("--rename a=b", "--rename note=remark"),
                                          ("--set key=value", "--set snapshot.num-retained.min=20")]))
    assert ps.Table.open(path).to_arrow().schema.names[:2] == ["id", "coupon"]
    _ok(_argv(_cli_line(lines, "compact")))
    # `--dry-run` among the optional parts: reports, changes nothing; then without it
    rescale = _cli_line(lines, "rescale")
    _ok(_argv(rescale, [("[--bucket N]", "--bucket 8")]))
    assert ps.Table.open(path).options.raw["bucket"] == "4"
    _ok(_argv(rescale, [("[--bucket N]", "--bucket 8"), ("[--dry-run] ", "")]))
    assert ps.Table.open(path).options.raw["bucket"] == "8"
    _ok(["rescale", path])                      # the partitions --where left out, before writing there
    delete = _cli_line(lines, "delete")
    assert ps.Table.open(path).to_arrow().num_rows == 4
    _ok(_argv(delete))
    assert ps.Table.open(path).to_arrow().num_rows == 4
    _ok(_argv(delete, [("[--dry-run] ", "")]))
    # the terms are ANDed: dt < 2024-01-01 AND customer in ["c-17"] matches no row
    assert ps.Table.open(path).to_arrow().num_rows == 4
    _ok(_argv(delete, [(" [--where customer in '[\"c-17\"]']", ""), ("[--dry-run] ", "")]))
    assert sorted(ps.Table.open(path).to_arrow()["id"].to_pylist()) == [2, 7, 8]
    update = _cli_line(lines, "update")
    _ok(_argv(update, [("[--dry-run] ", "")]))
    row7 = [r for r in ps.Table.open(path).to_arrow().to_pylist() if r["id"] == 7][0]
    assert row7["status"] == "cancelled" and row7["amount"] is None
    _ok(_argv(_cli_line(lines, "check"), [("[--repair] ", "")]))
    _ok(_argv(_cli_line(lines, "check")))
    tag = _cli_line(lines, "tag")
    latest = ps.Table.open(path).snapshots()[-1].id
    _ok(_argv(tag, [("list|create|delete", "create"), ("[NAME]", "t1"), ("ID", str(latest))]))
    listed = _ok(_argv(tag, [("list|create|delete", "list"), (' [NAME] [--snapshot ID] [--time-retained "7 d"]', "")]))
    assert "t1" in json.dumps(listed)
    branch = _cli_line(lines, "branch")
    _ok(_argv(branch, [("list|create|delete|fast-forward", "create"), ("[NAME]", "b1"), ("TAG", "t1"),
                       ("[--force] ", "")]))
    _ok(_argv(branch, [("list|create|delete|fast-forward", "fast-forward"), ("[NAME]", "b1"),
                       ("[--tag TAG] ", "")]))
    _ok(_argv(branch, [("list|create|delete|fast-forward", "delete"), ("[NAME]", "b1"), ("[--tag TAG] ", ""),
                       ("[--force] ", "")]))
    rollback = _cli_line(lines, "rollback")
    _ok(_argv(rollback, [("SNAPSHOT_ID|TAG", "t1")]))              # "--tag": the name is a tag's
    _ok(_argv(_cli_line(lines, "tag"), [("list|create|delete", "delete"), ("[NAME]", "t1"),
                                        (" [--snapshot ID] [--time-retained \"7 d\"]", "")]))
    _ok(_argv(rollback, [("SNAPSHOT_ID|TAG", "1"), ("[--tag] ", "")]))
    assert [s.id for s in ps.Table.open(path).snapshots()] == [1]
    _ok(_argv(_cli_line(lines, "expire"), [("--retain-max N", "--retain-max 5"), ("--retain-min N", "--retain-min 1"),
                                           ("--max-deletes N", "--max-deletes 10")]))
    _ok(_argv(_cli_line(lines, "remove-orphans"), [("TIME", "'2024-05-06 00:00'")]))
    out = _ok(_argv(_cli_line(lines, "expire-partitions")))
    assert out is not None


class _SparkWouldStart(Exception):
    pass


def _ingest_until_spark(monkeypatch, argv: list[str]):
    """Runs `ingest` as the command does, up to where it would start Spark: the arguments parse
    and its configuration validates. Returns the error's message when the command refuses them."""
    from paimon_streaming.sinks import ingest_command

    def no_spark(*args, **kwargs):
        raise _SparkWouldStart()
    monkeypatch.setattr(ingest_command, "spark_session", no_spark)
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except _SparkWouldStart:
        return None
    except Exception as exc:                     # noqa: BLE001 - the refusal is the result
        return f"{type(exc).__name__}: {exc}"
    raise AssertionError(f"{argv}: returned without starting Spark")


def _commands(bash: str) -> list[str]:
    """The block's commands, continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", "\n".join(line.split("  #")[0] for line in bash.split("\n")
                                               if not line.lstrip().startswith("#")))
    return [c.strip() for c in joined.split("\n") if c.strip()]


def _optional_groups(command: str) -> tuple[str, list[str]]:
    """The command without its bracketed parts, and each bracketed part's alternatives (`a | b`,
    `--format x|y`) as separate argument texts."""
    groups = re.findall(r"\[([^\[\]]*(?:'[^']*'[^\[\]]*)*)\]", command)
    base = command
    for g in groups:
        base = base.replace(f"[{g}]", "")
    alternatives = []
    for g in groups:
        for alt in g.split(" | "):
            m = re.fullmatch(r"(--[\w-]+) ([\w-]+(?:\|[\w-]+)+)", alt.strip())
            alternatives += [f"{m.group(1)} {v}" for v in m.group(2).split("|")] if m else [alt.strip()]
    return base, alternatives


def _with_companions(alt: str, avro_schema: str) -> list[str]:
    """An optional argument with those it needs beside it (checked before Spark starts): an Avro
    format its writer schema, a source-table filter a change-event format."""
    needs = {"--format avro": ["--avro-schema", avro_schema], "--format debezium-avro": [
        "--schema-registry", "http://localhost:1"], "--source-table": ["--format", "debezium-json"]}
    extra = next((v for k, v in needs.items() if alt == k or alt.startswith(k + " ")), [])
    return shlex.split(alt) + extra


def test_ingest_block_options(warehouse, monkeypatch, tmp_path):
    bash = block('pip install ".[spark,kafka]"', "bash")
    commands = [c for c in _commands(bash) if c.startswith("paimon-streaming ingest")]
    assert len(commands) == 5
    (tmp_path / "orders.avsc").write_text('{"type": "record", "name": "o", "fields": [{"name": "id", "type": "long"}]}')
    refused = {}
    for command in commands:
        command = command.replace("/data/warehouse", warehouse).replace("orders.avsc", str(tmp_path / "orders.avsc"))
        base, alternatives = _optional_groups(command)
        assert _ingest_until_spark(monkeypatch, shlex.split(base)[1:]) is None, base
        for alt in alternatives:
            error = _ingest_until_spark(monkeypatch, shlex.split(base)[1:] +
                                        _with_companions(alt, str(tmp_path / "orders.avsc")))
            if error:
                refused[alt] = error
    assert refused == {}, refused


def test_command_line_block_spark_commands(warehouse, monkeypatch, tmp_path):
    lines = substitute(block("paimon-streaming demo [--warehouse DIR]", "bash"), wh_subst(warehouse)).split("\n")
    demo = build_parser().parse_args(_argv(lines[0], [("DIR", warehouse), ("--batches N", "--batches 3"),
                                                      ("--rows N", "--rows 100"), ("--keys N", "--keys 50"),
                                                      ("SECONDS", "0.5"), ("--seed N", "--seed 7")]))
    assert (demo.batches, demo.rows, demo.keys, demo.interval, demo.seed) == (3, 100, 50, 0.5, 7)
    ingest = _cli_line(lines, "ingest")
    base, alternatives = _optional_groups(substitute(ingest, [
        ("H:P", "localhost:9092"), ("--topic T", "--topic orders"), ("--warehouse W", f"--warehouse {warehouse}"),
        ("(--table db.t | --database db)", "--table shop.orders")]))
    assert _ingest_until_spark(monkeypatch, shlex.split(base)[1:]) is None
    placeholders = {"F": "orders.avsc", "K ...": "id", "P ...": "dt", "N": "4", "DIR": "/tmp/ckpt",
                    "REGEX": "'shop\\.orders'"}
    for alt in alternatives:
        for k, val in placeholders.items():
            alt = re.sub(rf"(?<=\s){re.escape(k)}$", val, alt)
        if alt.startswith("--format") and "<" in alt:
            continue                             # "<change events>": the formats of the Kafka ingestion block
        (tmp_path / "orders.avsc").write_text('{"type": "record", "name": "o", "fields": [{"name": "id", "type": "long"}]}')
        assert _ingest_until_spark(monkeypatch, shlex.split(base)[1:] +
                                   _with_companions(alt, str(tmp_path / "orders.avsc"))) is None, alt


def test_set_up_commands():
    demo, suite = block('python3 -m venv .venv', "bash"), block("bash tests/run.sh", "bash")
    assert (ROOT / "tests" / "run.sh").exists() and (ROOT / ".ci" / "user_install.sh").exists()
    assert '".[spark]"' in demo and "paimon-streaming demo" in demo
    assert 'spark' in (ROOT / "pyproject.toml").read_text()
    # "`--batches`, `--rows`, `--keys`, `--interval` change it"
    args = build_parser().parse_args(["demo", "--batches", "1", "--rows", "2", "--keys", "3", "--interval", "0"])
    assert (args.batches, args.rows, args.keys, args.interval) == (1, 2, 3, 0)
    assert suite == "bash tests/run.sh"


def test_benchmark_commands_exist():
    """Each benchmark command names a script that exists and flags it takes (their runs are long:
    bench/README.md)."""
    for command in _commands(block('.venv/bin/pip install -e ".[bench]"', "bash"))[1:]:
        argv = shlex.split(drop_brackets(command.split("#")[0]))
        script = ROOT / argv[1]
        assert script.exists(), argv[1]
        source = script.read_text()
        for flag in (a for a in argv[2:] if a.startswith("--")):
            assert f'"{flag}"' in source or f"'{flag}'" in source, f"{argv[1]} has no {flag}"
    assert "bench" in (ROOT / "pyproject.toml").read_text()


def test_architecture_names_existing_files():
    arch = block("paimon_streaming/        the table core", "")
    core, rest = arch.split("\nsinks/ sources/", 1)
    for name in set(re.findall(r"\b([a-z_0-9]+\.py)\b", core)):
        assert (ROOT / "paimon_streaming" / name).exists() or (ROOT / "paimon_streaming" / "cli" / name).exists(), name
    for name in set(re.findall(r"^  ([a-z_]+)/", core, re.M)):
        assert (ROOT / "paimon_streaming" / name).is_dir(), name
    spark_side = rest.split("\ntests/ ")[0]
    for name in set(re.findall(r"\b([a-z_0-9]+\.py)\b", spark_side)):
        assert (ROOT / "sinks" / name).exists() or (ROOT / "sources" / name).exists(), name
    from paimon_streaming.system_tables import SYSTEM_TABLES
    line = next(line for line in core.split("\n") if line.lstrip().startswith("system_tables.py"))
    assert set(re.findall(r"\$(\w+)", line)) == set(SYSTEM_TABLES)


def test_paths_and_modules_the_readme_names():
    text = README.read_text()
    named = r"(?<![\w./])((?:tests|bench|paimon_streaming|sinks|sources|docker|\.ci)/[\w./-]*\w)"
    for path in set(re.findall(named, text)):
        assert (ROOT / path).exists(), f"README names {path}, which does not exist"
    import importlib
    for dotted in set(re.findall(r"`(paimon_streaming(?:\.\w+)+)`(?! logger)", text)):
        parts = dotted.split(".")
        for i in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:i]))
            except ImportError:
                continue
            for attr in parts[i:]:
                obj = getattr(obj, attr)
            break


# ----------------------------------------------------------------------------------------------
# Spark (the shared session): the sink, the "paimon" data source's writes and reads

def _spark_tables(warehouse: str, name: str = "shop.incoming"):
    cat = ps.Catalog(warehouse)
    schema = pa.schema([pa.field("id", pa.int64(), False), ("amount", pa.decimal128(12, 2)), ("name", pa.string())])
    source = cat.create_table(name, schema, primary_keys=["id"], options={"bucket": "2"})
    source.write_arrow(pa.table({"id": [1, 2, 3], "amount": [1, 2, 3], "name": ["a", "b", "c"]}, schema=schema))
    return cat, schema, source


def _json_stream(spark, directory: Path, rows: list[dict], ddl: str):
    """`events` / `stream` of the README: a stream of the rows to write (Spark's file source,
    cheaper to start than a Python data source's stream)."""
    directory.mkdir()
    (directory / "part-0.json").write_text("\n".join(json.dumps(r) for r in rows))
    return spark.readStream.format("json").schema(ddl).load(str(directory))


def test_spark_sink_and_data_source(spark, warehouse, tmp_path):
    path = f"{warehouse}/shop.db/orders"
    events = _json_stream(spark, tmp_path / "events", [{"id": i, "name": f"n{i}"} for i in (1, 2, 3)],
                          "id long, name string")
    ns = {"events": events}
    run_block(block("from paimon_streaming.sinks import paimon_sink"), ns,
              wh_subst(warehouse) + [("/data/checkpoints/orders", str(tmp_path / "ckpt-sink"))])
    ns["query"].processAllAvailable()
    ns["query"].stop()
    # foreachBatch's table is created by the first batch, keyed as nothing says: an append table
    assert sorted(ps.Table.open(path).to_arrow()["id"].to_pylist()) == [1, 2, 3]

    path2 = f"{warehouse}/shop.db/orders2"
    df = spark.createDataFrame([(1, "a", "2024-01-01"), (2, "b", "2024-01-02")], "id long, name string, dt string")
    stream = _json_stream(spark, tmp_path / "stream", [{"id": 3, "name": "c", "dt": "2024-01-03"}],
                          "id long, name string, dt string")
    ns = {"spark": spark, "df": df, "path": path2, "ckpt": str(tmp_path / "ckpt-ds"), "stream": stream}
    run_block(block('import paimon_streaming as ps\nps.register(spark)\n\ndf.write.format("paimon")'), ns)
    for q in spark.streams.active:
        q.processAllAvailable()
        q.stop()
    t = ps.Table.open(path2)
    assert t.primary_keys == ["id"] and t.options.raw["bucket"] == "4"
    assert sorted(t.to_arrow()["id"].to_pylist()) == [1, 2, 3]   # the overwrites: 1, 2; the stream: 3
    assert "OVERWRITE" in kinds(t)
    assert [s.commit_user for s in t.snapshots()][-1] == "orders-ingest"


def test_spark_reads(spark, warehouse, tmp_path):
    cat, schema, orders = _spark_tables(warehouse, "shop.orders")
    for i in range(4):
        orders.write_arrow(pa.table({"id": [i], "amount": [i * 10], "name": [f"n{i}"]}, schema=schema))
    logs = cat.create_table("shop.logs", pa.schema([("id", pa.int64())]), options={"row-tracking.enabled": "true"})
    logs.write_arrow(pa.table({"id": [1, 2]}))
    seen = []
    ns = {"spark": spark, "path": orders.path, "ckpt": str(tmp_path / "ckpt"),
          "apply": lambda df, batch_id: seen.extend(r.asDict() for r in df.collect())}
    src = block('import paimon_streaming as ps\nps.register(spark)          # or register(spark, filter_pushdown=True)')
    # placeholders: the README's warehouse `/wh`, snapshot range "12,20" of a longer history, and
    # `$row_tracking` of a row-tracking table (the logs table)
    v = run_block(src, ns, [("/wh/shop.db/orders", orders.path), ('"warehouse", "/wh"', f'"warehouse", "{warehouse}"'),
                            ('"12,20"', '"1,3"'), ('path + "$row_tracking"', f'"{logs.path}" + "$row_tracking"')])
    query = [q for q in spark.streams.active][0]
    query.processAllAvailable()
    query.stop()
    reads = {k: val for k, val in v.items() if k.startswith("spark.read")}
    assert len(reads) == 7
    counts = {k: val.count() for k, val in reads.items()}
    assert counts['spark.read.format("paimon").load(path + "$snapshots")'] == len(orders.snapshots())
    projected = reads['spark.read.format("paimon").schema("id long, amount decimal(12,2)").load(path)']
    assert projected.columns == ["id", "amount"]
    tracked = reads[f'spark.read.format("paimon").load("{logs.path}" + "$row_tracking")']
    assert tracked.columns == ["id", "_ROW_ID", "_SEQUENCE_NUMBER"]
    assert counts['spark.read.format("paimon").option("snapshot-id", 3).load(path)'] == 4
    assert sorted(r["id"] for r in seen) == [0, 1, 2, 3] and {r["_kind"] for r in seen} == {"+I"}


# The read options table of "Spark: reading with the "paimon" data source": what each option
# documented there sets in the read's plan (ReadSpec), so that none is silently ignored. The
# stream-only options (consumer-id, streaming-read-overwrite, scan.mode of streams) are
# taken by the streaming scan (test_spark_source*.py runs them).
READ_OPTION_EFFECTS = {
    "snapshot-id": ("2", "snapshot_id", 2), "scan.snapshot-id": ("2", "snapshot_id", 2),
    "tag": ("a", "tag", "a"), "scan.tag-name": ("a", "tag", "a"),
    "timestamp-millis": ("1", "timestamp_millis", 1), "scan.timestamp-millis": ("1", "timestamp_millis", 1),
    "scan.timestamp": ("2024-05-01 12:00:00", "timestamp_millis", None), "scan.version": ("a", "tag", "a"),
    "scan.mode": ("latest", "scan_mode", "latest"),
    "incremental-between": ("1,3", "incremental", None), "incremental-between-timestamp": ("1,2", "incremental", None),
    "incremental-to-auto-tag": ("2024-05-01", "incremental", None),
    "rowKindColumn": ("_k", "row_kind_column", "_k"),
    "max-files-per-trigger": ("3", "limits", None), "max-snapshots-per-trigger": ("3", "limits", None),
    "max-rows-per-trigger": ("3", "limits", None), "max-bytes-per-trigger": ("3 mb", "limits", None),
    "read.stream.maxFilesPerTrigger": ("3", "limits", None),
    "source.split.target-size": ("1 mb", "split_target_size", 1 << 20),
    "source.split.open-file-cost": ("1 mb", "split_open_file_cost", 1 << 20),
    "branch": ("b", "branch", "b"),
}
# options of the table that need another to mean something, or belong to the stream
READ_OPTIONS_WITH_OTHERS = {"incremental-between-scan-mode", "incremental-between-tag-to-snapshot",
                            "read.stream.minRowsPerTrigger", "read.stream.maxTriggerDelayMs", "path", "table",
                            "warehouse", "consumer-id", "consumer.ignore-progress", "streaming-read-overwrite",
                            "streaming-read-append-overwrite", "compacted-full", "full-compaction.delta-commits", "load(...)", "$<name>"}


def test_read_options_table(warehouse):
    from paimon_streaming.sources.options import ReadSpec
    text = README.read_text()
    table = text[text.index("| option | applies to | meaning |"):]
    table = table[:table.index("\n\n")]
    documented = {name for row in table.split("\n")[2:]
                  for name in re.findall(r"`([^`\s]+)`", row.split(" | ")[0].lstrip("| "))}
    documented = {n for n in documented if not n.startswith(("load(", "$", ".../"))
                  and n not in ("auto", "delta", "changelog", "diff", "start,end")}   # values, not options
    assert documented - READ_OPTIONS_WITH_OTHERS == set(READ_OPTION_EFFECTS), \
        "README's read options table changed: say here what each new option does"
    t = ps.Catalog(warehouse).create_table("db.t", KV_SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    for i in range(3):
        t.write_arrow(pa.table({"id": [i], "v": [i]}, schema=KV_SCHEMA))
    t.create_tag("a")
    t.create_branch("b")
    plain = ReadSpec.parse({"path": t.path})
    for option, (value, field_name, expected) in READ_OPTION_EFFECTS.items():
        spec = ReadSpec.parse({"path": t.path, option: value})
        got = getattr(spec, field_name)
        assert got != getattr(plain, field_name), f"read option {option} changes nothing"
        if expected is not None:
            assert got == expected, option
    paired = ReadSpec.parse({"path": t.path, "read.stream.minRowsPerTrigger": "10",
                             "read.stream.maxTriggerDelayMs": "100"})
    assert paired.min_rows == (10, 100)
    diff = ReadSpec.parse({"path": t.path, "incremental-between": "1,3", "incremental-between-scan-mode": "diff",
                           "incremental-between-tag-to-snapshot": "true"})
    assert diff.incremental.mode == "diff" and diff.incremental.tag_to_snapshot
